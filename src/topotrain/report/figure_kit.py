"""What every figure shares: the Agg backend, the atomic save, the columns' labels, the models'
colours, and the few rules that keep a figure honest and legible — a panel with nothing to draw
says why inside itself (``say_why``), text is wrapped to the panel it belongs to (``wrap_to``),
point labels never overprint (``place_labels``), a log axis of model sizes labels only the sizes
(``size_axis``)."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import LogFormatterSciNotation  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from topotrain.io import atomic_write  # noqa: E402
from topotrain.topology import registry  # noqa: E402

LABELS = {  # the feature table's columns that are no feature (the features': topology.registry)
    "val_loss": "validation loss (nats/char)",
    "train_loss": "train loss (nats/char)",
    "lr": "learning rate (baseline)",
    "step": "training step",
    "n_params": "parameters N",
}
WHY = "why"  # the gid of a panel's reason for drawing nothing (say_why)
CHAR_EM = 0.6  # a character's mean width in DejaVu Sans, in em (for wrapping)


def model_order(df: pd.DataFrame) -> list[str]:
    """Model names ordered by parameter count."""
    return df.drop_duplicates("model").sort_values("n_params")["model"].tolist()


def model_palette(df: pd.DataFrame) -> dict[str, tuple]:
    """A fixed colour per model, ordered by size."""
    order = model_order(df)
    return dict(zip(order, cmap_colours("viridis", max(len(order), 2)), strict=False))


def cmap_colours(name: str, n: int) -> list[tuple[float, float, float]]:
    """``n`` RGB colours of matplotlib's continuous colour map ``name``, evenly inside its ends:
    seaborn's ``color_palette(name, n)`` (``tests/test_figure_png.py`` holds them equal) without
    importing seaborn (about 1.3 s, with scipy.stats, in every figure job)."""
    return list(map(tuple, plt.get_cmap(name)(np.linspace(0, 1, n + 2)[1:-1])[:, :3]))


DPI = 110  # every PNG's resolution: the default study's HTML report (zip form) within 2 MB


def save_figure(
    fig: plt.Figure,
    png: str | Path | None,
    pdf: str | Path | None = None,
    colours: int = 128,
) -> plt.Figure:
    """Save PNG (and PDF) atomically (io.atomic_write), cropped to what is drawn (bbox 'tight');
    the format follows each path's suffix; no path: nothing written. A PNG is stored in
    ``colours`` colours (``palette_png``; 128, a plot's few colours and their antialiased edges:
    a third of RGB's bytes, so the HTML report stays small; a scatter of thousands of points in
    a few flat colours takes 32). Returns the closed figure (still drawable: the tests read its
    artists)."""
    for path in filter(None, (png, pdf)):
        fmt = Path(path).suffix.lstrip(".")
        if fmt == "png":
            atomic_write(path, lambda fh: fh.write(palette_png(fig, colours)))
            continue
        atomic_write(
            path, lambda fh, fmt=fmt: fig.savefig(fh, format=fmt, dpi=DPI, bbox_inches="tight")
        )
    plt.close(fig)
    return fig


def palette_png(fig: plt.Figure, colours: int = 128) -> bytes:
    """``fig`` as PNG bytes at DPI, cropped to what is drawn, quantized to ``colours`` (Pillow's
    median cut on RGB: plots hold few colours, antialiased edges take the rest)."""
    from PIL import Image

    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI, bbox_inches="tight")
    image = Image.open(io.BytesIO(raw.getvalue())).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=colours, dither=Image.Dither.NONE).save(out, format="PNG", optimize=True)
    return out.getvalue()


def _label(feature: str) -> str:
    """A column's label: the registry's for a feature (and its SD over layers), LABELS' for the
    rest, else its name."""
    return {**registry.labels(), **LABELS}.get(feature, feature.replace("_", " "))


def wrap(text: str, width_in: float, fontsize: float) -> str:
    """``text`` wrapped to ``width_in`` inches at ``fontsize`` points (a character CHAR_EM em
    wide), each paragraph on its own."""
    chars = max(12, int(width_in * 72 / (CHAR_EM * fontsize)))
    return "\n".join(textwrap.fill(p, chars) for p in text.split("\n"))


def wrap_to(ax: plt.Axes, text: str, fontsize: float, share: float = 0.9) -> str:
    """``text`` wrapped to ``share`` of the panel's width (its position before any layout)."""
    width = ax.get_position().width * ax.get_figure().get_figwidth()
    return wrap(text, width * share, fontsize)


