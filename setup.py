"""setuptools glue; the metadata lives in pyproject.toml.

- `build_py` copies `tuned_configs/*.json` into `helion_kernels/tuned_configs/` of the build, so an
  installed wheel carries its tables (a source checkout reads the top-level folder directly).
- The distribution reports extension modules, so the wheel is platform-tagged
  (`py3-none-linux_x86_64`): the generated Triton only runs where Triton exists, i.e. Linux, and
  cibuildwheel (the release workflow) refuses pure-Python wheels. The release build retags it
  manylinux, which holds trivially since the wheel contains no compiled code.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent


class BuildPyWithTables(build_py):
    """build_py that also ships the tuned tables as package data."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "helion_kernels" / "tuned_configs"
        target.mkdir(parents=True, exist_ok=True)
        for table in sorted((HERE / "tuned_configs").glob("*.json")):
            shutil.copyfile(table, target / table.name)


class PlatformWheel(bdist_wheel):
    """One wheel for every Python 3 on the build's platform (no ABI: nothing is compiled)."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class PlatformDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=PlatformDistribution,
      cmdclass={"build_py": BuildPyWithTables, "bdist_wheel": PlatformWheel})
