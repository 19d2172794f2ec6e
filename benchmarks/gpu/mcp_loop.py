"""The whole agent loop through a real MCP client, against `solforge serve` over stdio.

For one problem and each language given: list_problems -> read_docs -> get_problem ->
compile_kernel -> run_benchmark (-> wait_job) -> get_sol_score -> submit_solution, with the
server's own SQLite ledger and its local worker (a GPU lease per benchmark on a GPU machine).
Writes what each step answered (trimmed) to a JSON file.

    python benchmarks/gpu/mcp_loop.py --problem qwen3_8b_rmsnorm --languages pytorch triton cuda_cpp cute_dsl \
        --workloads 2 --out mcp_loop.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


async def _call(client: Client, log: list[dict[str, Any]], tool: str, args: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    data = result.structured_content or {}
    text = " ".join(getattr(c, "text", "") for c in result.content)
    # answer_bytes: what the agent's context pays for this answer (its text and its structured content)
    size = len(text.encode()) + len(json.dumps(data, default=str).encode())
    log.append({"tool": tool, "seconds": round(time.perf_counter() - started, 2), "is_error": result.is_error,
                "answer_bytes": size, "text": text[:600]})
    print(f"  {tool:16s} {log[-1]['seconds']:6.1f} s  {'ERROR ' if result.is_error else ''}{text[:160]!r}",
          file=sys.stderr)
    return data


async def _until_done(client: Client, log: list[dict[str, Any]], data: dict[str, Any]) -> dict[str, Any]:
    while data.get("state") not in ("done", "failed", "cancelled") and data.get("job_id"):
        data = await _call(client, log, "wait_job", {"job_id": data["job_id"], "wait_s": 45})
    return data


async def loop(problem: str, languages: list[str], workloads: int, home: Path, submit: set[str],
               out_path: Path) -> dict[str, Any]:
    env = {**os.environ, "SOLFORGE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "solforge.server.cli", "serve",
                                                                  "--agent", "gpu-loop"], env=env)
    out: dict[str, Any] = {"problem": problem, "date": datetime.now(UTC).isoformat(timespec="seconds"), "runs": []}
    async with Client(params) as client:
        log: list[dict[str, Any]] = []
        await _call(client, log, "list_problems", {"text": problem.split("_")[0]})
        await _call(client, log, "read_docs", {"query": "destination passing style"})
        info = await _call(client, log, "get_problem", {"name": problem})
        uuids = [w["uuid"] for w in info.get("workloads", [])][:workloads]
        out["setup"] = log
        for language in languages:
            log = []
            path = ROOT / "benchmarks" / "solutions" / problem / f"{language}.json"
            solution = json.loads(path.read_text())
            print(f"{language}:", file=sys.stderr)
            compiled = await _call(client, log, "compile_kernel", {"solution": solution, "wait_s": 50})
            while compiled.get("state") == "building":
                compiled = await _call(client, log, "compile_kernel", {"solution": solution, "wait_s": 50})
            bench = await _until_done(client, log, await _call(
                client, log, "run_benchmark", {"solution": solution, "workloads": uuids, "wait_s": 50}))
            score = await _call(client, log, "get_sol_score", {"job_id": bench["job_id"]}) if bench.get("job_id") else {}
            sub = await _until_done(client, log, await _call(client, log, "submit_solution",
                                                             {"solution": solution, "wait_s": 50})) if language in submit else {}
            out["runs"].append({"language": language, "steps": log, "benchmark": bench, "sol": score,
                                "submission": sub.get("submission")})
            out["runs"][-1]["ok"] = _run_ok(out["runs"][-1], submitted=language in submit)
            out["ledger"] = ledger_record(home)  # WAL: the server keeps writing while this reads
            out_path.write_text(json.dumps(out, indent=1, default=str))  # as it goes: a killed run keeps its part
        log = []
        out["leaderboard"] = await _call(client, log, "get_leaderboard", {"problem": problem})
        out["leaderboard_step"] = log[0]
        out["ok"] = bool(out["runs"]) and all(r["ok"] for r in out["runs"]) and not log[0]["is_error"]
    return out


def _run_ok(run: dict[str, Any], *, submitted: bool) -> bool:
    """Every step answered without an error, the benchmark passed, and a submission was accepted and ranked."""
    if any(step["is_error"] for step in run["steps"]) or run["benchmark"].get("state") != "done":
        return False
    if not submitted:
        return True
    sub = run.get("submission") or {}
    return bool(sub.get("accepted")) and sub.get("rank") is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problem", default="qwen3_8b_rmsnorm")
    parser.add_argument("--languages", nargs="+", default=["pytorch", "triton", "cuda_cpp", "cute_dsl"])
    parser.add_argument("--workloads", type=int, default=2)
    parser.add_argument("--home", type=Path, default=Path("/tmp/solforge-mcp-loop"))
    parser.add_argument("--submit", nargs="*", default=None, help="languages to submit (default: all)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    submit = set(args.languages if args.submit is None else args.submit)
    result = anyio.run(loop, args.problem, args.languages, args.workloads, args.home, submit, args.out)
    args.out.write_text(json.dumps(result, indent=1, default=str))  # the loop recorded the ledger as it went
    print(f"all steps ok: {result.get('ok')}", file=sys.stderr)
    return 0 if result.get("ok") else 1


def ledger_record(home: Path) -> dict[str, Any]:
    """What the server's ledger recorded: the slots, every lease and the event log (the queue's proof)."""
    from solforge.planner import Ledger

    ledger = Ledger.open(f"sqlite:///{home / 'ledger.db'}")
    try:
        return {"gpus": [g.model_dump(mode="json") for g in ledger.gpus()],
                "leases": [lease.model_dump(mode="json") for lease in ledger.lease_history()],
                "events": [e.model_dump(mode="json") for e in ledger.events(limit=5000)]}
    finally:
        ledger.close()


if __name__ == "__main__":
    sys.exit(main())
