"""A solution's JIT caches (Triton, CuTe DSL, inductor, the driver's PTX cache), kept between its runs.

Every candidate process starts with an empty cache in its own folder, so no candidate can plant
compiled kernels for another. What one solution compiled is worth keeping for *that* solution: the
judge copies it out of the process's folder when the evaluation ends, into
``<cache>/jit/<build key>/``, and copies it into the next process that loads the same build (the
build key is a hash of the sources, flags, toolchain and target, so nothing crosses to another
solution). Only regular files are copied, never links, and a cache above :data:`MAX_BYTES` is not
kept.

The judge's baseline processes get no kept cache. A candidate may submit the reference's exact source and so
share its build key, and a cache kept for the candidate could then plant code for the baseline. Nor is a
baseline's own cache kept: a compiled baseline's inductor cache restored into another process's home failed
(H200, 2026-12-04). Inductor's autotuning cache is keyed by the absolute path of each generated kernel in the
first process's home, so the second process's autotuning tried to write there (``PermissionError`` under
Landlock), and its compiled variant was not timed.

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

__all__ = ["MAX_BYTES", "restore", "save"]

MAX_BYTES = 512 * 1024**2
"""A solution's kept JIT cache is at most this large; a larger one is dropped (it is only a cache)."""
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
