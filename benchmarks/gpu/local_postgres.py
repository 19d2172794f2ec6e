"""A throwaway PostgreSQL server for a run on a machine without one: started, its URL written, kept until
SIGTERM, then deleted.

    python benchmarks/gpu/local_postgres.py --url-file pg.url &

The GPU machines have no PostgreSQL and reach no package registry; the ``pgserver`` wheel (staged like the
others: ``stage-wheels.sh ... pgserver==0.1.4``) carries PostgreSQL 16's server binaries, and only those are
used here. As root the server runs as the ``postgres`` user (created by the caller: ``useradd postgres``).
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import threading
from pathlib import Path

from solforge.planner.testing import find_postgres_bin, throwaway_postgres


def pgserver_bin() -> Path | None:
    """The server binaries in the staged ``pgserver`` wheel, found without importing it: its ``__init__``
    needs packages (platformdirs, fasteners) that only its own Python API uses."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return folder if (folder / "initdb").is_file() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", type=Path,
                        help="the server's bin folder (default: Debian's, initdb on PATH, or the pgserver wheel's)")
    parser.add_argument("--url-file", type=Path, required=True, help="where the server's URL is written")
    args = parser.parse_args()
    done = threading.Event()
    for ending in (signal.SIGINT, signal.SIGTERM):
        signal.signal(ending, lambda *_: done.set())
    with throwaway_postgres(args.bin or find_postgres_bin() or pgserver_bin()) as cluster:
        url = cluster.url()
        args.url_file.write_text(url + "\n")
        print(f"PostgreSQL at {url}", file=sys.stderr)
        done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
