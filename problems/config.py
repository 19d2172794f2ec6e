"""solforge's settings from the environment, read in one place.

Every process of solforge (server, workers, judges, the command line) reads these the same way:

==============================  ==================================================================
``SOLFORGE_CACHE``              the cache root: builds, baselines, calibration, JIT caches, tool
                                schemas (default ``~/.cache/solforge``; ``~`` is expanded)
``SOLFORGE_HOME``               where the embedded SQLite ledger lives (``solforge serve``)
``SOLFORGE_DB``                 the ledger's URL (SQLite path or ``postgresql://``), kept out of ``ps``
``SOLFORGE_AGENT``,             this stdio client's agent name and bearer tokens
``SOLFORGE_TOKEN(S)``
``SOLFORGE_PROBLEM_DIRS``       extra problem folders (``os.pathsep``-separated);
                                ``SOLFORGE_ONLY_PROBLEM_DIRS=1`` hides the bundled catalogue
``SOLFORGE_TARGET_ARCH``        the GPU architecture builds target when no GPU is visible
``SOLFORGE_DEFENCES``           ``off`` turns the sandbox's defences off (measurements only)
``SOLFORGE_SPARE_PAUSE``        ``0`` leaves starting spare processes running beside timed loops
``SOLFORGE_BASELINE_TABLES``    a folder of baseline tables to use instead of the shipped ones (a
                                folder that does not exist, such as ``0``: no tables)
``SOLFORGE_LOG_LEVEL``          the server's log level
==============================  ==================================================================

The rule for agent names lives here too, so that the server and the ledger agree on it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["AGENT_NAME_RULE", "agent_name_error", "cache_dir"]

_AGENT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@:")
AGENT_NAME_RULE = "1-64 letters, digits and - _ . @ :"
"""What an agent name may be, in words (for error messages)."""


def cache_dir() -> Path:
    """The cache root: ``$SOLFORGE_CACHE`` (``~`` expanded), else ``~/.cache/solforge``."""
    env = os.environ.get("SOLFORGE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "solforge"


def agent_name_error(name: str) -> str | None:
    """Why ``name`` cannot be an agent's name, or None when it can."""
    if not name or len(name) > 64 or not set(name) <= _AGENT_NAME_CHARS:
        return f"agent name {name!r} is not valid: use {AGENT_NAME_RULE}"
    return None
