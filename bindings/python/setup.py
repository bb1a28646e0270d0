"""Wheel packaging. The metadata is in pyproject.toml; this file only adds the binary.

`make dist` (repo root) builds `concord` from source and runs `pip wheel` with
CONCORD_WHEEL_BINARY=/abs/path/to/concord and CONCORD_WHEEL_GOOS / CONCORD_WHEEL_GOARCH
naming the platform it was built for. The wheel then carries the binary at
concord_openhands/bin/concord (where find_binary() looks first after $CONCORD_BIN) and is
tagged for that platform only, the way ruff and uv ship theirs. Without
CONCORD_WHEEL_BINARY this builds the plain pure-Python package (`pip install ./bindings/python`,
the editable install of the tests), which finds `concord` through $CONCORD_BIN or PATH.
"""

from __future__ import annotations

import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
from setuptools.command.build_py import build_py

BINARY = os.environ.get("CONCORD_WHEEL_BINARY", "")

# The binary is static (CGO_ENABLED=0), so it runs on any glibc or musl Linux of its
# architecture; Go 1.26 needs macOS 12 or later.
PLATFORM_TAGS = {
    ("linux", "amd64"): "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64",
    ("linux", "arm64"): "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64",
    ("darwin", "amd64"): "macosx_12_0_x86_64",
    ("darwin", "arm64"): "macosx_12_0_arm64",
}


def platform_tag() -> str:
    key = (os.environ.get("CONCORD_WHEEL_GOOS", ""), os.environ.get("CONCORD_WHEEL_GOARCH", ""))
    try:
        return PLATFORM_TAGS[key]
    except KeyError:
        raise SystemExit(
            f"CONCORD_WHEEL_GOOS/CONCORD_WHEEL_GOARCH = {key[0] or '?'}/{key[1] or '?'}: "
            f"no wheel platform tag for it (known: {', '.join('/'.join(k) for k in PLATFORM_TAGS)})"
        ) from None


class BuildPyWithBinary(build_py):
    def run(self) -> None:
        super().run()
        if not BINARY:
            return
        if not (os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)):
            raise SystemExit(f"CONCORD_WHEEL_BINARY={BINARY!r} is not an executable file")
        dest = os.path.join(self.build_lib, "concord_openhands", "bin", "concord")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(BINARY, dest)
        os.chmod(dest, 0o755)  # the wheel's zip entry keeps the mode; pip restores it


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        # A platform payload: the wheel is not pure, and its files go to its root (platlib)
        # rather than under .data/purelib.
        return bool(BINARY) or super().has_ext_modules()


class PlatformWheel(bdist_wheel):
    def get_tag(self) -> tuple[str, str, str]:
        if not BINARY:
            return super().get_tag()
        # Any Python 3 (the package has no extension modules): only the platform matters.
        return "py3", "none", platform_tag()


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithBinary, "bdist_wheel": PlatformWheel})
