"""Workflow configuration: the schema and its defaults (``schema``), strings from ``--config`` as
the types the schema declares (``coerce``), and the checks the schema cannot express with the
values derived from a config (``checks``).

The workflow fills the defaults, coerces, validates and checks before any job runs
(workflow/rules/common.smk), so a bad config fails with a message naming the offending key.
``docs`` renders the schema as the table a user reads (docs/config.md).
"""

from topotrain.config.checks import (
    EMBEDDING_LAYERS,
    GPT_LAYERS,
    GPT_NEOX_LAYERS,
    NAME,
    NAME_MAPS,
    NAME_RULE,
    ConfigError,
    check_config,
    check_settings,
    check_something_to_do,
    checkpoint_steps,
    control_enabled,
    control_problems,
    layer_patterns,
    llc_steps,
    n_params,
    pythia_enabled,
    run_problems,
    section_errors,
    spine_enabled,
    train_problems,
)
from topotrain.config.coerce import coerce_config, float_integers, order_like_schema
from topotrain.config.constants import (
    ALPHA,
    CONFIDENCE,
    ENGINE,
    LOSSES,
    SEEDS_FOR_ALPHA,
    VOCAB_SIZE,
)
from topotrain.config.schema import (
    DEFAULTS,
    RUN_DEFAULTS,
    SCHEMA,
    choices,
    config_hash,
    fill_defaults,
    invalid_config,
    key_path,
    load_schema,
    schema_problems,
    section_problems,
)

__all__ = [
    "ALPHA",
    "LOSSES",
    "CONFIDENCE",
    "DEFAULTS",
    "ENGINE",
    "SEEDS_FOR_ALPHA",
    "VOCAB_SIZE",
    "RUN_DEFAULTS",
    "EMBEDDING_LAYERS",
    "GPT_LAYERS",
    "GPT_NEOX_LAYERS",
    "NAME",
    "NAME_MAPS",
    "NAME_RULE",
    "SCHEMA",
    "ConfigError",
    "check_config",
    "check_settings",
    "check_something_to_do",
    "checkpoint_steps",
    "llc_steps",
    "choices",
    "coerce_config",
    "config_hash",
    "control_enabled",
    "control_problems",
    "fill_defaults",
    "float_integers",
    "invalid_config",
    "key_path",
    "layer_patterns",
    "load_schema",
    "n_params",
    "order_like_schema",
    "pythia_enabled",
    "run_problems",
    "schema_problems",
    "section_errors",
    "section_problems",
    "spine_enabled",
    "train_problems",
]
