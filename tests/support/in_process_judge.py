"""A judge driven through an in-process candidate channel: the judge's own logic, with no process started.

The judge (:class:`solforge.sandbox.judge.Judge`) runs here as it runs in its process, with two seams replaced:

- its spare pool hands out :class:`InProcessCandidate` objects instead of started processes. Each answers the
  judge's commands with the real :class:`solforge.sandbox.candidate.Harness` (defences off: its audit hook and
  integrity checks belong to a process of their own), or with a scripted answer where a test stands in for
  a hang, a crash or a forged record;
- its builds are the solution's sources, executed in a fresh module namespace of this process.

That is only acceptable because every "solution" here is the test's own code. It lives under tests/ so that
nothing in the package can reach it: in solforge, candidate code never runs in the judge.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from solforge.problems import Solution, load_problem
from solforge.sandbox.api import BuildReport, EvalOptions, EvalReport, EvalRequest
from solforge.sandbox.candidate import Harness, _guarded
from solforge.sandbox.judge import Judge, JudgeState

Answer = dict[str, Any]
Script = Callable[[dict[str, Any], "InProcessCandidate"], Answer | None]
"""Given a command and the candidate, a scripted answer, or None to let the real harness answer."""

FAST = {"rounds": 2, "iterations": 5, "warmup": 1, "device": "cpu", "run_timeout_s": 60}


def _copied(value: Any) -> Any:
    """What the candidate receives: on the CPU every tensor travels by value, so it never aliases the judge's."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_copied(v) for v in value)
    return value


def entry_of(solution: Solution) -> Callable[..., Any]:
    """The entry function of a one-file Python solution, executed in a namespace of its own."""
    source = solution.source(solution.spec.entry_file)
    assert source is not None, f"{solution.name}: no entry file"
    namespace: dict[str, Any] = {"__name__": f"in_process_{solution.name}"}
    exec(compile(source.content, solution.spec.entry_file, "exec"), namespace)  # the test's own code, never an agent's
    return namespace[solution.spec.entry_symbol]


class InProcessCandidate:
    """Stands where a :class:`~solforge.sandbox.processes.CandidateProcess` stands, in this process."""

    warm = True

    def __init__(self, folder: Path, script: Script | None, log: list[tuple[str, dict[str, Any]]], *,
                 defences: bool) -> None:
        self.folder = folder
        self.home = folder / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / "candidate.log"
        self.log_path.touch()
        self.script = script
        self.log = log
        """Every command the judge sent to any candidate of this pool, with the candidate's own state."""
        self.harness = Harness(sock=None)  # type: ignore[arg-type]  (answers go back as return values)
        # The harness's defences as the judge's profile sets them (fresh inputs for every timed call, the
        # checked call on the judge's secret inputs, plain-tensor and input-mutation checks), less what needs
        # a process of its own: the audit hook and the integrity snapshot are never installed here.
        self.harness.defences = defences
        self.alive = True
        self.trusted = False
        self.timeouts: list[float] = []
        """The limit the judge gave each command."""

    def wait_warm(self, timeout_s: float, poll_s: float = 0.005) -> bool:
        return self.alive

    def request(self, cmd: dict[str, Any], timeout_s: float, *, cuda_ipc: bool,
                blob_limit: int = 0) -> tuple[Answer, bytes | None]:
        assert self.alive, "the judge sent a command to a candidate it had already killed"
        self.timeouts.append(timeout_s)
        if cmd["cmd"] == "load":
            self.trusted = bool(cmd.get("trusted"))
        self.log.append((cmd["cmd"], {"trusted": self.trusted, "timeout_s": timeout_s}))
        answer = self.script(cmd, self) if self.script is not None else None
        if answer is None:
            answer = self._load(cmd) if cmd["cmd"] == "load" else self.harness.handle(_copied(cmd))
        if answer.get("hung") or answer.get("died"):
            self.alive = False  # the real channel kills the process tree on both
        blob = answer.pop("_blob", None)
        return answer, blob

    def _load(self, cmd: dict[str, Any]) -> Answer:
        """What the harness's own load does, with the solution executed here instead of imported from a build."""
        h = self.harness
        h.dps, h.device, h.trusted = bool(cmd["dps"]), cmd["device"], self.trusted
        if self.trusted:
            h.defences = False  # the reference, timed as a baseline
        h.guarded = _guarded()
        try:
            h.fn = entry_of(Solution.model_validate(cmd["solution"]))
        except Exception as exc:
            return {"ok": False, "status": "COMPILE_ERROR", "error": f"importing the solution failed:\n{exc!r}"}
        h.threads_at_load = threading.active_count()
        return {"ok": True, "load_seconds": 0.0}

    def signal_group(self, signum: int) -> None:
        pass

    def kill(self) -> None:
        self.alive = False

    def close(self, wait_s: float = 5.0) -> None:
        self.alive = False

    def discard(self) -> None:
        self.alive = False


