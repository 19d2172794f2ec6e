"""Scripted agents: real MCP clients that follow PROTOCOL.md with a fixed behaviour.

They test the swarm and the server end to end (and drive simulations and GPU smoke runs) without a
language model. Each one connects to the server over streamable HTTP with its bearer token and runs
the protocol's workflow: ``read_docs`` -> ``get_problem`` -> write ``solution.json`` ->
``compile_kernel`` -> ``run_benchmark`` (``wait_job`` while it runs) -> ``get_sol_score`` ->
``submit_solution``, then exits 0. Every tool call is printed as ``call <tool>``, one line each.

Behaviours
----------
good        the problem's reference as a pytorch solution (``reference_solution``): correct, baseline speed
bad         the reference with its outputs spoiled (x * 2 + 1): a wrong answer, submitted anyway
improving   ``--steps`` versions, each running the reference fewer times (k, ..., 2, 1): faster each time;
            benchmarks them all and submits the fastest; profiles its first passing version once
            (``profile_kernel``, as PROTOCOL.md advises: not every iteration), unless ``--no-profile``
cheating    the reference behind a cache keyed on input shapes that replays old outputs (a reward
            hack the evaluator rejects: fresh inputs every round); submitted anyway
crash       reads the docs and the problem, then exits with code 3
silent      reads the docs, then hangs without a word (the planner's silence detection restarts it)

Languages
---------
With ``--solutions DIR`` and ``--language`` (pytorch, triton, cuda_cpp, cute_dsl), an agent starts from
the hand-written ``DIR/<problem>/<language>.json`` when there is one (``benchmarks/solutions`` has
three problems in all four languages) instead of the reference. Its behaviour then wraps that kernel:
``improving`` calls it k, ..., 1 times; ``bad`` spoils its output in place; ``cheating`` replays outputs
by shape. A CUDA C++ kernel's entry is C++, which no Python wrapper reaches, so there ``improving``
first benchmarks the reference run k, ..., 2 times and then the kernel, ``bad`` is the kernel with a
compile error, and ``cheating`` replays the reference.

Usage
-----
Run by the swarm's command launcher (the address, token and assignment arrive in the environment)::

    solforge swarm run --problem qwen3_8b_rmsnorm --agents 4 --launcher command \\
        --command 'python -m solforge.planner.swarm.scripted --behaviour good,improving,cheating,bad'

A comma-separated list gives agent *i* the behaviour ``list[i % len(list)]`` ($SOLFORGE_AGENT_INDEX), and
a list of languages the language ``languages[(i // len(behaviours)) % len(languages)]``: every pair
comes up once in ``len(behaviours) * len(languages)`` agents.
By hand, against a running ``solforge serve --http``::

    python -m solforge.planner.swarm.scripted --url http://127.0.0.1:8765/mcp --token TOKEN \\
        --problem qwen3_8b_rmsnorm --workspace /tmp/agent --behaviour improving --steps 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

__all__ = ["BEHAVIOURS", "LANGUAGES", "Behaviour", "hand_written", "main", "solutions_for"]

Behaviour = Literal["good", "bad", "improving", "cheating", "crash", "silent"]
BEHAVIOURS: tuple[str, ...] = ("good", "bad", "improving", "cheating", "crash", "silent")
CRASH_EXIT = 3

_SPOIL = """

_solforge_reference_run = run


def _spoil(t):
    import torch

    if not isinstance(t, torch.Tensor):
        return t
    if t.dtype == torch.bool:
        return t.logical_not()
    if t.is_floating_point():
        return (t.float() * 2 + 1).to(t.dtype)
    return t + 1


def run(*args, **kwargs):
    out = _solforge_reference_run(*args, **kwargs)
    return tuple(_spoil(o) for o in out) if isinstance(out, (tuple, list)) else _spoil(out)
"""

_REPEAT = """

_solforge_reference_run = run
_REPEATS = {repeats}


def run(*args, **kwargs):
    out = None
    for _ in range(_REPEATS):
        out = _solforge_reference_run(*args, **kwargs)
    return out
"""

_REPLAY = """

_solforge_reference_run = run
_outputs = {}


def run(*args, **kwargs):
    import torch

    key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)
    if key not in _outputs:
        _outputs[key] = _solforge_reference_run(*args, **kwargs)
    return _outputs[key]
