"""What a judge keeps between evaluations (:class:`JudgeState`: loaded problems, spares, the GPU's health) and the
small helpers its evaluations share: events on stdout, the held-out workloads, the trace of a failure."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from solforge.problems import (
    Correctness,
    Environment,
    Evaluation,
    Performance,
    Problem,
    Status,
    Trace,
    Workload,
    load_problem,
)
from solforge.problems.config import cache_dir

from .. import defences
from ..api import EvalEvent, EvalOptions
from ..correctness import compare_outputs
from ..processes import ProcessProfile, SparePool
from ..sol.counting import SolCounts

CANDIDATE_START_TIMEOUT_S = 120.0
"""Importing torch and a solution (a CuTe DSL compile included) within this, or TIMEOUT."""
HELD_OUT_WORKLOADS = 2
"""Extra workloads at unseen sizes added at submission, against shape specialisation."""
REPEAT_TIMEOUT_S = 15.0
"""After a workload hung, the next one gets this long (or four times the slowest passing workload,
whichever is more): a solution that hangs everywhere costs one full timeout, not one per workload."""
BASELINE_TIMEOUT_S = 600.0
PROFILE_TIMEOUT_S = 300.0
"""One call under Nsight Compute (each kernel replayed once per pass of its sections), and its report written."""
RECENT_LANGUAGES = 8
"""A warm judge starts its spare processes for the languages of this many latest requests."""
TRITON_INTERPRETER_NOTE = (
    ". This ran in Triton's CPU interpreter, which returns NaN/Inf for some bf16 x bf16 multiplies a GPU "
    "computes fine: multiply in fp32 (.to(tl.float32) after the load), or check on a GPU server "
    "(read_docs(topic='triton'), Debugging)")


_events = sys.stdout
"""Where events go; main() points it at a private copy of fd 1 and sends fd 1 itself to stderr."""


def private_stdout() -> None:
    global _events
    # Events get their own copy of stdout; fd 1 then points at stderr, so anything a library (or
    # the reference) prints, from Python or C, cannot corrupt the event stream.
    _events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def emit(event: EvalEvent) -> None:
    _events.write(event.model_dump_json(exclude_none=True) + "\n")
    _events.flush()


def progress(message: str, done: int | None = None, total: int | None = None) -> None:
    emit(EvalEvent(kind="progress", message=message, done=done, total=total))


def default_cache_dir(options: EvalOptions) -> Path:
    if options.cache_dir is not None:
        return options.cache_dir
    return cache_dir()


def environment(device: Any) -> Environment:
    import torch

    libs = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if torch.version.cuda:
        libs["cuda"] = torch.version.cuda
    from importlib.metadata import version

    for name in ("triton", "solforge"):  # read from the metadata: importing triton takes a second
        with contextlib.suppress(Exception):
            libs[name] = version(name)
    hardware = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return Environment(hardware=hardware, libs=libs)


def failed_trace(problem: Problem, solution_name: str, workload: Workload, status: Status, log: str,
                 env: Environment, correctness: Correctness | None = None) -> Trace:
    return Trace(
        definition=problem.name,
        solution=solution_name,
        workload=workload,
        evaluation=Evaluation(status=status, log=log or status.value, correctness=correctness, environment=env),
    )


def held_out_workloads(problem: Problem, count: int, rng: secrets.SystemRandom) -> list[Workload]:
    """Workloads at sizes the agent never saw: each var axis moved off the published values.

    A size is kept only when the definition's constraints hold for it, so a problem whose axes
    must stay multiples of something gets held-out sizes that are still valid.
    """
    var_axes = problem.definition.var_axes
    if not var_axes:
        return []
    published = sorted(problem.workloads, key=lambda w: sum(w.axes.values()))
    out: list[Workload] = []
    for _ in range(count * 20):
        if len(out) == count:
            break
        base = published[rng.randrange(0, max(1, len(published) // 2 + 1))]
        axes = dict(base.axes)
        for name in var_axes:
            value = axes.get(name, 1)
            axes[name] = max(1, value + rng.choice([-3, -1, 1, 3, 5, 7]) * max(1, value // 8) + rng.choice([0, 1]))
        if any(axes == w.axes for w in problem.workloads + out):
            continue
        try:
            problem.definition.resolve_axes(axes)
        except Exception:
            continue
        inputs = {k: v for k, v in base.inputs.items() if v.type in ("random", "scalar", "custom")}
        if len(inputs) != len(base.inputs):
            continue  # a workload with real tensors from a file cannot move to another size
        held = Workload(uuid="heldout", axes=axes, inputs=inputs, tolerance=base.tolerance)
        out.append(held.model_copy(update={"uuid": held_out_uuid(held)}))
    return out


def held_out_uuid(workload: Workload) -> str:
    """The same for the same sizes, inputs and tolerance: a baseline measured for a held-out workload
    is found again when a later submission draws it (in the H200 swarm of 2026-12-03, every submission
    timed the reference and torch.compile on two new workloads inside its GPU lease, 16-22 s). It says
    nothing the trace's axes do not."""
    fields = {k: v for k, v in workload.to_json_dict().items() if k != "uuid"}
    return "heldout-" + hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def guess_device(options: EvalOptions) -> str:
    """The candidates' device, guessed before torch is imported (so the first candidate process can
    start at once); :class:`JudgeState` corrects a wrong guess."""
    if options.device == "cpu" or os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return "cpu"
    if options.device == "cuda" or Path("/dev/nvidiactl").exists():
        return "cuda:0"
    return "cpu"


