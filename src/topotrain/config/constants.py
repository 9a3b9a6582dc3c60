"""The constants every package shares, each stated once (``tests/test_facts_once.py`` fails where a
keyword default or a ``.get`` default of ``engine``, ``vocab_size``, ``alpha`` or ``confidence``
is retyped as a literal, and where α or the confidence level is typed anywhere: a float, a
message, a report template)."""

from __future__ import annotations

import itertools
import math

from topotrain.config.schema import DEFAULTS

ENGINE = DEFAULTS["topology"]["engine"]  # the Rips engine a call that names none gets (auto)
VOCAB_SIZE = 128  # character codes 0–127: the spine's vocabulary (sources.corpus encodes to it)
LOSSES = ("train_loss", "val_loss")  # the losses a feature is tested against (the spine's logs)
ALPHA = 0.05  # the level of every test a verdict rests on
CONFIDENCE = 0.95  # the level of every two-sided interval (1 − ALPHA)
# the fewest seeds of one size whose exact one-sided seed-permutation p (smallest 1/k!) can fall
# below ALPHA: 4 at 0.05 (1/24)
SEEDS_FOR_ALPHA = next(k for k in itertools.count(1) if 1 / math.factorial(k) < ALPHA)
# the fewest arrangements an effect interval needs (its tails, ALPHA / 2 each, within reach: 40)
# and the fewest seeds of one model that give them (5 at 0.05: 120 orders)
MIN_ARRANGEMENTS = round(2 / ALPHA)
SEEDS_FOR_INTERVAL = next(k for k in itertools.count(1) if math.factorial(k) >= MIN_ARRANGEMENTS)