class InProcessSpares:
    """The judge's spare pool, handing out in-process candidates (``script`` answers for each of them)."""

    def __init__(self, root: Path, script: Script | None = None) -> None:
        self.root = root
        self.script = script
        self.log: list[tuple[str, dict[str, Any]]] = []
        self.taken: list[InProcessCandidate] = []
        self._numbers = itertools.count(1)

    def take(self, profile: Any) -> InProcessCandidate:
        candidate = InProcessCandidate(self.root / f"candidate-{next(self._numbers)}", self.script, self.log,
                                       defences=profile.defences)
        self.taken.append(candidate)
        return candidate

    def fill(self, profile: Any, count: int | None = None) -> None:
        pass

    def keep_only(self, profile: Any) -> None:
        pass

    def follow(self, recent: Any) -> None:
        pass

    @contextlib.contextmanager
    def starting_ones_paused(self) -> Iterator[int]:
        yield 0

    def close(self) -> None:
        pass

    def commands(self, *, trusted: bool | None = None) -> list[str]:
        """The commands sent so far, to the candidates (trusted=False), the baselines (True) or all."""
        return [c for c, seen in self.log if trusted is None or seen["trusted"] is trusted]


class InProcessJudge(Judge):
    """The judge with its builds replaced by the solution's sources (nothing compiled, no build child)."""

    def build_of(self, solution: Solution) -> BuildReport:
        return BuildReport(ok=True, language=solution.spec.language.value, target_arch=None)


def judge_state(tmp_path: Path, script: Script | None = None) -> tuple[JudgeState, InProcessSpares]:
    """A warm CPU judge's state whose spare pool is in-process (one per test: it keeps problems loaded)."""
    spares = InProcessSpares(tmp_path / "spares", script)
    state = JudgeState("cpu", tmp_path / "judge", spares=spares, warm=True)  # type: ignore[arg-type]
    return state, spares


def evaluate_in_process(state: JudgeState, problem: str | Path, solution: Solution, tmp_path: Path,
                        **options: Any) -> EvalReport:
    """One evaluation by the in-process judge, as ``python -m solforge.sandbox.judge`` would run it."""
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache", **options})
    request = EvalRequest(problem=str(problem), solution=solution, options=opts)
    scratch = tmp_path / f"scratch-{state.evaluations}"
    scratch.mkdir(parents=True, exist_ok=True)
    judge = InProcessJudge(request, state, scratch)
    state.evaluations += 1
    try:
        return judge.run()
    finally:
        judge.clean_up()


def python_solution(code: str, definition: str, *, dps: bool = True, name: str = "test") -> Solution:
    return Solution.model_validate({
        "name": name, "definition": definition, "author": "tests",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": dps},
        "sources": [{"path": "main.py", "content": code}],
    })


def workloads_of(problem: str | Path) -> list[str]:
    return [w.uuid for w in load_problem(problem).workloads]