def profile_for(options: EvalOptions, device: str) -> ProcessProfile:
    return ProcessProfile(
        device=device,
        defences=defences.defences_enabled(submission=options.submission),
        memory_limit_bytes=None if device.startswith("cuda") else int(options.memory_limit_gb * 2**30),
    )


@dataclass
class Loaded:
    """A problem as a judge keeps it between evaluations."""

    problem: Problem
    reference: Any
    signature: tuple[Any, ...]


@dataclass
class Timed:
    """A workload that passed its checks and was timed: what its trace is scored from."""

    workload: Workload
    sizes: dict[str, int]
    perf: Performance
    correctness: Correctness
    counts: SolCounts | None
    warnings: list[str]


class JudgeState:
    """What one judge process keeps between evaluations: torch and the GPU, the shared memory pool,
    loaded problems, and the spare candidate process.

    Parameters
    ----------
    device
        ``auto``, ``cuda`` or ``cpu``, as in :class:`EvalOptions`.
    root
        Folder for the candidate processes' folders and every evaluation's scratch.
    """

    def __init__(self, device: str, root: Path, *, spares: SparePool | None = None, warm: bool = False) -> None:
        before_torch = _seconds_since_start()
        mark = time.perf_counter()
        import torch

        self.startup_parts: dict[str, float] = {}
        """Where a fresh judge's start-up went (a one-shot report shows it beside ``startup``): before
        torch (the interpreter, solforge's modules, the request), importing torch, then the device (CUDA's
        context, the memory pool, the environment's GPU name)."""
        if before_torch is not None:
            self.startup_parts["startup_before_torch"] = before_torch
        self.startup_parts["startup_torch"] = round(time.perf_counter() - mark, 3)
        mark = time.perf_counter()
        self.warm = warm
        """Whether this process serves many evaluations (then it cleans up after each report)."""
        use_cuda = device in ("auto", "cuda") and torch.cuda.is_available()
        if device == "cuda" and not use_cuda:
            raise RuntimeError("device=cuda was asked for but no CUDA GPU is visible")
        self.device = torch.device("cuda:0" if use_cuda else "cpu")
        self.root = root
        self.spares = spares or SparePool(root)
        self.env = environment(self.device)
        self.shared_pool = None
        self._problems: dict[str, Loaded] = {}
        self.evaluations = 0
        self.baseline_processes = 0
        """How many baseline processes the last evaluation took: a warm judge keeps as many spares ready besides
        the candidate's, since evaluations that measure baselines tend to follow each other (a catalogue's run)."""
        if self.device.type == "cuda":
            torch.empty(1, device=self.device)  # the context, once
            if "expandable_segments:true" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").lower():
                # Expandable segments travel over CUDA IPC as file descriptors the consumer takes with
                # pidfd_getfd, which the confined candidate may not do (Landlock, seccomp): keep classic
                # segments, whose IPC handles need no access to this process.
                with contextlib.suppress(Exception):
                    torch.cuda.memory._set_allocator_settings("expandable_segments:False")
            with contextlib.suppress(Exception):
                self.shared_pool = torch.cuda.MemPool()
            # First calls that cost seconds in a fresh judge, made now, beside the candidate process's
            # start-up, which the first workload waits for anyway (see _preload).
            threading.Thread(target=_preload, args=(self.device, warm), name="solforge-preload", daemon=True).start()
        self.startup_parts["startup_device"] = round(time.perf_counter() - mark, 3)
        self.startup_s = _seconds_since_start()
        """From this process's start to here (torch, CUDA): a one-shot evaluation's report shows it."""

    def serves(self, options: EvalOptions) -> str | None:
        """Why this judge cannot run an evaluation with ``options`` (None when it can)."""
        if options.device == "cuda" and self.device.type != "cuda":
            return "this judge has no GPU"
        if options.device == "cpu" and self.device.type == "cuda":
            return "this judge serves a GPU; the request asks for the CPU"
        return None

    def problem(self, name: str) -> Loaded:
        """The problem and its reference module, loaded once while its files stay unchanged."""
        from solforge.problems.reference import load_reference_module

        problem = load_problem(name)
        folder = problem.folder
        signature: tuple[Any, ...] = ()
        if folder is not None:
            with contextlib.suppress(OSError):
                signature = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size)
                                  for p in sorted(Path(folder).iterdir()) if p.is_file())
        key = str(folder or name)
        loaded = self._problems.get(key)
        if loaded is None or loaded.signature != signature:
            loaded = Loaded(problem, load_reference_module(problem.definition), signature)
            self._problems[key] = loaded
        return loaded

    def profile(self, options: EvalOptions) -> ProcessProfile:
        return profile_for(options, str(self.device))

    def healthy(self) -> str | None:
        """Whether the GPU still answers (after a candidate crashed it, say): None, or what failed."""
        if self.device.type != "cuda":
            return None
        import torch

        try:
            x = torch.ones(1024, device=self.device)
            if float(x.sum().item()) != 1024.0:
                return "a sum on the GPU came back wrong"
            torch.cuda.synchronize(self.device)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        self.spares.close()


