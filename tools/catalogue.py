"""A fast, cached index of the problems a server serves, for list_problems and get_problem.

Listing reads each ``definition.json`` as plain JSON (no validation) and counts workload lines, and
remembers the result until the files change, so listing 300 problems takes milliseconds. Opening one
problem (get_problem, compile, benchmark) validates it fully with :func:`solforge.problems.load_problem_folder`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from solforge.problems import FormatError, Problem, ProblemNotFound, load_problem_folder
from solforge.problems.load import close_names

log = logging.getLogger(__name__)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


@dataclass(frozen=True)
class ProblemEntry:
    """What listing needs to know about one problem, read without validation."""

    name: str
    folder: Path
    category: str | None
    op_type: str | None
    model: str | None
    description: str
    tags: tuple[str, ...]
    workloads: int
    broken: str | None = None
    """Why the folder could not be read, when it could not."""

    @property
    def haystack(self) -> str:
        return " ".join(
            [
                self.name,
                self.category or "",
                self.op_type or "",
                self.model or "",
                self.description,
                *self.tags,
            ]
        ).lower()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1.0


def _read_entry(folder: Path) -> ProblemEntry:
    definition = folder / "definition.json"
    try:
        data = json.loads(definition.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("definition.json is not a JSON object")
        workloads = 0
        wl = folder / "workload.jsonl"
        if wl.is_file():
            with wl.open("rb") as f:
                workloads = sum(1 for line in f if line.strip())
        tags = data.get("tags") or []
        return ProblemEntry(
            name=str(data.get("name") or folder.name),
            folder=folder,
            category=data.get("category") if isinstance(data.get("category"), str) else None,
            op_type=data.get("op_type") if isinstance(data.get("op_type"), str) else None,
            model=data.get("hf_id") if isinstance(data.get("hf_id"), str) else None,
            description=" ".join(str(data.get("description") or "").split()),
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            workloads=workloads,
        )
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return ProblemEntry(
            folder.name, folder, None, None, None, "", (), 0, broken=f"{type(exc).__name__}: {exc}"
        )


class ProblemIndex:
    """Problems found under a list of root folders (each holding one folder per problem).

    A name found under an earlier root hides the same name under a later one. Thread-safe.
    """

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots
        self._lock = threading.Lock()
        self._entries: dict[Path, tuple[float, float, ProblemEntry]] = {}
        self._problems: dict[Path, tuple[float, float, Problem]] = {}

    def entries(self) -> list[ProblemEntry]:
        """Every problem, sorted by name, re-reading only folders whose files changed."""
        seen: dict[str, ProblemEntry] = {}
        with self._lock:
            live: set[Path] = set()
            for root in self.roots:
                try:
                    children = sorted(root.iterdir())
                except OSError:
                    continue
                for folder in children:
                    definition = folder / "definition.json"
                    m_def = _mtime(definition)
                    if m_def < 0:
                        continue
                    m_wl = _mtime(folder / "workload.jsonl")
                    live.add(folder)
                    cached = self._entries.get(folder)
                    if cached and cached[0] == m_def and cached[1] == m_wl:
                        entry = cached[2]
                    else:
                        entry = _read_entry(folder)
                        self._entries[folder] = (m_def, m_wl, entry)
                    seen.setdefault(entry.name, entry)
            for gone in set(self._entries) - live:
                del self._entries[gone]
        return sorted(seen.values(), key=lambda e: e.name)

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def find(self, name: str) -> ProblemEntry:
        """The entry named ``name``.

        Raises
        ------
        ProblemNotFound
            With up to five close names, when there is none.
        """
        if not _NAME_RE.match(name or ""):
            raise ProblemNotFound(
                f"{name!r} is not a problem name (letters, digits, '._+-'); call list_problems to see the names"
            )
        entries = self.entries()
        for entry in entries:
            if entry.name == name:
                return entry
        close = close_names(name, [e.name for e in entries])
        if not close:
            parts = [p for p in re.split(r"[_\-.]", name.lower()) if len(p) > 2]
            close = [e.name for e in entries if any(p in e.name.lower() for p in parts)]
        hint = f"; did you mean {close[:5]}?" if close else "; call list_problems to see the names"
        raise ProblemNotFound(f"no problem named {name!r}{hint}")

    def load(self, name: str) -> Problem:
        """The validated problem named ``name``, cached until its files change.

        Raises
        ------
        ProblemNotFound
            When there is no such problem.
        FormatError
            When its files do not validate (the message names the file and field).
        """
        entry = self.find(name)
        if entry.broken:
            raise FormatError(f"problem {name!r} cannot be read: {entry.broken}")
        folder = entry.folder
        m_def, m_wl = _mtime(folder / "definition.json"), _mtime(folder / "workload.jsonl")
        with self._lock:
            cached = self._problems.get(folder)
            if cached and cached[0] == m_def and cached[1] == m_wl:
                return cached[2]
        problem = load_problem_folder(folder)
        with self._lock:
            self._problems[folder] = (m_def, m_wl, problem)
        return problem
