"""read_docs: the protocol and the kernel-writing guides, by topic or by full-text search, in bounded pages.

Topics are the markdown files under ``tools/docs/`` (``api/`` holds the generated API references) plus
``protocol`` (PROTOCOL.md at the repository root). A topic is read a page at a time; a search returns
short excerpts, each with the offset to read on from. The documents themselves are kept by
:class:`solforge.tools.doc_store.DocStore`.
"""

from __future__ import annotations

from pydantic import Field

from .base import MAX_MAX_CHARS, ToolContext, ToolModel, ToolResult
from .errors import ToolInputError


class ReadDocsInput(ToolModel):
    """What to read. No arguments: the list of topics."""

    topic: str | None = Field(default=None, max_length=100)
    """A topic from the list (e.g. 'protocol', 'solution-format', 'cuda-cpp', 'triton', 'cute-dsl', 'gpu-h200')."""
    query: str | None = Field(default=None, min_length=1, max_length=300)
    """Words to search for across all topics (or within topic, when both are given)."""
    offset: int = Field(default=0, ge=0)
    """Character offset to read the topic from: the next_offset of the previous page, or a search hit's offset."""
    max_chars: int = Field(default=7_000, ge=500, le=MAX_MAX_CHARS)
    """Page size in characters."""
    max_results: int = Field(default=8, ge=1, le=30)
    """Search hits to return."""


class TopicInfo(ToolResult):
    topic: str
    title: str
    chars: int
    summary: str


class SearchHit(ToolResult):
    topic: str
    section: str
    offset: int
    """Call read_docs(topic=..., offset=...) to read from this section on."""
    excerpt: str


class ReadDocsResult(ToolResult):
    """A list of topics, a page of one topic, or search hits."""

    mode: str
    """'topics', 'read' or 'search'."""
    topics: list[TopicInfo] | None = None
    topic: str | None = None
    title: str | None = None
    offset: int | None = None
    text: str | None = None
    total_chars: int | None = None
    next_offset: int | None = None
    """Offset of the next page; null when this page ends the topic."""
    query: str | None = None
    hits: list[SearchHit] | None = None

    def render(self) -> str:
        if self.mode == "topics":
            lines = [
                "Documentation topics (read one with read_docs(topic=...), or search with read_docs(query=...)):"
            ]
            lines += [f"- {t.topic}: {t.title} ({t.chars} chars) - {t.summary}" for t in self.topics or []]
            return "\n".join(lines)
        if self.mode == "search":
            if not self.hits:
                return f"No documentation matches {self.query!r}. Try other words, or read_docs() for the topics."
            lines = [
                f"{len(self.hits)} sections match {self.query!r} (read on with read_docs(topic, offset)):"
            ]
            for h in self.hits:
                lines.append(f"- [{h.topic} @ offset {h.offset}] {h.section}: {h.excerpt}")
            return "\n".join(lines)
        end = (self.offset or 0) + len(self.text or "")
        head = f"[{self.topic}: characters {self.offset}-{end} of {self.total_chars}]"
        tail = (
            f"\n[continued: call read_docs(topic={self.topic!r}, offset={self.next_offset})]"
            if self.next_offset is not None
            else "\n[end of topic]"
        )
        return head + "\n" + (self.text or "") + tail


async def read_docs(args: ReadDocsInput, ctx: ToolContext) -> ReadDocsResult:
    """List the documentation topics, read one a page at a time, or search them.

    Raises
    ------
    ToolInputError
        For an unknown topic or an offset past the end.
    """
    store = ctx.services.docs
    if args.query:
        hits = store.search(args.query, args.max_results, args.topic)
        return ReadDocsResult(
            mode="search",
            query=args.query,
            hits=[
                SearchHit(topic=d.topic, section=s.heading, offset=s.start, excerpt=e) for d, s, _, e in hits
            ],
        )
    if not args.topic:
        return ReadDocsResult(
            mode="topics",
            topics=[
                TopicInfo(topic=d.topic, title=d.title, chars=len(d.text), summary=d.summary)
                for d in store.topics()
            ],
        )
    doc = store.get(args.topic)
    if args.offset >= len(doc.text) and len(doc.text) > 0:
        raise ToolInputError(
            f"offset {args.offset} is past the end of {doc.topic!r} ({len(doc.text)} characters)"
        )
    # Leave room for the header and the continuation line within max_chars.
    size = max(200, args.max_chars - 200)
    end = min(len(doc.text), args.offset + size)
    if end < len(doc.text):
        # End the page on a line boundary when one is near, so code blocks are not cut mid-line.
        cut = doc.text.rfind("\n", args.offset + size // 2, end)
        if cut > 0:
            end = cut + 1
    return ReadDocsResult(
        mode="read",
        topic=doc.topic,
        title=doc.title,
        offset=args.offset,
        text=doc.text[args.offset : end],
        total_chars=len(doc.text),
        next_offset=end if end < len(doc.text) else None,
    )