def _seconds_since_start() -> float | None:
    """Seconds since this process started (Linux: /proc/self/stat's start time), else None."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, clock ticks after boot
        return round(time.clock_gettime(time.CLOCK_BOOTTIME) - started, 3)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _preload(device: Any, warm: bool) -> None:
    """The comparisons took 0.6-1.0 s in a fresh judge against 0.1 s in a warm one on an H200 (inferred:
    their kernels load on first use): load them first, for the dtypes problems use, at sizes that take
    the reductions' small and vectorised paths. A warm judge, which starts before any
    request, also imports what a first speed-of-light count imports (torch._dynamo, 1.2 s); a one-shot
    judge leaves that to the count, which usually finds its result in the count cache, so that the
    import's Python work does not compete with the evaluation for the interpreter."""
    with contextlib.suppress(Exception):
        import torch

        from solforge.problems import Tolerance

        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            for numel in (64, 1 << 16, 1 << 22):
                x = torch.ones(numel, dtype=dtype, device=device)
                compare_outputs({"x": x}, {"x": x.clone()}, Tolerance())
        from ..sol import counting, hardware, score  # noqa: F401

        if warm:
            import torch._dynamo


def blob_limit(references: dict[str, Any]) -> int:
    """How many bytes a CPU answer's outputs may take: what the reference's take, with room for framing."""
    from ..channel import MAX_ANSWER_BYTES

    expected = sum(int(t.numel()) * int(t.element_size()) for t in references.values() if hasattr(t, "numel"))
    return max(MAX_ANSWER_BYTES, 2 * expected + (1 << 20))


FailureKind = Literal["hang", "crash", "oom"]


def failure_kind(answer: dict[str, Any]) -> FailureKind | None:
    """Whether a failed answer is a hang, a crash or an out-of-memory (the failures worth not repeating)."""
    if answer.get("ok"):
        return None
    error = str(answer.get("error", ""))
    if "out of GPU memory" in error or "MemoryError" in error or "std::bad_alloc" in error:
        return "oom"
    if answer.get("hung"):
        return "hang"
    if answer.get("died") or answer.get("fatal"):
        return "crash"
    return None


KIND_WORDS = {"hang": "hung", "crash": "crashed", "oom": "ran out of memory"}
