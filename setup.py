"""Bundle the workflow into the wheel: Snakefile, config.yaml, workflow/, envs/, profiles/ and .test/
(the demo's config and corpus) go
to ``topotrain/_workflow/`` so that the ``topotrain`` command runs with no checkout (an editable
install reads them from the repository instead)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

WORKFLOW = ["Snakefile", "config.yaml", "workflow", "envs", "profiles", ".test"]  # .test: the demo


class BuildWithWorkflow(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        root, target = Path(__file__).parent, Path(self.build_lib) / "topotrain" / "_workflow"
        for name in WORKFLOW:
            src = root / name
            if src.is_dir():
                shutil.copytree(
                    src,
                    target / name,
                    dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                )
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / name)


setup(cmdclass={"build_py": BuildWithWorkflow})