def fig_title(fig: plt.Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width (constrained layout keeps it inside)."""
    fig.suptitle(wrap(text, 0.9 * fig.get_figwidth(), fontsize), fontsize=fontsize)


def footnote(fig: plt.Figure, text: str, fontsize: float = 7.5) -> None:
    """A note under the figure (what a mark or a grey cell means), wrapped to its width."""
    fig.supxlabel(wrap(text, 0.9 * fig.get_figwidth(), fontsize), fontsize=fontsize, color="0.3")


def say_why(ax: plt.Axes, text: str, fontsize: float = 9) -> plt.Text:
    """The panel has nothing to draw: its frame and ticks off, ``text`` (the reason) centred in
    it, wrapped to its width (gid WHY, so a test finds it)."""
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    said = ax.text(
        0.5,
        0.5,
        wrap_to(ax, text, fontsize, share=0.85),
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=fontsize,
        color="0.25",
        gid=WHY,
    )
    return said


def size_axis(ax: plt.Axes, sizes: Sequence[float]) -> None:
    """A log x axis of parameter counts ticked at the models' sizes only (1.2k, 3.4M), no minor
    labels; sizes closer than a fifth of a decade keep the first's tick (labels never overlap)."""
    ax.set_xscale("log")
    ax.minorticks_off()
    ticks: list[float] = []
    for n in sorted({float(s) for s in sizes if np.isfinite(s) and s > 0}):
        if not ticks or np.log10(n / ticks[-1]) >= 0.2:
            ticks.append(n)
    ax.set_xticks(ticks, [_short_count(n) for n in ticks])


def sparse_log(axis) -> None:
    """A log axis whose minor ticks are labelled only when it spans under half a decade (the
    default labels 2-6 × 10^k from a decade down, which collide in a narrow panel)."""
    axis.set_minor_formatter(LogFormatterSciNotation(minor_thresholds=(0.5, 0.2)))


def _short_count(n: float) -> str:
    """1234 → '1.2k', 5_600_000 → '5.6M'."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:g}"


def place_labels(
    ax: plt.Axes, items: Sequence[tuple[str, float, float]], fontsize: float = 6, marker: float = 7
) -> list[plt.Text]:
    """Annotate each (text, x, y) in data coordinates beside its point, inside the panel and
    overlapping no label already placed, nor if it can be helped any item's marker (``marker``
    points across); tried: above right, above left, below right, below left, then further up
    and down. Call it after the layout is final: it draws the figure to measure the labels."""
    fig = ax.get_figure()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    r = marker * fig.dpi / 72 / 2
    xy = ax.transData.transform([(x, y) for _, x, y in items]) if items else []
    markers = [Bbox.from_extents(px - r, py - r, px + r, py + r) for px, py in xy]
    placed: list = []
    out = []
    for text, x, y in items:
        label = ax.annotate(
            text,
            (x, y),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=fontsize,
            ha="left",
            va="bottom",
        )
        box = label.get_window_extent(renderer)
        boxes = {}
        for dx, dy in _offsets(box.width * 72 / fig.dpi, box.height * 72 / fig.dpi):
            label.set_position((dx, dy))
            boxes[(dx, dy)] = label.get_window_extent(renderer)
        fits = [k for k, b in boxes.items() if _inside(b, frame)] or list(boxes)
        free = [k for k in fits if not any(boxes[k].overlaps(b) for b in placed)] or fits
        clear = [k for k in free if not any(boxes[k].overlaps(m) for m in markers)] or free
        label.set_position(clear[0])
        placed.append(boxes[clear[0]])
        out.append(label)
    return out


def _inside(box: Bbox, frame: Bbox) -> bool:
    return frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1


def _offsets(w: float, h: float) -> list[tuple[float, float]]:
    """Candidate offsets (points) of a w × h label from its point, nearest first."""
    return [
        (dx, dy) for k in range(8) for dy in (4 + k * h, -4 - (k + 1) * h) for dx in (4, -4 - w)
    ]
