"""Finding a ready precompiled ``torch/extension.h`` (the lookup half of :mod:`.pch`).

The builder asks :func:`find` for the include folder of a header that matches this compiler, the
toolchain and the build's flags; :func:`solforge.sandbox.build.pch.prepare`, which builds the header
through the builder, writes what :func:`find` reads. Kept apart so that the builder does not import
the module that imports it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path

from .toolchain import toolchain_versions

__all__ = ["PCH_HEADER", "compiler_version", "current_file", "find", "pch_key", "pch_root"]

PCH_HEADER = Path("torch") / "extension.h.gch"
"""Where the header sits inside its include folder."""


@functools.cache
def compiler_version() -> str | None:
    compiler = os.environ.get("CXX", "c++")
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()[0] if out.strip() else ""
    gcc = "Free Software Foundation" in out and "clang" not in out.lower()
    return first if gcc else None  # only GCC reads .gch files


def pch_root(cache_dir: Path) -> Path:
    return Path(cache_dir) / "pch"


def pch_key(flags: list[str]) -> str:
    payload = {"compiler": compiler_version(), "toolchain": toolchain_versions(), "flags": flags}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def current_file(cache_dir: Path) -> Path:
    return pch_root(cache_dir) / "current.json"


def find(cache_dir: Path, user_cflags: list[str]) -> Path | None:
    """The include folder holding a ready precompiled header for a build with ``user_cflags``, or None."""
    if user_cflags or compiler_version() is None:
        return None
    try:
        recorded = json.loads(current_file(cache_dir).read_text())
        folder = pch_root(cache_dir) / recorded["key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if recorded["key"] != pch_key(recorded["flags"]) or not (folder / PCH_HEADER).is_file():
        return None  # built for another compiler or toolchain
    return folder
