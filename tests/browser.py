"""Open Snakemake's report.html in headless Chromium (Debian's ``chromium-headless-shell`` or
``chromium``) and drive the report's own app through the DevTools protocol over a pipe
(``--remote-debugging-pipe``: requests on fd 3, replies on fd 4, each a JSON text ended by NUL;
no websocket library): every image result shown the way its button shows it
(``app.setView({content: "img", contentPath: data_uri})``) and read back from the page's ``<img>``
(loaded, its natural size), and the HTML results' text parsed by the browser's DOMParser (their
tables counted); and what its first screen shows, in a window of a given size
(``first_screen``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")

CHECK = """(async () => {
  const pause = () => new Promise(r => setTimeout(r, 20));
  const out = {images: {}, html: {}, app: typeof app !== "undefined"};
  for (const [path, entry] of Object.entries(results)) {
    if (entry.mime_type.startsWith("image/")) {
      app.setView({content: "img", contentPath: entry.data_uri, resultPath: path});
      let img = null;
      for (let i = 0; i < 250; i++) {
        await pause();
        img = [...document.querySelectorAll("img")].find(
          x => x.getAttribute("src") === entry.data_uri);
        if (img && img.complete) break;
      }
      out.images[path] = img ? [img.complete, img.naturalWidth, img.naturalHeight] : null;
    } else if (entry.mime_type === "text/html") {
      const text = await (await fetch(entry.data_uri)).text();
      const doc = new DOMParser().parseFromString(text, "text/html");
      const tables = [...doc.querySelectorAll("table")].map(
        t => [t.rows.length, t.rows.length ? t.rows[0].textContent.trim().slice(0, 200) : ""]);
      const images = [];
      for (const src of [...doc.querySelectorAll("img")].map(x => x.getAttribute("src"))) {
        const img = new Image();
        await new Promise(r => { img.onload = r; img.onerror = r; img.src = src; });
        images.push([img.complete, img.naturalWidth, img.naturalHeight]);
      }
      out.html[path] = {tables, images};
    }
  }
  return JSON.stringify(out);
})()"""


FIRST_SCREEN = """(async () => {
  const pause = () => new Promise(r => setTimeout(r, 50));
  let front = null;
  for (let i = 0; i < 200 && !front; i++) {
    await pause();
    front = document.getElementById("topotrain-front");
  }
  const box = el => {
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const shown = el => !!el && getComputedStyle(el).display !== "none";
  const find = selector => front ? front.querySelector(selector) : null;
  const img = find("img");
  if (img && !img.complete) {
    await new Promise(r => { img.onload = r; img.onerror = r; });
  }
  const graph = document.getElementById("rulegraph");
  const out = {
    viewport: [innerWidth, innerHeight],
    front: box(front),
    heading: box(find("h2")),
    heading_text: find("h2") ? find("h2").textContent : null,
    table: box(find("table")),
    table_header: find("tr") ? find("tr").textContent.trim() : null,
    banner: find(".banner") ? find(".banner").textContent.trim() : null,
    forest: img ? [...box(img), img.naturalWidth] : null,
    graph_shown: shown(graph),
  };
  const toggle = document.getElementById("topotrain-rulegraph");
  if (toggle) {
    toggle.click();
    await pause();
  }
  out.graph_after_click = shown(graph);
  return JSON.stringify(out);
})()"""


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class Pipe:
    """The DevTools protocol over Chromium's pipe: ``call`` sends one request and returns its
    reply's result, keeping the events (``method``) seen on the way in ``events``."""

    def __init__(self, browser: str, profile: Path):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # the child's fd 3 reads requests, fd 4 writes replies
            read, write = os.dup(to_child_r), os.dup(from_child_w)  # above 4: no clash
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.proc = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            preexec_fn=fds,
            pass_fds=(3, 4, to_child_r, from_child_w),  # kept open in the child
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._id = 0
        self.events: list[dict] = []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.time() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params):
        self._id += 1
        request = {"id": self._id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self._to_child, json.dumps(request).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        deadline = time.time() + timeout
        while True:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            self.events.append(self._read(deadline))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_child)
        os.close(self._from_child)


def check_report(report: Path, browser: str, profile: Path, timeout: float = 120) -> dict:
    """{"images": {path: [complete, width, height] or None}, "html": {path: {"tables": [[rows,
    first row's text], …], "images": [[complete, width, height], …] of its own <img>}}, "app":
    whether the report's app loaded} of ``report`` as Chromium renders it."""
    return evaluate(report, browser, profile, CHECK, timeout)


def first_screen(
    report: Path, browser: str, profile: Path, size: tuple[int, int] = (1280, 800)
) -> dict:
    """What the report shows on opening, in a window of ``size`` pixels (FIRST_SCREEN): the
    boxes [left, top, right, bottom] of its first screen's fragment (``report.front``), of the
    bottom line's heading and table and of the forest (with its natural width), the banner's
    text, and whether Snakemake's rule graph shows, before and after a click on its checkbox."""
    return evaluate(report, browser, profile, FIRST_SCREEN, size=size)


def evaluate(
    report: Path,
    browser: str,
    profile: Path,
    expression: str,
    timeout: float = 120,
    size: tuple[int, int] = (1280, 800),
) -> dict:
    """The JSON that ``expression`` (a promise of a JSON text) gives on ``report`` in headless
    Chromium, its window ``size`` pixels."""
    pipe = Pipe(browser, profile)
    try:
        target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
        session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        pipe.call("Page.enable", session)
        width, height = size
        pipe.call(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        pipe.call("Page.navigate", session, url=report.resolve().as_uri())
        pipe.wait_event("Page.loadEventFired", timeout)
        result = pipe.call(
            "Runtime.evaluate",
            session,
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"the report's page threw: {result['exceptionDetails']}")
        return json.loads(result["result"]["value"])
    finally:
        pipe.close()
