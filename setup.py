"""Packaging hook: the wheel carries views/, query_servers/ and docker/ as dragnet/_data (see dragnet/paths.py).

They stay top-level folders in the repo; setup.cfg holds everything else."""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("views", "query_servers", "docker")
# build outputs and local installs never ship (the same ones the Docker build context leaves out)
SKIP_DIRS = {"build", "node_modules", "__pycache__", ".pytest_cache"}
SKIP_SUFFIXES = (".o", ".pyc", ".so")


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        # an editable install reads the checkout's folders directly (dragnet.paths.data_root)
        if getattr(self, "editable_mode", False):
            return
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "dragnet" / "_data"
        shutil.rmtree(target, ignore_errors=True)
        for top in DATA_DIRS:
            for root, dirs, files in os.walk(here / top):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
                for name in files:
                    if name.endswith(SKIP_SUFFIXES):
                        continue
                    src = Path(root, name)
                    dst = target / src.relative_to(here)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)  # keeps the executable bits (entrypoint, scripts)


setup(cmdclass={"build_py": BuildPyWithData})
