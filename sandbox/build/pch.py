"""A precompiled ``torch/extension.h`` for the C++ sources of cuda_cpp solutions.

A ``.cpp`` that includes ``torch/extension.h`` spends most of its compile in torch's headers: about
25 s on a 2-core build machine, of which a precompiled header leaves about 8 s. GCC uses a
``torch/extension.h.gch`` found in an include folder in place of the header, and only when it was
built with compatible flags: it checks that itself and otherwise reads the header as usual, so a
precompiled header can make a build faster but never different.

The flags must be the ones torch's extension builder gives the compiler. They are read from the
``build.ninja`` of a small probe extension that :func:`prepare` builds once through the build
cache (less its module name and source folder), for the default compile options only: a solution
with ``compile_options.cflags`` of its own builds without the precompiled header.

Layout: ``<cache>/pch/<key>/torch/extension.h.gch`` and ``flags.json``, where the key hashes the
compiler's version, the toolchain versions and the flags.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import tempfile
import time
from pathlib import Path

from solforge.problems import Solution

from .pch_cache import PCH_HEADER, compiler_version, current_file, find, pch_key, pch_root

__all__ = ["PCH_HEADER", "find", "prepare"]

PROBE_TIMEOUT_S = 900.0
"""The probe extension and the header together, on a slow machine."""
_PROBE_SOURCE = """// solforge's probe: the flags torch's extension builder uses, for the precompiled header.
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x) { return x; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""


def _probe_flags(cache_dir: Path, timeout_s: float) -> list[str] | None:
    """The C++ flags of a real extension build, less what differs between builds."""
    from .builder import build_solution

    probe = Solution.model_validate({
        "name": "solforge_pch_probe", "definition": "solforge_pch_probe", "author": "solforge",
        "spec": {"languages": ["cuda_cpp"], "entry_point": "probe.cpp::run"},
        "sources": [{"path": "probe.cpp", "content": _PROBE_SOURCE}],
    })
    report = build_solution(probe, target_arch=None, cache_dir=cache_dir, timeout_s=timeout_s)
    if not report.ok or not report.artifact_dir:
        return None
    try:
        ninja = (Path(report.artifact_dir) / "build" / "build.ninja").read_text()
    except OSError:
        return None
    line = next((row for row in ninja.splitlines() if row.startswith("cflags = ")), None)
    if line is None:
        return None
    flags: list[str] = []
    for token in shlex.split(line.removeprefix("cflags = ")):
        if token.startswith("-DTORCH_EXTENSION_NAME="):
            continue
        if token.startswith("-I") and token.rstrip("/").endswith("/src") and "builds" in token:
            continue  # the probe's own sources
        flags.append(token)
    return flags


@contextlib.contextmanager
def _lock(path: Path):  # type: ignore[no-untyped-def]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def prepare(cache_dir: Path, *, timeout_s: float = PROBE_TIMEOUT_S) -> Path | None:
    """Build the precompiled header for the default compile options (once; later calls return it).

    Runs torch's own header through the host compiler with torch's own flags: no candidate input
    reaches it. Returns the include folder, or None where GCC, the CUDA build of torch or nvcc is
    missing.
    """
    if compiler_version() is None:
        return None
    ready = find(cache_dir, [])
    if ready is not None:
        return ready
    from solforge.sandbox.child_env import scratch_dir, scrubbed_env
    from solforge.sandbox.isolation import run_isolated

    with _lock(pch_root(cache_dir) / ".lock"):
        ready = find(cache_dir, [])
        if ready is not None:
            return ready
        started = time.monotonic()
        flags = _probe_flags(cache_dir, timeout_s)
        if flags is None:
            return None
        header = next((Path(d) / "torch" / "extension.h" for d in _isystem_dirs(flags)
                       if (Path(d) / "torch" / "extension.h").is_file()), None)
        if header is None:
            return None
        key = pch_key(flags)
        folder = pch_root(cache_dir) / key
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=pch_root(cache_dir)))
        try:
            (staging / PCH_HEADER).parent.mkdir(parents=True)
            compiler = os.environ.get("CXX", "c++")
            with scratch_dir() as scratch:
                result = run_isolated(
                    [compiler, "-x", "c++-header", str(header), "-o", str(staging / PCH_HEADER), *flags],
                    cwd=scratch, env=scrubbed_env(None, None, scratch_dir=scratch),
                    timeout_s=max(1.0, timeout_s - (time.monotonic() - started)), memory_limit_bytes=None)
            if not result.ok or not (staging / PCH_HEADER).is_file():
                return None
            (staging / "flags.json").write_text(json.dumps(flags, indent=1))
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        for old in pch_root(cache_dir).iterdir():  # one header per machine is enough: drop superseded ones
            if old.is_dir() and old.name != key and not old.name.startswith("."):
                shutil.rmtree(old, ignore_errors=True)
        current_file(cache_dir).write_text(json.dumps({"key": key, "flags": flags}))
        return folder


def _isystem_dirs(flags: list[str]) -> list[str]:
    """The folders of ``-isystem X`` / ``-isystemX`` / ``-IX`` flags."""
    out: list[str] = []
    for i, flag in enumerate(flags):
        if flag == "-isystem" and i + 1 < len(flags):
            out.append(flags[i + 1])
        elif flag.startswith("-isystem") and len(flag) > len("-isystem"):
            out.append(flag.removeprefix("-isystem"))
        elif flag.startswith("-I"):
            out.append(flag.removeprefix("-I"))
    return out
