"""What ``save_total_limit`` removed from a transformers.Trainer folder: the saves its newest
checkpoint's trainer_state.json implies, against the checkpoints on disk.

What the Trainer writes and deletes (transformers 5.24 as installed; ``trainer_callback.py``,
``trainer.py``, ``trainer_utils.py``):

- ``_save_checkpoint`` saves ``checkpoint-{global_step}`` with its ``TrainerState`` as
  trainer_state.json (``global_step``, ``max_steps``, ``epoch``, ``save_steps``, ``log_history``
  whose entries carry ``step`` and ``epoch``, ``best_global_step``, ``best_model_checkpoint``:
  the path ``<output_dir>/checkpoint-<n>``), then ``rotate_checkpoints``.
- ``DefaultFlowCallback.on_step_end`` saves (save_strategy "steps") when ``global_step %
  state.save_steps == 0`` and at ``global_step >= max_steps``; ``on_epoch_end`` saves at each
  epoch's end (save_strategy "epoch"), and the loop saves once more when training stops.
- ``TrainerState.compute_steps`` stores ``save_steps`` resolved: a fraction ``< 1`` of the
  arguments becomes ``ceil(max_steps × fraction)``, so the state holds the integer (a fraction
  found there is resolved the same way). It stores ``args.save_steps`` (default 500) under
  epoch saving too, where it means nothing: epoch saving is told by checkpoints at whole epochs.
- ``state.epoch = epoch + (step + 1) / steps_in_epoch``: whole at each epoch's last update.
- ``rotate_checkpoints`` deletes the oldest checkpoints beyond ``save_total_limit`` but never
  the newest nor ``best_model_checkpoint``: what is left is the best one and the newest saves.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topotrain.sources.runs import TRAINER_STATE, Checkpoint, newest_trainer_state

WHOLE = 1e-6  # an epoch within this of an integer is whole (logs may round it to 2 decimals)
CANNOT = "could not check for saves removed by rotation"


@dataclass(frozen=True)
class SaveGrid:
    """The steps a Trainer saved at under one reading of its state, and that reading in words."""

    how: str
    steps: tuple[int, ...]


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _grid(every: int, state: Mapping) -> tuple[int, ...]:
    """Multiples of ``every`` up to global_step, and global_step when it is the final step."""
    steps = list(range(every, state["global_step"] + 1, every))
    final = state["global_step"]
    if _integer(state.get("max_steps")) and 0 < state["max_steps"] <= final and final not in steps:
        steps.append(final)
    return tuple(steps)


def step_grid(state: Mapping) -> SaveGrid | None:
    """Step saving: every ``save_steps`` (a fraction of ``max_steps`` when below 1, rounded up)
    and the final step; None without a usable ``save_steps`` (older transformers kept it out of
    the state: the arguments had it)."""
    save_steps, max_steps, last = (
        state.get("save_steps"),
        state.get("max_steps"),
        state["global_step"],
    )
    if not _number(save_steps) or save_steps <= 0:
        return None
    if save_steps < 1:
        if not _integer(max_steps) or max_steps <= 0:
            return None
        every = math.ceil(max_steps * save_steps)
        how = f"save_steps {save_steps:g} of max_steps {max_steps} = {every}, global_step {last}"
    elif float(save_steps).is_integer():
        every = int(save_steps)
        how = f"save_steps {every}, global_step {last}"
    else:
        return None
    return SaveGrid(how, _grid(every, state))


def whole_epochs(state: Mapping) -> list[tuple[int, int]]:
    """(step, epoch) wherever the state or its log_history reaches a whole epoch ≥ 1."""
    points = [state, *(e for e in state.get("log_history") or [] if isinstance(e, Mapping))]
    found = set()
    for point in points:
        step = point.get("global_step", point.get("step"))
        epoch = point.get("epoch")
        if _integer(step) and _number(epoch) and epoch >= 1 - WHOLE:
            if abs(epoch - round(epoch)) < WHOLE:
                found.add((step, round(epoch)))
    return sorted(found)


def epoch_grids(state: Mapping) -> list[SaveGrid]:
    """Epoch saving: each epoch's last step (and the final step), one grid per epoch length that
    the state's whole epochs give (step ÷ epoch)."""
    lengths = {step // epoch for step, epoch in whole_epochs(state) if step % epoch == 0}
    last, epoch = state["global_step"], state.get("epoch")
    at = f" at epoch {epoch:g}" if _number(epoch) else ""
    return [
        SaveGrid(f"epoch saving, {n} steps an epoch, global_step {last}{at}", _grid(n, state))
        for n in sorted(lengths)
        if n > 0
    ]


def best_step(state: Mapping) -> int | None:
    """The step of the checkpoint rotation keeps as best: ``best_global_step``, else the number
    of ``best_model_checkpoint``'s ``checkpoint-<n>`` folder."""
    if _integer(state.get("best_global_step")) and state.get("best_model_checkpoint"):
        return state["best_global_step"]
    found = re.search(
        r"checkpoint-(\d+)$", str(state.get("best_model_checkpoint") or "").rstrip("/\\")
    )
    return int(found.group(1)) if found else None


def rotated(grid: Sequence[int], disk: Sequence[int], best: int | None) -> bool:
    """Whether ``disk`` is what rotation leaves of ``grid``: its newest saves, and the best one."""
    if list(grid[-len(disk) :]) == list(disk):
        return True
    rest = [s for s in disk if s != best]
    return best in disk and (not rest or list(grid[-len(rest) :]) == rest)


def steps_text(steps: Sequence[int]) -> str:
    """Steps in words: "step 10", "steps 10, 20, 30", or a long list's first three and last two."""
    steps = list(steps)
    if len(steps) == 1:
        return f"step {steps[0]}"
    shown = steps if len(steps) <= 8 else [*steps[:3], "…", *steps[-2:]]
    more = f" ({len(steps)} in all)" if len(steps) > 8 else ""
    return "steps " + ", ".join(map(str, shown)) + more


def _covered_text(covered: Sequence[int], grid: Sequence[int], removed: Sequence[int]) -> str:
    """The steps the analysis covers: "steps a … b" when they are every save from a to b."""
    every = [s for s in grid if covered[0] <= s <= covered[-1]] == list(covered)
    text = f"steps {covered[0]} … {covered[-1]}" if every and len(covered) > 2 else None
    kept = [s for s in removed if s in covered]  # topology kept from before the weights went
    gone = f" ({steps_text(kept)} from earlier topology records)" if kept else ""
    return (text or steps_text(covered)) + gone


def _removed_note(
    grid: SaveGrid, disk: Sequence[int], covered: Sequence[int], best: int | None, source: str
) -> tuple[list[int], str | None]:
    removed = [s for s in grid.steps if s not in disk]
    if not removed:
        return [], None
    n = len(removed)
    newest = list(grid.steps[-len(disk) :]) == list(disk)
    kept = "" if newest else f"; step {best} stays as best_model_checkpoint"
    note = (
        f"rotation removed {n} earlier save{'s' if n > 1 else ''} ({steps_text(removed)}): "
        f"{source} ({grid.how}) implies {len(grid.steps)}{kept}; the analysis covers "
        f"{_covered_text(covered, grid.steps, removed)}"
    )
    return removed, note


def _problem(state, disk: Sequence[int], source: str) -> str | None:
    """Why ``state`` cannot be read against the steps on disk, or None."""
    if not isinstance(state, Mapping):
        return f"{source} is not a JSON object"
    if not _integer(state.get("global_step")) or state["global_step"] <= 0:
        return f"{source} gives global_step {state.get('global_step')!r}"
    if disk[-1] != state["global_step"]:
        return (
            f"the newest checkpoint is step {disk[-1]} but {source} says global_step "
            f"{state['global_step']}"
        )
    return None


def _unfit(grids: list[SaveGrid], fits: list[SaveGrid], disk, state: Mapping, source) -> str:
    """Why no single reading of the state leaves the checkpoints on disk."""
    on_disk = f"the checkpoints on disk ({steps_text(disk)})"
    if fits:
        readings = "; ".join(f"{g.how}: {len(g.steps) - len(disk)} removed" for g in fits)
        return f"{on_disk} fit several readings of {source} ({readings})"
    if grids:
        gaps = [s for s in grids[0].steps if s not in disk]
        return (
            f"{on_disk} are not the newest of the saves {source} implies ({grids[0].how}) as "
            f"rotation leaves them: {steps_text(gaps)} are not on disk (deleted by hand, or "
            'never saved, as under save_strategy "best")'
        )
    return (
        f"{on_disk} fit neither {source}'s save_steps ({state.get('save_steps')!r}) nor its "
        "whole epochs"
    )


def removed_saves(
    state: Mapping,
    on_disk: Iterable[int],
    covered: Iterable[int] | None = None,
    source: str = TRAINER_STATE,
) -> tuple[list[int], str | None]:
    """(the saves rotation removed, a one-line note) from the newest checkpoint's
    trainer_state.json (``state``, read from ``source``) and the steps whose checkpoints are on
    disk; ``covered``: the steps the analysis covers (default: those on disk). The note is None
    when nothing was removed, and says "could not check" when the state is odd or when not
    exactly one reading of it (step saving, epoch saving) leaves the disk as rotation does."""
    disk = sorted({int(s) for s in on_disk})
    covered = sorted({int(s) for s in covered}) if covered is not None else disk
    if not disk:
        return [], None
    if problem := _problem(state, disk, source):
        return [], f"{CANNOT}: {problem}"
    best = best_step(state)
    grids = [g for g in (step_grid(state), *epoch_grids(state)) if g and set(disk) <= set(g.steps)]
    grids = list({g.steps: g for g in grids}.values())  # one reading per set of steps
    fits = [g for g in grids if rotated(g.steps, disk, best)]
    if len(fits) == 1:
        return _removed_note(fits[0], disk, covered, best, source)
    return [], f"{CANNOT}: {_unfit(grids, fits, disk, state, source)}"


def run_rotation_note(checkpoints: Mapping[int, Checkpoint], covered: Iterable[int]) -> str | None:
    """The note of ``removed_saves`` for a local run from its one listing (``checkpoints``:
    {step: Checkpoint} on disk; ``covered``: those and the steps whose records outlive their
    weights), read from its newest trainer_state.json (``newest_trainer_state``); None without
    one; "could not check" when it cannot be read."""
    path = newest_trainer_state(checkpoints)
    if path is None:
        return None
    source = f"{path.parent.name}/{TRAINER_STATE}"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"{CANNOT}: {source} cannot be read ({type(err).__name__}: {err})"
    return removed_saves(state, sorted(checkpoints), covered, source)[1]