"""


# Wrappers appended to a hand-written kernel's entry file (destination-passing style: the last
# ``{outputs}`` arguments are the outputs, written in place). ``{entry}`` is its entry function.
_KERNEL_SPOIL = """

import torch

_solforge_kernel_run = {entry}


def {entry}(*args, **kwargs):
    _solforge_kernel_run(*args, **kwargs)
    for out in args[len(args) - {outputs}:]:
        if out.dtype == torch.bool:
            out.logical_not_()
        elif out.is_floating_point():
            out.mul_(2).add_(1)
        else:
            out.add_(1)
"""

_KERNEL_REPEAT = """

_solforge_kernel_run = {entry}


def {entry}(*args, **kwargs):
    for _ in range({repeats}):
        _solforge_kernel_run(*args, **kwargs)
"""

_KERNEL_REPLAY = """

_solforge_kernel_run = {entry}
_outputs = {{}}


def {entry}(*args, **kwargs):
    import torch

    key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)
    outs = args[len(args) - {outputs}:]
    if key in _outputs:
        for out, kept in zip(outs, _outputs[key]):
            out.copy_(kept)
        return
    _solforge_kernel_run(*args, **kwargs)
    _outputs[key] = [out.clone() for out in outs]
"""

LANGUAGES: tuple[str, ...] = ("pytorch", "triton", "cuda_cpp", "cute_dsl")


def hand_written(folder: Path | None, problem: str, language: str) -> dict[str, Any] | None:
    """The hand-written solution of ``problem`` in ``language`` under ``folder``, if there is one."""
    if folder is None:
        return None
    path = Path(folder) / problem / f"{language}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _variant(base: dict[str, Any], name: str, description: str, author: str, *, append: str = "") -> dict[str, Any]:
    """``base`` renamed, with ``append`` added to its entry file."""
    entry_file = base["spec"]["entry_point"].split("::")[0]
    sources = [dict(s, content=s["content"] + append) if s["path"] == entry_file else dict(s)
               for s in base["sources"]]
    return {**base, "name": name, "author": author, "description": description, "sources": sources}


def _kernel_solutions(behaviour: str, base: dict[str, Any], reference_versions: list[dict[str, Any]],
                      *, author: str, steps: int, outputs: int) -> list[dict[str, Any]]:
    """What a behaviour benchmarks, starting from a hand-written kernel."""
    language = base["spec"]["languages"][0]
    entry = base["spec"]["entry_point"].split("::")[1]
    fill = {"entry": entry, "outputs": max(1, outputs)}
    kernel = f"the hand-written {language} kernel"
    if behaviour == "good":
        return [_variant(base, f"{author}-{language}", kernel, author)]
    if language == "cuda_cpp":  # a C++ entry: no Python wrapper reaches it
        if behaviour == "improving":
            return [*reference_versions[:-1], _variant(base, f"{author}-{language}", kernel, author)]
        if behaviour == "bad":
            return [_variant(base, f"{author}-broken", f"{kernel}, broken on purpose", author,
                             append="\n#error solforge scripted agent: broken on purpose\n")]
        return reference_versions  # cheating: the reference behind a replay cache
    if behaviour == "improving":
        return [_variant(base, f"{author}-v{i + 1}", f"{kernel} called {k} times", author,
                         append=_KERNEL_REPEAT.format(repeats=k, **fill))
                for i, k in enumerate(range(max(1, steps), 0, -1))]
    if behaviour == "bad":
        return [_variant(base, f"{author}-spoiled", f"{kernel}, its output spoiled", author,
                         append=_KERNEL_SPOIL.format(**fill))]
    if behaviour == "cheating":
        return [_variant(base, f"{author}-replay", f"{kernel} behind a replay cache", author,
                         append=_KERNEL_REPLAY.format(**fill))]
    raise ValueError(f"behaviour {behaviour!r} writes no solution; choose one of {', '.join(BEHAVIOURS)}")


def _solution(problem: str, name: str, source: str, description: str, author: str) -> dict[str, Any]:
    return {
        "name": name,
        "definition": problem,
        "author": author,
        "description": description,
        "spec": {
            "languages": ["pytorch"],
            "entry_point": "solution.py::run",
            "destination_passing_style": False,
        },
        "sources": [{"path": "solution.py", "content": source}],
    }


def solutions_for(
    behaviour: str, problem: str, reference: str, *, author: str = "scripted", steps: int = 3,
    base: dict[str, Any] | None = None, outputs: int = 1,
) -> list[dict[str, Any]]:
    """The solution.json objects a behaviour benchmarks, in order (the last or best is submitted).

    ``base``: a hand-written solution (:func:`hand_written`) to start from instead of the reference,
    whose entry takes ``outputs`` output tensors last.

    Raises
    ------
    ValueError
        For a behaviour that writes no solution (crash, silent) or an unknown one.
    """
    if base is not None:
        from_reference: list[dict[str, Any]] = []
        if base["spec"]["languages"][0] == "cuda_cpp" and behaviour in ("improving", "cheating"):
            from_reference = solutions_for(behaviour, problem, reference, author=author, steps=steps)
        return _kernel_solutions(behaviour, base, from_reference, author=author, steps=steps, outputs=outputs)
    if behaviour == "good":
        return [_solution(problem, f"{author}-reference", reference, "the reference, as is", author)]
    if behaviour == "bad":
        return [_solution(problem, f"{author}-spoiled", reference + _SPOIL, "wrong on purpose", author)]
    if behaviour == "improving":
        return [
            _solution(
                problem,
                f"{author}-v{i + 1}",
                reference + _REPEAT.format(repeats=repeats),
                f"the reference run {repeats} times",
                author,
            )
            for i, repeats in enumerate(range(max(1, steps), 0, -1))
        ]
    if behaviour == "cheating":
        return [
            _solution(problem, f"{author}-replay", reference + _REPLAY, "replays outputs by shape", author)
        ]
    raise ValueError(f"behaviour {behaviour!r} writes no solution; choose one of {', '.join(BEHAVIOURS)}")


def _say(text: str) -> None:
    print(text, flush=True)


async def _call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    _say(f"call {tool}")
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {text}")
    return dict(result.structured_content or {})


async def _finish(client: Any, job: dict[str, Any]) -> dict[str, Any]:
    while job.get("state") in ("queued", "running"):
        job = await _call(client, "wait_job", {"job_id": job["job_id"], "wait_s": 30})
    return job


async def _profile_once(client: Any, sol: dict[str, Any]) -> None:
    """Where the time of one call goes; a server without a GPU refuses, and the agent goes on."""
    try:
        answer = await _finish(client, await _call(client, "profile_kernel", {"solution": sol, "wait_s": 30}))
    except RuntimeError as exc:
        _say(f"no profile: {exc}")
        return
    first = (answer.get("profile") or "").splitlines()
    _say(f"profiled {sol['name']}: {answer.get('state')}, {first[0] if first else answer.get('note')}")


def _rank(job: dict[str, Any]) -> tuple[bool, float]:
    passed = bool(job.get("total")) and job.get("passed") == job.get("total")
    score = job.get("mean_score") or 0.0
    speedup = job.get("geomean_speedup") or 0.0
    return passed, score if score > 0 else speedup / (1.0 + speedup)


async def run_agent(args: argparse.Namespace, behaviour: str, language: str = "pytorch") -> int:
    """Follow the protocol with ``behaviour`` (in ``language``, see :func:`hand_written`); returns the exit code."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    workspace = Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0))
    async with Client(streamable_http_client(args.url, http_client=http)) as client:
        await _call(client, "read_docs", {"topic": "protocol"})
        if behaviour == "silent":
            await anyio.sleep_forever()
        problem = await _call(client, "get_problem", {"name": args.problem, "max_chars": 100_000})
        reference = problem.get("reference")
        if not reference or problem.get("reference_truncated"):
            raise RuntimeError(f"get_problem returned no whole reference for {args.problem}")
        if behaviour == "crash":
            _say(f"crashing on purpose (exit {CRASH_EXIT})")
            return CRASH_EXIT
        base = hand_written(args.solutions, args.problem, language)
        _say(f"starting from the hand-written {language} solution" if base is not None
             else f"no hand-written {language} solution of {args.problem}: starting from the reference")
        versions = solutions_for(behaviour, args.problem, reference, author=args.agent, steps=args.steps,
                                 base=base, outputs=len(problem.get("outputs") or []))
        results: list[tuple[dict[str, Any], dict[str, Any]]] = []
        profiled = False
        for sol in versions:
            folder = workspace / sol["name"]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "solution.json").write_text(json.dumps(sol, indent=1), encoding="utf-8")
            await _call(client, "compile_kernel", {"solution": sol})
            bench_args: dict[str, Any] = {"solution": sol, "rounds": args.rounds, "wait_s": 30}
            job = await _finish(client, await _call(client, "run_benchmark", bench_args))
            if job.get("state") == "done":
                await _call(client, "get_sol_score", {"job_id": job["job_id"]})
            _say(
                f"{sol['name']}: {job.get('state')}, passed {job.get('passed')}/{job.get('total')}, "
                f"score {job.get('mean_score')}, speedup {job.get('geomean_speedup')}"
            )
            results.append((sol, job))
            if behaviour == "improving" and args.profile and not profiled and _rank(job)[0]:
                profiled = True
                await _profile_once(client, sol)
        passing = [r for r in results if _rank(r[1])[0]]
        chosen = max(passing, key=lambda r: _rank(r[1])[1])[0] if passing else results[-1][0]
        final = await _finish(
            client, await _call(client, "submit_solution", {"solution": chosen, "wait_s": 30})
        )
        sub = final.get("submission") or {}
        _say(
            f"submitted {chosen['name']}: accepted={sub.get('accepted')} score={sub.get('score')} "
            f"rank={sub.get('rank')} reason={sub.get('reason')}"
        )
    return 0


