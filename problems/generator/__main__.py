"""``python -m solforge.problems.generator [--check] [--out DIR]``: write or verify the catalogue."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..load import CATALOGUE_DIR
from . import build_catalogue, check_catalogue, write_catalogue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solforge.problems.generator",
        description="Write the bundled problem catalogue from templates and model configurations.",
    )
    parser.add_argument("--check", action="store_true", help="verify the folders match; exit 1 and list differences")
    parser.add_argument("--out", type=Path, default=CATALOGUE_DIR, help=f"catalogue folder (default {CATALOGUE_DIR})")
    args = parser.parse_args(argv)
    problems = build_catalogue()
    if args.check:
        differences = check_catalogue(args.out, problems)
        if differences:
            print(f"catalogue at {args.out} differs from the generator ({len(differences)}):", file=sys.stderr)
            for line in differences:
                print(f"  {line}", file=sys.stderr)
            print("run `python -m solforge.problems.generator` to regenerate", file=sys.stderr)
            return 1
        print(f"catalogue at {args.out} matches the generator ({len(problems)} problems)")
        return 0
    changed = write_catalogue(args.out, problems)
    print(f"wrote {len(problems)} problems to {args.out} ({len(changed)} files changed)")
    for path in changed:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
