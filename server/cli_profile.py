"""``solforge profile``: one call of a solution on one workload under Nsight Compute, as a compact answer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_RUN = 0, 1, 2, 3


def _profile(args: argparse.Namespace) -> int:
    from solforge.problems import SolforgeError, load_problem
    from solforge.sandbox.api import EvalEvent, EvalOptions, EvalRequest, ProfileRequest
    from solforge.sandbox.evaluate import evaluate
    from solforge.sandbox.profiling import largest_workload

    from .cli_solution import problem_reference, read_solution

    try:
        problem = load_problem(args.problem)
        solution = read_solution(Path(args.solution))
        options = EvalOptions(
            workloads=[args.workload or largest_workload(problem.workloads).uuid],
            rounds=args.rounds, device=args.device, gpu_index=args.gpu, target_arch=args.arch,
            time_baseline=False, cache_dir=Path(args.cache_dir) if args.cache_dir else None,
            profile=ProfileRequest(tool=args.tool, kernel=args.kernel, page=args.page),
        )
    except (SolforgeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    where = problem_reference(args.problem, problem)

    def on_event(event: EvalEvent) -> None:
        if event.kind == "progress" and not args.quiet:
            print(event.message, file=sys.stderr)

    try:
        report = evaluate(EvalRequest(problem=where, solution=solution, options=options), on_event=on_event)
    except (SolforgeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return _answer(report, as_json=args.json)


def _answer(report: Any, *, as_json: bool) -> int:
    if report.build is not None and not report.build.ok:
        print(f"build failed:\n{report.build.log}", file=sys.stderr)
        return EXIT_FAILED
    failed = [t for t in report.traces if t.evaluation is not None and t.evaluation.status.value != "PASSED"]
    if failed:
        ev = failed[0].evaluation
        print(f"{ev.status.value}: {ev.log[:3000]}", file=sys.stderr)
        return EXIT_FAILED
    if report.profile is None:
        print(report.note or "nothing was profiled", file=sys.stderr)
        return EXIT_NOT_RUN
    if as_json:
        print(report.profile.model_dump_json(indent=1))
    else:
        print(report.profile.text)
        if report.profile.pages:
            print(f"(page {report.profile.page} of {report.profile.pages})", file=sys.stderr)
    return EXIT_OK


def add_profile_command(sub: Any) -> None:
    p = sub.add_parser("profile", help="profile one call of a solution on one workload (Nsight Compute, or CUPTI)")
    p.add_argument("problem", help="catalogue name or problem folder")
    p.add_argument("--solution", required=True, help="solution.json")
    p.add_argument("--workload", metavar="UUID", help="the workload to profile (default: the largest)")
    p.add_argument("--kernel", type=int, metavar="N", help="show kernel N's raw Nsight Compute sections instead")
    p.add_argument("--page", type=int, default=1, help="the page of those sections")
    p.add_argument("--tool", choices=["auto", "ncu", "cupti"], default="auto")
    p.add_argument("--rounds", type=int, default=1, help="correctness rounds before the profiled call")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--gpu", type=int, help="physical GPU index")
    p.add_argument("--arch", help="compile target, e.g. sm_90a")
    p.add_argument("--cache-dir")
    p.add_argument("--json", action="store_true", help="the whole answer as JSON")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=_profile)
