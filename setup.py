"""Wheels carry the bundled tasks: environments/ is copied to termgym/_environments at build."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithEnvironments(build_py):
    """build_py plus the environments/ folder (an editable install reads it in place)."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "environments"
        if self.editable_mode or not source.is_dir():
            return
        target = Path(self.build_lib) / "termgym" / "_environments"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithEnvironments})
