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
``SOLFORGE_SCRATCH``            where a judge makes its candidates' scratch folders (default: the
                                working folder)
==============================  ==================================================================

Each has one reader below, and nothing else in solforge reads them (an empty value counts as unset). The
variables the swarm sets for the agents it starts (``SOLFORGE_URL``, ``SOLFORGE_PROBLEM``, ...) are
outputs for those agents, documented in :mod:`solforge.planner.swarm.launchers`. The rule for agent names
lives here too, so that the server and the ledger agree on it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "AGENT_NAME_RULE",
    "PROBLEM_DIRS_ENV",
    "TABLES_DIR_ENV",
    "agent_name",
    "agent_name_error",
    "baseline_tables_dir",
    "cache_dir",
    "cache_dir_is_set",
    "db_url",
    "defences_off",
    "home_dir",
    "log_level",
    "only_problem_dirs",
    "problem_dirs",
    "scratch_dir",
    "spare_pause",
    "target_arch",
    "token",
    "token_pairs",
]

PROBLEM_DIRS_ENV = "SOLFORGE_PROBLEM_DIRS"
TABLES_DIR_ENV = "SOLFORGE_BASELINE_TABLES"
DEFENCES_ENV = "SOLFORGE_DEFENCES"

_AGENT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@:")
AGENT_NAME_RULE = "1-64 letters, digits and - _ . @ :"
"""What an agent name may be, in words (for error messages)."""


def _get(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def cache_dir() -> Path:
    """The cache root: ``$SOLFORGE_CACHE`` (``~`` expanded), else ``~/.cache/solforge``."""
    env = _get("SOLFORGE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "solforge"


def cache_dir_is_set() -> bool:
    """Whether ``SOLFORGE_CACHE`` names the cache (the tools then use it over their own default)."""
    return _get("SOLFORGE_CACHE") is not None


def home_dir() -> Path | None:
    """``$SOLFORGE_HOME`` (``~`` expanded): where ``solforge serve`` keeps its SQLite ledger."""
    env = _get("SOLFORGE_HOME")
    return Path(env).expanduser() if env else None


def db_url() -> str | None:
    """``$SOLFORGE_DB``: the ledger's URL, for commands run without ``--db``."""
    return _get("SOLFORGE_DB")


def agent_name() -> str | None:
    """``$SOLFORGE_AGENT``: the stdio client's agent name."""
    return _get("SOLFORGE_AGENT")


def token() -> str | None:
    """``$SOLFORGE_TOKEN``: one bearer token, for the server's own agent or for a client."""
    return _get("SOLFORGE_TOKEN")


def token_pairs() -> list[str]:
    """``$SOLFORGE_TOKENS``: comma-separated ``agent:token`` pairs (or bare tokens), as written."""
    return [item.strip() for item in (_get("SOLFORGE_TOKENS") or "").split(",") if item.strip()]


def problem_dirs() -> list[Path]:
    """The folders named by ``$SOLFORGE_PROBLEM_DIRS``, in order (``~`` expanded, empty entries skipped)."""
    return [Path(p.strip()).expanduser() for p in (_get(PROBLEM_DIRS_ENV) or "").split(os.pathsep) if p.strip()]


def only_problem_dirs() -> bool:
    """``SOLFORGE_ONLY_PROBLEM_DIRS=1``: serve those folders only, without the bundled catalogue."""
    return _get("SOLFORGE_ONLY_PROBLEM_DIRS") == "1"


def target_arch() -> str | None:
    """``$SOLFORGE_TARGET_ARCH``: the architecture builds target when no GPU is visible (``sm_90a``)."""
    return _get("SOLFORGE_TARGET_ARCH")


def baseline_tables_dir() -> Path | None:
    """``$SOLFORGE_BASELINE_TABLES``: a folder of baseline tables to use instead of the shipped ones."""
    env = _get(TABLES_DIR_ENV)
    return Path(env) if env else None


def defences_off(environ: Mapping[str, str] | None = None) -> bool:
    """``SOLFORGE_DEFENCES=off`` (or 0, false, no) in a judge's environment, ``environ`` when given (measurements
    only: :func:`solforge.sandbox.defences.defences_enabled` keeps them on for every submission)."""
    value = (environ if environ is not None else os.environ).get(DEFENCES_ENV, "").strip().lower()
    return value in ("off", "0", "false", "no")


def spare_pause() -> bool:
    """Whether starting spare processes pause while a timed loop runs (``SOLFORGE_SPARE_PAUSE=0``: they do not)."""
    return _get("SOLFORGE_SPARE_PAUSE") != "0"


def spares_ahead() -> int:
    """``$SOLFORGE_SPARES_AHEAD``: how many evaluations beyond the next one a warm judge keeps started processes
    for (default 0). With evaluations back to back (the catalogue's run), the next one's processes are still
    importing torch when it starts; one evaluation ahead, it takes processes started an evaluation earlier. Each
    process holds a CUDA context and a torch's memory, so a swarm's many judges keep the default."""
    value = _get("SOLFORGE_SPARES_AHEAD")
    try:
        return max(0, int(value)) if value else 0
    except ValueError:
        return 0


def log_level() -> str | None:
    """``$SOLFORGE_LOG_LEVEL``: the server's log level (``DEBUG``, ``INFO``, ...)."""
    return _get("SOLFORGE_LOG_LEVEL")


def scratch_dir() -> Path | None:
    """``$SOLFORGE_SCRATCH``: where a judge makes its candidates' scratch folders."""
    env = _get("SOLFORGE_SCRATCH")
    return Path(env) if env else None


def agent_name_error(name: str) -> str | None:
    """Why ``name`` cannot be an agent's name, or None when it can."""
    if not name or len(name) > 64 or not set(name) <= _AGENT_NAME_CHARS:
        return f"agent name {name!r} is not valid: use {AGENT_NAME_RULE}"
    return None
