"""profile_kernel's answers for a hand-written solution in each kernel language, with their size and wall time.

    python benchmarks/gpu/profile_languages.py --out profile.json [--problem qwen3_8b_rmsnorm] [--tool auto]

Runs ``solforge profile`` (the same judge, sandbox and report reading as the MCP tool, without a server) on
the problem's largest workload (the default of both) for each language in ``benchmarks/solutions/<problem>/``, then once more with
``--kernel 1`` for the first page of the longest kernel's sections (from the kept report: no second run).
Each entry: the language, the tool that answered, the wall time of the command, the answer's size in
characters, the kernels, and the answer itself.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("pytorch", "triton", "cuda_cpp", "cute_dsl")


def _profile(problem: str, solution: Path, workload: str, tool: str, kernel: int | None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "solforge.server.cli", "profile", problem, "--solution", str(solution),
            "--workload", workload, "--tool", tool, "--json", "-q"]
    if kernel is not None:
        argv += ["--kernel", str(kernel)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    wall = round(time.perf_counter() - started, 2)
    if done.returncode != 0:
        return {"wall_s": wall, "exit": done.returncode, "error": (done.stderr or done.stdout)[-3000:]}
    answer = json.loads(done.stdout)
    return {"wall_s": wall, "exit": 0, "tool": answer["tool"], "chars": len(answer["text"]),
            "kernels": [{k: kernel[k] for k in ("index", "name", "duration_us", "bound")} for kernel in answer["kernels"]],
            "kernel_us": answer["kernel_us"], "sol_us": answer["sol_us"], "note": answer["note"],
            "pages": answer.get("pages"), "text": answer["text"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", default="qwen3_8b_rmsnorm")
    parser.add_argument("--tool", choices=["auto", "ncu", "cupti"], default="auto")
    parser.add_argument("--languages", nargs="+", default=list(LANGUAGES))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from solforge.problems import load_problem
    from solforge.sandbox.profiling import largest_workload

    workload = largest_workload(load_problem(args.problem).workloads).uuid  # profile_kernel's default too
    entries = []
    for language in args.languages:
        solution = ROOT / "benchmarks" / "solutions" / args.problem / f"{language}.json"
        if not solution.exists():
            continue
        entry: dict[str, Any] = {"language": language, "problem": args.problem, "workload": workload,
                                 **_profile(args.problem, solution, workload, args.tool, None)}
        longest = max(entry.get("kernels") or [], key=lambda k: k["duration_us"], default=None)
        if longest is not None and entry.get("tool") == "ncu":
            entry["kernel_page"] = _profile(args.problem, solution, workload, args.tool, longest["index"])
        entries.append(entry)
        print(f"{language}: exit {entry['exit']}, {entry.get('wall_s')} s, {entry.get('chars')} characters, "
              f"{len(entry.get('kernels') or [])} kernel(s)", flush=True)
        args.out.write_text(json.dumps({"entries": entries}, indent=1) + "\n")  # what finished survives a cut
    return 0 if entries and all(e["exit"] == 0 for e in entries) else 1


if __name__ == "__main__":
    raise SystemExit(main())
