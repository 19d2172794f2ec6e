"""Benchmark the MCP server's start-up and list_problems latency; write benchmarks/results/server.json.

Measured, over stdio with raw JSON-RPC (so the client costs nothing):

- **start-up**: from spawning ``solforge serve`` to the answer of the first ``tools/list`` (target
  <= 1.5 s); the median of several cold starts, each with a fresh ledger.
- **list_problems**: round-trip latency of ``tools/call list_problems`` with 300 problems on the
  server (synthesised into a temporary folder), after the ledger has opened (target <= 50 ms);
  plus the same call in-process (the tool function alone) for comparison.

Usage::

    .venv/bin/python benchmarks/server/bench_startup.py [--starts 7] [--calls 50] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "server.json"
STARTUP_TARGET_S = 1.5
LIST_TARGET_MS = 50.0
PROBLEMS = 300


def _command() -> list[str]:
    script = Path(sys.executable).parent / "solforge"
    return [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "solforge.server"]


def _env(problems: Path, db: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SOLFORGE_PROBLEM_DIRS": str(problems),
        "SOLFORGE_ONLY_PROBLEM_DIRS": "1",
        "SOLFORGE_DB": f"sqlite:///{db}",
        "SOLFORGE_LOG_LEVEL": "WARNING",
    }


class StdioServer:
    """A ``solforge serve`` subprocess spoken to with raw JSON-RPC lines."""

    def __init__(self, problems: Path, db: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [*_command(), "--agent", "bench"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(problems, db),
        )
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int:
        assert self.proc.stdin is not None
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self._id += 1
            msg["id"] = self._id
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        return self._id

    def wait_for(self, request_id: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == request_id:
                return msg

    def handshake(self) -> None:
        self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        self.send("notifications/initialized", notify=True)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_startup(problems: Path, tmp: Path, starts: int) -> tuple[list[float], list[float]]:
    """Wall seconds from spawn to the first tools/list answer, and the server's CPU seconds until then.

    The CPU time is what the start-up costs on an idle machine (start-up is single-threaded: the ledger
    opens only a second later); the wall time also counts waiting for a busy machine's cores.
    """
    times: list[float] = []
    cpu: list[float] = []
    for i in range(starts):
        server = StdioServer(problems, tmp / f"startup-{i}.db")
        server.handshake()
        rid = server.send("tools/list", {})
        answer = server.wait_for(rid)
        times.append(time.perf_counter() - server.started)
        used = _cpu_seconds(server.proc.pid)
        if used is not None:
            cpu.append(used)
        assert len(answer["result"]["tools"]) >= 6, answer
        server.close()
    return times, cpu


def measure_list(problems: Path, tmp: Path, calls: int) -> tuple[list[float], int]:
    """Milliseconds per list_problems round trip over stdio, after the ledger opened; and the total."""
    server = StdioServer(problems, tmp / "list.db")
    server.handshake()
    server.wait_for(server.send("tools/list", {}))
    first = server.wait_for(
        server.send("tools/call", {"name": "list_problems", "arguments": {}})
    )  # opens the ledger
    total = first["result"]["structuredContent"]["total"]
    time.sleep(2.0)  # let the background worker start, as in steady use
    times = []
    for i in range(calls):
        args = {"offset": (i * 30) % PROBLEMS} if i % 2 else {"text": "synthetic", "category": "llm"}
        t0 = time.perf_counter()
        answer = server.wait_for(server.send("tools/call", {"name": "list_problems", "arguments": args}))
        times.append((time.perf_counter() - t0) * 1e3)
        assert not answer["result"].get("isError"), answer
    server.close()
    return times, total


def measure_in_process(problems: Path, calls: int) -> list[float]:
    """Milliseconds per list_problems call of the tool function itself (no transport, no ledger)."""
    from solforge.tools.problems import ListProblemsInput, list_problems
    from solforge.tools.testing import services_for, tool_context

    ctx = tool_context(services_for(problems))

    async def run() -> list[float]:
        await list_problems(ListProblemsInput(), ctx)  # first scan
        out = []
        for i in range(calls):
            t0 = time.perf_counter()
            await list_problems(ListProblemsInput(offset=(i * 30) % PROBLEMS), ctx)
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    return anyio.run(run)


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 4),
        "median": round(statistics.median(ordered), 4),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 4),
        "max": round(ordered[-1], 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=7, help="cold starts to time")
    parser.add_argument("--calls", type=int, default=50, help="list_problems calls to time")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from solforge.tools.testing import synthesise_problems

    with tempfile.TemporaryDirectory(prefix="solforge-bench-") as tmp_name:
        tmp = Path(tmp_name)
        problems = synthesise_problems(tmp / "problems", PROBLEMS)
        startup, startup_cpu = measure_startup(problems, tmp, args.starts)
        stdio_list, total = measure_list(problems, tmp, args.calls)
        in_process = measure_in_process(problems, args.calls)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    result = {
        "benchmark": "server start-up and list_problems",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg": [round(x, 2) for x in load] if load else None,
        },
        "problems": total,
        "startup_s": {
            **_summary(startup),
            "target": STARTUP_TARGET_S,
            "samples": [round(t, 4) for t in startup],
        },
        "startup_cpu_s": _summary(startup_cpu) if startup_cpu else None,
        "list_problems_stdio_ms": {**_summary(stdio_list), "target": LIST_TARGET_MS},
        "list_problems_in_process_ms": _summary(in_process),
        "meets_targets": {
            "startup": statistics.median(startup) <= STARTUP_TARGET_S,
            "startup_cpu": bool(startup_cpu) and statistics.median(startup_cpu) <= STARTUP_TARGET_S,
            "list_problems": statistics.median(stdio_list) <= LIST_TARGET_MS,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
