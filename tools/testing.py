"""Test support that ships with the tools: small problems, solutions, and a ledger with a worker.

Tests of the tools, of the MCP server and the start-up benchmark build on these, on the CPU::

    from solforge.tools.testing import ledger_with_worker, services_for, write_rmsnorm_problem

    root = write_rmsnorm_problem(tmp_path / "problems")
    with ledger_with_worker() as ledger:                     # SQLite in memory, the fake runner
        services = services_for(root, ledger=ledger)
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from .base import ToolContext, ToolServices, ToolSettings

RMSNORM = "tiny_rmsnorm"
"""Name of the problem :func:`write_rmsnorm_problem` writes."""
HIDDEN = 256

RMSNORM_REFERENCE = """import torch


@torch.no_grad()
def run(hidden_states, weight, eps):
    x = hidden_states.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x * weight.to(torch.float32)).to(hidden_states.dtype)
"""

RMSNORM_SOLUTION = """import torch


def run(hidden_states, weight, eps, output):
    x = hidden_states.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    output.copy_((x * weight.float()).to(output.dtype))
"""
"""A correct pytorch solution of :data:`RMSNORM` (destination-passing style)."""

WRONG_SOLUTION = """def run(hidden_states, weight, eps, output):
    output.zero_()
"""


def rmsnorm_definition(name: str = RMSNORM, *, hidden: int = HIDDEN, **extra: Any) -> dict[str, Any]:
    """A small RMSNorm definition (SOL-ExecBench format)."""
    return {
        "name": name,
        "op_type": "rmsnorm",
        "hf_id": "Qwen/Qwen3-8B",
        "category": "llm",
        "description": "RMSNorm over the hidden dimension (a small test problem).",
        "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": hidden}},
        "inputs": {
            "hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"},
            "weight": {"shape": ["hidden_size"], "dtype": "bfloat16"},
            "eps": {"shape": None, "dtype": "float32"},
        },
        "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}},
        "reference": RMSNORM_REFERENCE,
        "tags": ["norm"],
        **extra,
    }


def write_problem(root: Path, definition: dict[str, Any], batch_sizes: tuple[int, ...] = (1, 7, 33)) -> Path:
    """Write one problem folder under ``root`` (created) and return ``root``."""
    folder = root / definition["name"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "definition.json").write_text(json.dumps(definition, indent=1))
    lines = [
        json.dumps(
            {
                "uuid": f"{definition['name'][:20]}-{i:04d}",
                "axes": {"batch_size": b},
                "inputs": {"eps": {"type": "scalar", "value": 1e-5}},
            }
        )
        for i, b in enumerate(batch_sizes)
    ]
    (folder / "workload.jsonl").write_text("\n".join(lines) + "\n")
    return root


def write_rmsnorm_problem(root: Path, name: str = RMSNORM) -> Path:
    """Write :data:`RMSNORM` under ``root``; return ``root``."""
    return write_problem(root, rmsnorm_definition(name))


CATEGORIES = ("llm", "diffusion", "vision", "audio", "video", "multimodal")
OPS = ("rmsnorm", "gemm", "rope", "attention", "moe", "softmax", "silu_mul", "layernorm")
MODELS = (
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B",
    "black-forest-labs/FLUX.1-dev",
    "openai/whisper-large-v3",
)


def synthesise_problems(root: Path, count: int) -> Path:
    """Write ``count`` distinct small problems under ``root`` (for listing benchmarks); return ``root``."""
    for i in range(count):
        definition = rmsnorm_definition(
            f"synth_{OPS[i % len(OPS)]}_{i:04d}",
            op_type=OPS[i % len(OPS)],
            category=CATEGORIES[i % len(CATEGORIES)],
            hf_id=MODELS[i % len(MODELS)],
            description=f"Synthetic problem {i} for listing benchmarks ({OPS[i % len(OPS)]}).",
        )
        write_problem(root, definition, batch_sizes=tuple(range(1, 2 + i % 16)))
    return root


def solution(
    code: str = RMSNORM_SOLUTION,
    *,
    definition: str = RMSNORM,
    name: str = "v1",
    language: str = "pytorch",
    description: str | None = None,
) -> dict[str, Any]:
    """A solution.json object with one Python source."""
    data: dict[str, Any] = {
        "name": name,
        "definition": definition,
        "author": "tests",
        "spec": {"languages": [language], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": code}],
    }
    if description is not None:
        data["description"] = description
    return data


def fake_solution(*, definition: str = RMSNORM, name: str = "fake", **behaviour: Any) -> dict[str, Any]:
    """A solution the planner's fake runner evaluates with ``behaviour`` (see solforge.planner.testing)."""
    return solution(
        f"# {name}\ndef run(*args):\n    pass\n",
        definition=definition,
        name=name,
        description=json.dumps(behaviour),
    )


def services_for(
    *roots: Path, ledger: Any = None, cache_dir: Path | None = None, allow_local_paths: bool = True
) -> ToolServices:
    """ToolServices over ``roots`` only (no bundled catalogue), with an optional open ledger."""
    settings = ToolSettings(
        problem_dirs=tuple(roots),
        include_catalogue=False,
        cache_dir=cache_dir,
        allow_local_paths=allow_local_paths,
    )

    async def get() -> Any:
        return ledger

    return ToolServices(settings, ledger=get if ledger is not None else None)


@contextlib.contextmanager
def ledger_with_worker(
    runner: Literal["fake", "sandbox"] | Any = "fake", *, url: str = "sqlite://", agents: tuple[str, ...] = ()
) -> Iterator[Any]:
    """An open ledger with a running in-process worker (one CPU slot, one compile slot), fast timings.

    ``runner="fake"`` uses the planner's fake evaluation process (behaviour in the solution's
    description); ``"sandbox"`` runs the real sandbox on the CPU; any other value is the worker's runner.
    """
    from solforge.planner import Ledger, SandboxRunner, Worker, WorkerConfig
    from solforge.planner.testing import fake_runner

    config = WorkerConfig(
        lease_s=2.0,
        heartbeat_s=0.1,
        poll_s=0.02,
        retry_backoff_s=0.0,
        kill_grace_s=1.0,
        health_interval_s=3600.0,
    )
    ledger = Ledger.open(url)
    for agent in agents:
        ledger.ensure_agent(agent)
    worker = Worker(
        ledger,
        fake_runner() if runner == "fake" else SandboxRunner() if runner == "sandbox" else runner,
        cpu_slots=1,
        compile_slots=1,
        gpus=[],
        config=config,
    )
    worker.start()
    try:
        yield ledger
    finally:
        worker.stop(timeout_s=10)
        ledger.close()


def tool_context(services: ToolServices, agent: str = "alice") -> ToolContext:
    """A tool context for ``agent`` that records its progress notifications in ``ctx.sent``."""
    sent: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        sent.append((done, total, message))

    ctx = ToolContext(services=services, agent=agent, progress_fn=progress)
    ctx.sent = sent  # type: ignore[attr-defined]
    return ctx
