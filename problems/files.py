"""Writing a file so that a reader sees the old whole file or the new whole file, never a part.

Judges, workers and servers on one host share the cache folder, so two of them may write the same file at
once: each writes its own temporary file beside the target (a unique name, never a fixed ``.tmp`` that the
other could rename away first) and renames it over the target.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (its folder is created); return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
