"""Checkpoint series you can trust: steps whose weight files are byte-identical.

Published series are not always what their names say: 86 of pythia-2.8b's step branches serve the
final checkpoint's model.safetensors (EleutherAI/pythia issue 205), and two of pythia-12b's serve
its first shard (issue 206). A study on such a series measures the end of training at "step 0".
Weight files are compared by sha256, file by file, so one shared shard is caught too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

log = logging.getLogger(__name__)
SETTING = "allow_identical_steps: true"
HEADLINE = "weight files are byte-identical at different steps: these are not distinct checkpoints"


class IdenticalWeightsError(ValueError):
    """Two or more steps of a series serve byte-identical weight files."""


def identical_groups(hashes: Mapping[int, Mapping[str, str]]) -> list[dict]:
    """Each sha256 found at ≥ 2 different steps of ``hashes`` ({step: {weight file: sha256}}):
    {"sha256", "steps" (sorted), "files" (the names it has, sorted)}, ordered by steps."""
    steps: dict[str, set[int]] = {}
    files: dict[str, set[str]] = {}
    for step, step_files in hashes.items():
        for name, sha in step_files.items():
            steps.setdefault(sha, set()).add(int(step))
            files.setdefault(sha, set()).add(name)
    groups = [
        {"sha256": sha, "steps": sorted(found), "files": sorted(files[sha])}
        for sha, found in steps.items()
        if len(found) > 1
    ]
    return sorted(groups, key=lambda g: (g["steps"], g["sha256"]))


def step_flags(hashes: Mapping[int, Mapping[str, str]]) -> dict[int, dict]:
    """Per step: "same_weights_as" (the other steps sharing any weight file's sha256,
    ';'-joined, '' if none) and "equals_final" (shares one with the largest step, not being it)."""
    groups = identical_groups(hashes)
    final = max((int(s) for s in hashes), default=None)
    flags = {}
    for step in sorted(int(s) for s in hashes):
        others = sorted({s for g in groups if step in g["steps"] for s in g["steps"]} - {step})
        flags[step] = {
            "same_weights_as": ";".join(map(str, others)),
            "equals_final": final in others,
        }
    return flags


def identical_message(label: str, hashes: Mapping[int, Mapping[str, str]], section: str) -> str:
    """The report of identical_groups: each group's steps (the final one marked), files and sha256,
    the steps that equal the final one, and how to proceed."""
    groups = identical_groups(hashes)
    final = max(int(s) for s in hashes)
    lines = [f"{label}: {HEADLINE}:"]
    for group in groups:
        steps = ", ".join(f"{s} (final)" if s == final else str(s) for s in group["steps"])
        lines.append(f"  - steps {steps}: {', '.join(group['files'])}, sha256 {group['sha256']}")
    at_final = [str(s) for s, f in step_flags(hashes).items() if f["equals_final"]]
    if at_final:
        names = ", ".join(at_final)
        which = f"Step {names} serves" if len(at_final) == 1 else f"Steps {names} serve"
        lines.append(
            f"  {which} weights of the final step {final}: measuring them would measure the end "
            "of training, not their own step."
        )
    where = f"`{section}.{SETTING}`" if section else f"`{SETTING}` in that section of the config"
    lines.append(
        f"  To proceed, drop the repeated steps from the config, or set {where} to keep them "
        "(their rows are then flagged in the columns same_weights_as and equals_final)."
    )
    return "\n".join(lines)


def check_identical_steps(
    label: str,
    hashes: Mapping[int, Mapping[str, str]],
    allow: bool = False,
    section: str = "",
) -> dict[int, dict]:
    """step_flags(hashes), after raising IdenticalWeightsError (``identical_message``) if any
    weight file is identical at two steps; with ``allow`` the message is logged as a warning."""
    if identical_groups(hashes):
        message = identical_message(label, hashes, section)
        if not allow:
            raise IdenticalWeightsError(message)
        log.warning("%s\n  (kept: %s)", message, SETTING)
    return step_flags(hashes)


def series_flags(
    docs: Sequence[Mapping],
    allow: bool = False,
    section: str = "",
    refetch: str = "",
    key: str = "model",
) -> dict[tuple[str, int], dict]:
    """{(series, step): step_flags} of per-step records grouped by ``key``, each series checked
    with check_identical_steps on its records' "weights_sha256". A series with records lacking
    hashes (an older topotrain wrote them) is not checked: a warning names them and ``refetch``."""
    series: dict[str, list[Mapping]] = {}
    for doc in docs:
        series.setdefault(doc[key], []).append(doc)
    flags = {}
    for label, records in series.items():
        lacking = sorted(int(d["step"]) for d in records if "weights_sha256" not in d)
        if lacking:
            log.warning(
                "%s: the records of steps %s carry no weights_sha256 (written by an older "
                "topotrain), so identical weights were not checked; %s",
                label,
                lacking,
                refetch,
            )
            continue
        hashes = {int(d["step"]): d["weights_sha256"] for d in records}
        checked = check_identical_steps(label, hashes, allow, section)
        flags |= {(label, step): f for step, f in checked.items()}
    return flags
