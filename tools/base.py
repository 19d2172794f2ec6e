"""What every tool shares: the model bases, the settings, the per-call context and text budgets.

A tool is a plain async function ``fn(args: SomeInput, ctx: ToolContext) -> SomeResult``. It knows
nothing of MCP: the server (``solforge.server``) registers it, and tests call it directly.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from solforge.problems import CATALOGUE_DIR, config
from solforge.problems.load import env_problem_dirs

if TYPE_CHECKING:
    from .catalogue import ProblemIndex
    from .doc_store import DocStore

DEFAULT_MAX_CHARS = 8_000
"""The most characters a tool answers with unless the agent asks for more (``max_chars``)."""
MAX_MAX_CHARS = 100_000
"""The most an agent may ask for in one answer; past this it pages with ``offset``."""
MAX_WAIT_S = 50.0
"""The longest a tool blocks waiting for a job. Cursor and Claude Code over HTTP give a call about 60 s."""
DEFAULT_WAIT_S = 45.0

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""``progress(done, total, message)``: the server forwards it as an MCP progress notification."""


class ToolModel(BaseModel):
    """Base of every tool input model: field docstrings become the schema's descriptions.

    Validators are built on first use (``defer_build``): the server publishes schemas from a cache
    at start-up and builds a model only when its tool is first called.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", defer_build=True)


class ToolResult(BaseModel):
    """Base of every tool result: structured data plus :meth:`render`, the concise text the agent reads."""

    model_config = ConfigDict(use_attribute_docstrings=True, defer_build=True)

    def render(self) -> str:
        """The text form of the result, compact and complete enough to act on."""
        return self.model_dump_json(indent=1, exclude_none=True)


def _find_protocol() -> Path | None:
    # PROTOCOL.md lives at the repository root; an editable install (the supported one) finds it here.
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "PROTOCOL.md", here / "docs" / "PROTOCOL.md"):
        if candidate.is_file():
            return candidate
    return None


@dataclass
class ToolSettings:
    """Where the tools find problems, docs and caches, and how long they may block."""

    problem_dirs: tuple[Path, ...] = ()
    """Folders holding problem folders, searched in order before the bundled catalogue."""
    include_catalogue: bool = True
    """Also serve the bundled catalogue (``solforge.problems.CATALOGUE_DIR``)."""
    docs_dir: Path = field(default_factory=lambda: Path(__file__).resolve().parent / "docs")
    protocol_path: Path | None = field(default_factory=_find_protocol)
    cache_dir: Path | None = None
    """Build cache; None: $SOLFORGE_CACHE or ~/.cache/solforge."""
    max_wait_s: float = DEFAULT_WAIT_S
    """Default wait of run_benchmark and submit_solution before they hand back a job handle."""
    allow_local_paths: bool = True
    """Accept ``solution_path`` (a file on the server's machine). Off for a server reached over the network."""
    target_arch: str | None = None
    """Default compile target (sm_90a, sm_100a); None: the visible GPU's, or sm_90a without one."""
    compile_timeout_s: float = 300.0

    @classmethod
    def from_env(cls, **overrides: Any) -> ToolSettings:
        """Settings from ``SOLFORGE_PROBLEM_DIRS`` (os.pathsep-separated), ``SOLFORGE_CACHE`` and
        ``SOLFORGE_TARGET_ARCH``, then ``overrides``."""
        values: dict[str, Any] = {"problem_dirs": tuple(env_problem_dirs())}
        if config.cache_dir_is_set():
            values["cache_dir"] = config.cache_dir()
        if arch := config.target_arch():
            values["target_arch"] = arch
        if config.only_problem_dirs():
            values["include_catalogue"] = False
        values.update(overrides)
        return cls(**values)

    @property
    def problem_roots(self) -> tuple[Path, ...]:
        roots = self.problem_dirs
        if self.include_catalogue and CATALOGUE_DIR not in roots:
            roots = (*roots, CATALOGUE_DIR)
        return roots


LedgerGetter = Callable[[], Awaitable[Any]]
"""Returns the open :class:`solforge.planner.Ledger` (opening it on first use), or raises ServiceUnavailable."""


class ToolServices:
    """The long-lived state the tools share within one server: settings, problem index, docs, ledger.

    Parameters
    ----------
    settings
        Where things are; see :class:`ToolSettings`.
    ledger
        An async getter of the ledger, or None when this server runs without one (then the tools
        that need it answer ServiceUnavailable and the others work).
    """

    def __init__(self, settings: ToolSettings | None = None, ledger: LedgerGetter | None = None) -> None:
        from .catalogue import ProblemIndex
        from .doc_store import DocStore

        self.settings = settings or ToolSettings.from_env()
        self.problems: ProblemIndex = ProblemIndex(self.settings.problem_roots)
        self.docs: DocStore = DocStore(self.settings.docs_dir, self.settings.protocol_path)
        self._ledger = ledger

    @property
    def has_ledger(self) -> bool:
        return self._ledger is not None

    async def ledger(self) -> Any:
        """The open ledger.

        Raises
        ------
        ServiceUnavailable
            When this server has no ledger.
        """
        from .errors import ServiceUnavailable

        if self._ledger is None:
            raise ServiceUnavailable(
                "this solforge server runs without a ledger, so jobs, scores and submissions are unavailable; "
                "start it with `solforge serve` (which opens one) or pass --db URL"
            )
        return await self._ledger()


@dataclass
class ToolContext:
    """What one tool call knows besides its arguments: who calls, the shared services, how to report progress."""

    services: ToolServices
    agent: str
    """The caller's identity (its bearer token's agent over HTTP, --agent on stdio). Jobs and submissions carry it."""
    progress_fn: ProgressFn | None = None
    _last_progress: float = field(default=-1.0, repr=False)

    @property
    def settings(self) -> ToolSettings:
        return self.services.settings

    async def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; values that do not increase are dropped (MCP requires increasing progress)."""
        if self.progress_fn is None or done <= self._last_progress:
            return
        self._last_progress = done
        await self.progress_fn(done, total, message)


def clip(text: str, limit: int, *, hint: str = "") -> tuple[str, bool]:
    """Cut ``text`` to at most ``limit`` characters, marking the cut.

    Parameters
    ----------
    text
        The text to bound.
    limit
        The most characters to keep (the marker included).
    hint
        What to call to see the rest, appended to the marker.

    Returns
    -------
    tuple[str, bool]
        The bounded text and whether anything was cut.
    """
    if len(text) <= limit:
        return text, False
    marker = f"\n[... {len(text) - limit} more characters cut{'; ' + hint if hint else ''}]"
    keep = max(0, limit - len(marker))
    return text[:keep] + marker, True


def clip_lines(lines: list[str], max_lines: int, max_chars: int) -> tuple[list[str], int]:
    """Keep at most ``max_lines`` lines and ``max_chars`` characters; return them and how many were left out."""
    kept: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        line = line if len(line) <= 400 else line[:397] + "..."
        if used + len(line) > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    return kept, len(lines) - len(kept)


_MARKER_ONLY = re.compile(r"^[\s^~|+-]*$")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning)\b:?")
_LOCATION = re.compile(r'(:\d+\b|File ".*", line \d+)')
_ERROR_WORDS = re.compile(r"(error|exception|failed|undefined|not found|invalid)", re.IGNORECASE)


def error_blocks(log: str, max_blocks: int = 12, max_chars: int = 300) -> list[str]:
    """The distinct errors of a log, one entry each: a line that starts a message, with the indented
    lines under it (a source line, a caret) folded into it, so one SyntaxError is one entry."""
    blocks: list[list[str]] = []
    for line in log.splitlines():
        if not line.strip():
            continue
        continues = line[:1].isspace() or _MARKER_ONLY.match(line)
        # Python puts the exception line after the location, source and caret it explains.
        explains = _EXCEPTION_LINE.match(line) and blocks and _LOCATION.search(blocks[-1][0])
        if blocks and (continues or explains):
            blocks[-1].append(line.strip())
        else:
            blocks.append([line.strip()])
    out = [" | ".join(b)[:max_chars] for b in blocks]
    return list(dict.fromkeys(out))[:max_blocks]


def key_error_line(text: str) -> str:
    """The line of a log that says what went wrong: the last one naming an error, else the last one
    that is more than a caret or a marker."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("[... ")]
    meaningful = [ln for ln in lines if not _MARKER_ONLY.match(ln)]
    named = [ln for ln in meaningful if _ERROR_WORDS.search(ln)]
    return (named or meaningful or [text.strip()])[-1]
