"""``python -m solforge.server``: run the MCP server (the same as ``solforge serve``).

Kept for development and for environments where the console script is not on PATH; the options are
those of ``solforge serve``.
"""

from __future__ import annotations

import argparse

from .app import run_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solforge.server", description="Run the solforge MCP server."
    )
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp (default: stdio)")
    parser.add_argument(
        "--db", metavar="URL", help="ledger URL (default: $SOLFORGE_DB or the local SQLite file)"
    )
    parser.add_argument("--agent", metavar="NAME", help="the caller's identity on stdio (default: local)")
    parser.add_argument("--token", metavar="TOKEN", help="bearer token accepted on HTTP for --agent")
    parser.add_argument("--no-workers", action="store_true", help="do not run jobs in this process")
    args = parser.parse_args(argv)
    return run_server(
        http=args.http, db=args.db, agent=args.agent, token=args.token, workers=not args.no_workers
    )


if __name__ == "__main__":
    raise SystemExit(main())