def _choices(spec: str, allowed: tuple[str, ...], option: str) -> list[str]:
    choices = [c.strip() for c in spec.split(",") if c.strip()]
    if not choices or any(c not in allowed for c in choices):
        raise SystemExit(f"{option} {spec!r}: choose from {', '.join(allowed)} (comma-separated)")
    return choices


def _pick(spec: str, index: int) -> str:
    choices = _choices(spec, BEHAVIOURS, "--behaviour")
    return choices[index % len(choices)]


def _pick_language(spec: str, behaviours: str, index: int) -> str:
    """The language of agent ``index``: each behaviour meets each language once in turn."""
    languages = _choices(spec, LANGUAGES, "--language")
    return languages[(index // len(_choices(behaviours, BEHAVIOURS, "--behaviour"))) % len(languages)]


def build_parser() -> argparse.ArgumentParser:
    env = os.environ
    p = argparse.ArgumentParser(
        prog="python -m solforge.planner.swarm.scripted",
        description="A scripted solforge agent: a real MCP client that follows PROTOCOL.md with a fixed behaviour.",
    )
    p.add_argument(
        "--behaviour", default="good", help=f"one of {', '.join(BEHAVIOURS)}, or a list by agent index"
    )
    p.add_argument("--url", default=env.get("SOLFORGE_URL"), help="MCP endpoint (default $SOLFORGE_URL)")
    p.add_argument(
        "--token", default=env.get("SOLFORGE_TOKEN"), help="bearer token (default $SOLFORGE_TOKEN)"
    )
    p.add_argument(
        "--problem", default=env.get("SOLFORGE_PROBLEM"), help="problem (default $SOLFORGE_PROBLEM)"
    )
    p.add_argument(
        "--workspace", default=env.get("SOLFORGE_WORKSPACE") or ".", help="default $SOLFORGE_WORKSPACE"
    )
    p.add_argument(
        "--agent", default=env.get("SOLFORGE_AGENT") or "scripted", help="author name in solutions"
    )
    p.add_argument("--index", type=int, default=int(env.get("SOLFORGE_AGENT_INDEX") or 0))
    p.add_argument("--rounds", type=int, default=3, help="correctness rounds per benchmark (1-10)")
    p.add_argument("--steps", type=int, default=3, help="improving: how many versions")
    p.add_argument("--no-profile", dest="profile", action="store_false",
                   help="improving: do not call profile_kernel on the first passing version")
    p.add_argument("--language", default="pytorch", help=f"one of {', '.join(LANGUAGES)}, or a list (see the module's help)")
    p.add_argument("--solutions", type=Path, help="folder of hand-written solutions (<problem>/<language>.json)")
    return p


def main(argv: list[str] | None = None) -> int:
    import anyio

    args = build_parser().parse_args(argv)
    if not args.url or not args.problem:
        print(
            "scripted agent: --url and --problem (or SOLFORGE_URL, SOLFORGE_PROBLEM) are required",
            file=sys.stderr,
        )
        return 2
    behaviour = _pick(args.behaviour, args.index)
    language = _pick_language(args.language, args.behaviour, args.index)
    _say(f"scripted agent {args.agent}: {behaviour} in {language} on {args.problem} at {args.url}")
    try:
        return anyio.run(run_agent, args, behaviour, language)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        print(f"scripted agent {args.agent} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
