"""Load ``queries.sql`` into one ``dict[str, TextClause]`` per backend.

The file's format is described in its own header. Backends are SQLAlchemy dialect names:
``sqlite`` and ``postgresql``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from sqlalchemy import TextClause, text

__all__ = ["DIALECTS", "load_queries", "parse_queries"]

DIALECTS = ("sqlite", "postgresql")

_TOKENS: dict[str, dict[str, str]] = {
    # julianday('now') has millisecond resolution and is fixed for the whole statement.
    "sqlite": {"$NOW": "((julianday('now') - 2440587.5) * 86400.0)", "$LEAST": "MIN", "$GREATEST": "MAX"},
    # statement_timestamp(): the start of the current statement, not of the transaction (now()), so a
    # long transaction cannot stamp stale deadlines.
    "postgresql": {
        "$NOW": "CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS DOUBLE PRECISION)",
        "$LEAST": "LEAST",
        "$GREATEST": "GREATEST",
    },
}

_HEADER = re.compile(r"^-- ([a-z_][a-z0-9_]*)(?:@(sqlite|postgresql))? --$")


def parse_queries(source: str) -> dict[str, dict[str, str]]:
    """Split the query file into ``{dialect: {name: sql}}`` with the tokens replaced.

    Parameters
    ----------
    source
        The text of a query file.

    Returns
    -------
    dict
        For each dialect in :data:`DIALECTS`, every query available to it: the shared ones and its
        own variants.

    Raises
    ------
    ValueError
        A name appears twice for one dialect, a section has no SQL, or a dialect-specific query
        lacks its twin.
    """
    sections: list[tuple[str, str | None, list[str]]] = []
    for line in source.splitlines():
        match = _HEADER.match(line.strip())
        if match:
            sections.append((match.group(1), match.group(2), []))
        elif sections:
            sections[-1][2].append(line)
    out: dict[str, dict[str, str]] = {d: {} for d in DIALECTS}
    for name, dialect, lines in sections:
        body = "\n".join(ln for ln in lines if not ln.lstrip().startswith("--")).strip()
        if not body:
            raise ValueError(f"query {name!r} has no SQL under its header")
        for target in (dialect,) if dialect else DIALECTS:
            if name in out[target]:
                raise ValueError(f"query {name!r} is defined twice for {target}")
            sql = body
            for token, value in _TOKENS[target].items():
                sql = sql.replace(token, value)
            out[target][name] = sql
    names = [set(out[d]) for d in DIALECTS]
    if names[0] != names[1]:
        raise ValueError(f"queries defined for one backend only: {sorted(names[0] ^ names[1])}")
    return out


@functools.cache
def load_queries(dialect: str) -> dict[str, TextClause]:
    """The packaged ``queries.sql`` for one backend, compiled to SQLAlchemy text clauses.

    Parameters
    ----------
    dialect
        ``sqlite`` or ``postgresql``.

    Raises
    ------
    ValueError
        For any other dialect.
    """
    if dialect not in DIALECTS:
        raise ValueError(f"the ledger supports {DIALECTS}, not {dialect!r}")
    source = resources.files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    return {name: text(sql) for name, sql in parse_queries(source)[dialect].items()}
