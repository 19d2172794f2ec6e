"""The documents read_docs serves: the markdown topics under ``tools/docs/`` and PROTOCOL.md, parsed into
sections, and searched by term. Kept apart from the tool (:mod:`solforge.tools.docs`) so that the shared
services (:mod:`solforge.tools.base`) can hold a store without importing the tool's models.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from solforge.problems.load import close_names

from .errors import ToolInputError

__all__ = ["Doc", "DocStore", "Section"]

_WORD_RE = re.compile(r"[A-Za-z0-9_.:+#-]{2,}")
_EXCERPT_CHARS = 320


@dataclass(frozen=True)
class Section:
    heading: str
    start: int
    """Character offset of the section in its document."""
    text: str


@dataclass(frozen=True)
class Doc:
    topic: str
    title: str
    summary: str
    text: str
    sections: tuple[Section, ...]


def _parse(topic: str, text: str) -> Doc:
    title = topic
    lines = text.splitlines()
    for line in lines:
        if line.startswith("# "):
            title = line[2:].strip()
            break
    summary = ""
    body_started = False
    for line in lines:
        if line.startswith("# "):
            body_started = True
            continue
        if body_started and line.strip() and not line.startswith(("#", "```", "|", "<!--")):
            summary = line.strip()
            break
    if len(summary) > 160:
        summary = summary[:157] + "..."
    sections: list[Section] = []
    in_code = False
    starts: list[tuple[int, str]] = [(0, title)]
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"^#{1,4} ", line) and pos > 0:
            starts.append((pos, line.lstrip("#").strip()))
        pos += len(line)
    for i, (start, heading) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        sections.append(Section(heading=heading, start=start, text=text[start:end]))
    return Doc(topic=topic, title=title, summary=summary, text=text, sections=tuple(sections))


class DocStore:
    """The documentation a server serves, read from disk once and re-read when a file changes."""

    def __init__(self, docs_dir: Path, protocol_path: Path | None) -> None:
        self.docs_dir = docs_dir
        self.protocol_path = protocol_path
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[float, Doc]] = {}

    def _files(self) -> dict[str, Path]:
        files: dict[str, Path] = {}
        if self.protocol_path is not None and self.protocol_path.is_file():
            files["protocol"] = self.protocol_path
        if self.docs_dir.is_dir():
            for path in sorted(self.docs_dir.glob("*.md")):
                files.setdefault(path.stem, path)
            api = self.docs_dir / "api"
            if api.is_dir():
                for path in sorted(api.glob("*.md")):
                    files.setdefault(f"api-{path.stem}", path)
        return files

    def _load(self, topic: str, path: Path) -> Doc:
        mtime = path.stat().st_mtime_ns
        with self._lock:
            cached = self._cache.get(path)
            if cached and cached[0] == mtime:
                return cached[1]
        doc = _parse(topic, path.read_text(encoding="utf-8"))
        with self._lock:
            self._cache[path] = (mtime, doc)
        return doc

    def topics(self) -> list[Doc]:
        return [self._load(t, p) for t, p in self._files().items()]

    def get(self, topic: str) -> Doc:
        """The document named ``topic``.

        Raises
        ------
        ToolInputError
            Naming the topics there are, when there is no such topic.
        """
        files = self._files()
        # Agents write language names as in solution.json (cuda_cpp) while topics use '-' (cuda-cpp).
        wanted = _topic_key(topic)
        key = next((t for t in files if _topic_key(t) == wanted), wanted)
        if key not in files:
            close = [t for t in files if wanted in _topic_key(t) or _topic_key(t) in wanted]
            close += [t for t in close_names(wanted, list(files)) if t not in close]
            raise ToolInputError(
                f"no documentation topic {topic!r}"
                + (f"; did you mean {close}?" if close else "")
                + f" Topics: {sorted(files)}. Or search with read_docs(query='...')."
            )
        return self._load(key, files[key])

    def search(
        self, query: str, limit: int, topic: str | None = None
    ) -> list[tuple[Doc, Section, float, str]]:
        """Sections matching ``query`` best first: (doc, section, score, excerpt)."""
        terms = [t.lower() for t in _WORD_RE.findall(query)] or [query.lower().strip()]
        terms = list(dict.fromkeys(t for t in terms if t))
        docs = [self.get(topic)] if topic else self.topics()
        hits: list[tuple[Doc, Section, float, str, int]] = []
        for doc in docs:
            for section in doc.sections:
                low = section.text.lower()
                head = section.heading.lower()
                counts = {t: low.count(t) for t in terms}
                matched = [t for t, c in counts.items() if c]
                if not matched:
                    continue
                score = len(matched) * 10.0 + sum(min(c, 10) for c in counts.values())
                score += sum(5.0 for t in terms if t in head)
                if query.lower().strip() in low:
                    score += 15.0
                # Words of the query that stand together in the text ("hidden streams") say more than
                # the same words scattered over a long section that happens to repeat them.
                score += sum(10.0 for a, b in itertools.pairwise(terms) if f"{a} {b}" in low)
                rarest = min(matched, key=lambda t: counts[t])
                hits.append((doc, section, score, _excerpt(section.text, rarest), len(matched)))
        # A section holding one word of a several-word query is noise (every API entry says 'style')
        # once other sections hold more of the words: show it only when nothing better matches.
        most = max((h[4] for h in hits), default=0)
        if most >= 2:
            hits = [h for h in hits if h[4] >= 2]
        hits.sort(key=lambda h: (-h[2], h[0].topic, h[1].start))
        return [(doc, section, score, excerpt) for doc, section, score, excerpt, _ in hits[:limit]]


def _topic_key(topic: str) -> str:
    return topic.strip().lower().removesuffix(".md").replace("_", "-").replace(" ", "-")


def _excerpt(text: str, term: str) -> str:
    at = text.lower().find(term)
    start = max(0, at - _EXCERPT_CHARS // 3)
    chunk = text[start : start + _EXCERPT_CHARS]
    chunk = " ".join(chunk.split())
    return ("..." if start > 0 else "") + chunk + ("..." if start + _EXCERPT_CHARS < len(text) else "")
