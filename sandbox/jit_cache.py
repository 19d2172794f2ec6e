"""A solution's JIT caches (Triton, CuTe DSL, inductor, the driver's PTX cache), kept between its runs.

Every candidate process starts with an empty cache in its own folder, so no candidate can plant
compiled kernels for another. What one solution compiled is worth keeping for *that* solution: the
judge copies it out of the process's folder when the evaluation ends, into
``<cache>/jit/<build key>/``, and copies it into the next process that loads the same build (the
build key is a hash of the sources, flags, toolchain and target, so nothing crosses to another
solution). Only regular files are copied, never links, and a cache above :data:`MAX_BYTES` is not
kept.

The judge keeps the caches of its baseline processes the same way (the reference under torch.compile:
inductor's graphs and Triton's kernels, built in a baseline phase of 7.5-50.6 s a problem on the H200), but under
``trusted-<build key>`` (:func:`kept_key`). A candidate may submit the reference's exact source and so share
its build key; were their caches kept under one name, it could plant code for the baseline's next process.
The compiled baseline keeps no autotuning choices (``sandbox.baseline``): inductor keys them by the absolute
path of each kernel in the process that generated it, so a restored graph made the next process autotune
into the first one's home (``PermissionError`` under Landlock, H200, 2026-12-04).

A restore lands in a process that is already running: a spare has started Triton's CUDA driver, whose
helper module it built into the same cache folder and mapped. A file that is already there is therefore
never written again (its name is a content hash: it holds the same bytes); a new one is written beside its
name and renamed into place, so that no process ever sees a half-written file. Rewriting the mapped helper
in place crashed every Triton candidate from the second evaluation on (SIGSEGV, H200, 2026-12-04).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["MAX_BYTES", "TRUSTED_PREFIX", "kept_key", "restore", "save"]

MAX_BYTES = 512 * 1024**2
"""A solution's kept JIT cache is at most this large; a larger one is dropped (it is only a cache)."""
TRUSTED_PREFIX = "trusted-"
"""Names the kept caches of the judge's own processes (the reference timed as the baseline)."""
_FOLDER = "jit-cache"
"""Where child_env.scrubbed_env points the JIT caches, under a process's home."""


def _regular_files(root: Path) -> list[tuple[Path, int]]:
    """(relative path, size) of every regular file under ``root``, links and specials skipped."""
    found: list[tuple[Path, int]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
        for name in files:
            path = Path(folder) / name
            with contextlib.suppress(OSError):
                info = path.lstat()
                if stat.S_ISREG(info.st_mode):
                    found.append((path.relative_to(root), info.st_size))
    return found


def _copy_tree(source: Path, target: Path) -> bool:
    files = _regular_files(source)
    if sum(size for _, size in files) > MAX_BYTES:
        return False
    for relative, _ in files:
        destination = target / relative
        if os.path.lexists(destination):
            continue  # the process's own copy, perhaps mapped: never rewritten
        destination.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            # O_NOFOLLOW: a file swapped for a link after the walk is not followed.
            fd = os.open(source / relative, os.O_RDONLY | os.O_NOFOLLOW)
            partial = destination.with_name(f".{destination.name}.{os.getpid()}.part")
            try:
                with os.fdopen(fd, "rb") as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(partial, destination)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    partial.unlink()
    return True


def kept_key(build_key: str, *, trusted: bool) -> str:
    """The name a process's JIT cache is kept under: its build key, prefixed for the judge's trusted processes.
    A build key is hex, so no candidate's cache can be kept under a trusted name."""
    return TRUSTED_PREFIX + build_key if trusted and build_key else build_key


def save(home: Path, cache_dir: Path, build_key: str) -> bool:
    """Keep the JIT cache of the process whose home is ``home`` for the build ``build_key``."""
    source = home / _FOLDER
    if not build_key or not source.is_dir():
        return False
    target = cache_dir / "jit" / build_key
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{build_key[:16]}-", dir=target.parent))
    try:
        if not _copy_tree(source, staging):
            return False
        old = target.with_name(target.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            target.rename(old)
        staging.rename(target)  # atomic: a reader sees the old cache or the new one, never half
        shutil.rmtree(old, ignore_errors=True)
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def restore(cache_dir: Path, build_key: str, home: Path) -> bool:
    """Give the process whose home is ``home`` the kept JIT cache of ``build_key``, if there is one."""
    source = cache_dir / "jit" / build_key
    if not build_key or not source.is_dir():
        return False
    return _copy_tree(source, home / _FOLDER)
