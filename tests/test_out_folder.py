"""A training job takes its rule's outputs and refuses a rule that names other files than the
trainer writes (``jobs.common.out_folder``)."""

import pytest

from topotrain.jobs.common import out_folder
from topotrain.training.run_state import published_files


def test_the_folder_of_the_files_the_trainer_writes():
    files = published_files("results/checkpoints/m/seed1", [0, 10])
    assert files["checkpoints"] == [
        "results/checkpoints/m/seed1/step_00000.safetensors",
        "results/checkpoints/m/seed1/step_00010.safetensors",
    ]
    assert out_folder(files, lambda f: published_files(f, [0, 10])) == "results/checkpoints/m/seed1"


@pytest.mark.parametrize(
    "change",
    [
        {"evals": "results/checkpoints/m/seed1/eval.csv"},  # another name
        {"checkpoints": ["results/checkpoints/m/seed1/step_00000.safetensors"]},  # a step short
        {"metrics": "elsewhere/metrics.csv"},  # another folder
    ],
)
def test_a_rule_naming_other_files_is_refused(change):
    files = {**published_files("results/checkpoints/m/seed1", [0, 10]), **change}
    with pytest.raises(ValueError, match="not the files the trainer writes"):
        out_folder(files, lambda f: published_files(f, [0, 10]))
    no_evals = published_files("c/seed0", [0], evals=False)
    assert set(no_evals) == {"checkpoints", "metrics"}
