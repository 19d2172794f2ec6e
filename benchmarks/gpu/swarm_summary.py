"""A swarm run's figures as ``swarm.json``: lease utilisation over the steady window, queue waits,
evaluations per GPU-hour, the headline in the seed's terms, and how many cheats ranked.

    python benchmarks/gpu/swarm_summary.py --db sqlite:///ledger.db --behaviour good,improving,cheating,bad \
        --out swarm.json [--run RUN_ID]      # default: the latest run
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from solforge.planner import Ledger
from solforge.planner.swarm import SwarmStore
from solforge.planner.swarm.summary import summarise_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="the ledger's URL")
    parser.add_argument("--run", help="the run's id (default: the latest)")
    parser.add_argument("--behaviour", default="", help="the scripted agents' behaviours, as the run was given them")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with Ledger.open(args.db) as ledger:
        run_id = args.run or SwarmStore(ledger).runs(limit=1)[0].id
        behaviours = [b.strip() for b in args.behaviour.split(",") if b.strip()]
        summary = summarise_run(ledger, run_id, behaviours=behaviours)
    args.out.write_text(summary.model_dump_json(indent=1) + "\n")
    print(summary.model_dump_json(exclude={"headline"}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
