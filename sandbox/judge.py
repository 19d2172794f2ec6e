"""The judge process: trusted, holds the seed, the inputs' recipe and the reference outputs.

It runs in one of two ways:

- **one evaluation** (``python -m solforge.sandbox.judge``): an :class:`EvalRequest` on stdin, one
  :class:`EvalEvent` per line on stdout, then exit (``solforge eval`` with no worker running);
- **warm** (``python -m solforge.sandbox.judge --serve``): a ``ready`` event, then one request per
  line on stdin, each answered with its events and a final ``report`` (or ``error``). torch, CUDA and
  CUPTI load once; problems, their reference modules and FLOP counts stay loaded; a spare candidate
  process is started after each evaluation, so the next one finds its process up (see
  :class:`~solforge.sandbox.processes.SparePool`). A worker keeps one per GPU (:mod:`.warm`).

For each workload the judge generates fresh inputs, runs the reference, hands the inputs (and output
buffers) to the candidate process, compares what comes back, and asks the candidate to time its
call. Reference outputs are allocated outside the memory pool that is shared with the candidate, so
no IPC handle the candidate holds reaches them; the seed of every evaluation is drawn anew.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import math
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from solforge.problems import (
    Correctness,
    Environment,
    Evaluation,
    Language,
    Performance,
    Problem,
    Solution,
    Status,
    Trace,
    Workload,
    load_problem,
)
from solforge.problems.config import cache_dir

from . import defences, jit_cache
from .api import BaselineRecord, BuildReport, EvalEvent, EvalOptions, EvalReport, EvalRequest, ProfileReport
from .baseline import BaselineStore, BaselineTimer, attach_scores, baseline_key, tail
from .correctness import Check, compare_outputs
from .processes import CandidateProcess, ProcessProfile, SparePool
from .sol.counting import SolCounts
from .timing import interquartile_range, resolved_median

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
class _Loaded:
    """A problem as a judge keeps it between evaluations."""

    problem: Problem
    reference: Any
    signature: tuple[Any, ...]


@dataclass
class _Timed:
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
        self._problems: dict[str, _Loaded] = {}
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

    def problem(self, name: str) -> _Loaded:
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
            loaded = _Loaded(problem, load_reference_module(problem.definition), signature)
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
        from .sol import counting, hardware, score  # noqa: F401

        if warm:
            import torch._dynamo


def _blob_limit(references: dict[str, Any]) -> int:
    """How many bytes a CPU answer's outputs may take: what the reference's take, with room for framing."""
    from .channel import MAX_ANSWER_BYTES

    expected = sum(int(t.numel()) * int(t.element_size()) for t in references.values() if hasattr(t, "numel"))
    return max(MAX_ANSWER_BYTES, 2 * expected + (1 << 20))


_FailureKind = Literal["hang", "crash", "oom"]


def _failure_kind(answer: dict[str, Any]) -> _FailureKind | None:
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


_KIND_WORDS = {"hang": "hung", "crash": "crashed", "oom": "ran out of memory"}


class Judge:
    """Evaluates one solution on a problem's workloads, in a :class:`JudgeState`."""

    def __init__(self, request: EvalRequest, state: JudgeState, scratch: Path) -> None:
        self.request = request
        self.options = request.options
        self.state = state
        self.scratch = scratch
        loaded = state.problem(request.problem)
        self.problem = loaded.problem
        self.reference = loaded.reference
        self.solution = request.solution
        self.device = state.device
        self.env = state.env
        self.profile = state.profile(self.options)
        self.defences = self.profile.defences
        self.cache_dir = default_cache_dir(self.options)
        self.rng = secrets.SystemRandom()
        self.seed = self.options.seed if self.options.seed is not None and not self.options.submission else secrets.randbits(62)
        self.candidate: CandidateProcess | None = None
        self.processes: list[CandidateProcess] = []
        """Every process this evaluation took (candidate restarts and baselines); all go at the end."""
        self.load_failure: tuple[Status, str] | None = None
        self.static_warnings: list[str] = []
        self.build: BuildReport | None = None
        self.failure_kind: _FailureKind | None = None
        """How the last workload failed, when it was a hang, a crash or an out-of-memory."""
        self.phases: dict[str, float] = {}
        self.counts: dict[str, SolCounts] = {}
        """The speed-of-light counts of the workloads timed so far (the report carries them)."""
        self.profiler_argv: list[str] = []
        """Nsight Compute's command before the candidate's, when this evaluation profiles with it."""
        self.profiled: ProfileReport | None = None
        self.unscored: dict[str, _Timed] = {}
        """Passed workloads whose baseline is measured once the candidate is done (see :meth:`score_unscored`)."""
        if not state.warm and state.startup_s is not None:
            self.phases["startup"] = state.startup_s
            self.phases.update(state.startup_parts)
        self.cleaned = False
        from .baseline import shipped_records

        self.baselines = BaselineStore(
            self.cache_dir / "baselines" / f"{self.problem.name}.json",
            known=request.baselines,
            shipped=shipped_records(self.problem.name, self.env.hardware),
        )
        self.baseline_timer = BaselineTimer(self.problem.definition, self._open_trusted,
                                            cuda=self.device.type == "cuda", timeout_s=BASELINE_TIMEOUT_S)
        state.spares.keep_only(self.profile)
        if self.runs_solution():
            # The candidate starts up while the solution is built, and so do the baseline's processes when they
            # will be needed (one started only when it was asked for cost 4-7 s a problem on the H200, 2026-12-04).
            wanted = set(self.options.workloads or ())
            asked = [w for w in self.problem.workloads if not wanted or w.uuid in wanted]  # held-out ones: not yet
            variants = len(self.baseline_timer.variants) if self.needs_baselines(asked) else 0
            state.spares.fill(self.profile, count=1 + variants)

    def needs_baselines(self, workloads: list[Workload]) -> bool:
        """Whether one of ``workloads`` has no baseline yet, which this evaluation then measures."""
        return self.options.time_baseline and self.options.profile is None \
            and any(self.baselines.get(self.baseline_key(w)) is None for w in workloads)

    # -- build and candidate -------------------------------------------------------------

    def target_arch(self) -> str:
        import torch

        if self.options.target_arch:
            return self.options.target_arch
        if self.device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(self.device)
            return f"sm_{major}{minor}" + ("a" if major >= 9 else "")
        return "sm_90a"

    def build_of(self, solution: Solution) -> BuildReport:
        from .build import build_solution

        return build_solution(solution, target_arch=self.target_arch(), cache_dir=self.cache_dir,
                              timeout_s=self.options.compile_timeout_s, keep_spare=self.state.warm)

    def do_build(self) -> BuildReport:
        progress(f"building {self.solution.spec.language.value} solution for {self.target_arch()}")
        report = self.build_of(self.solution)
        emit(EvalEvent(kind="build", build=report))
        return report

    def open_process(self, solution: Solution, build: BuildReport, *, trusted: bool = False
                     ) -> tuple[CandidateProcess, dict[str, Any]]:
        """Take a started process and load ``solution`` in it.

        The baselines run in processes started the same way (same isolation, same harness), so the
        reference and the candidate are timed under identical conditions.
        """
        started = time.perf_counter()
        proc = self.state.spares.take(self.profile) if trusted or not self.profiler_argv else \
            CandidateProcess(self.profile, Path(tempfile.mkdtemp(prefix="profiled-", dir=self.scratch)),
                             language=solution.spec.language.value, wrapper=self.profiler_argv)
        self.processes.append(proc)
        if not proc.warm:
            # Nothing was ready (spares still importing torch): the report says how long that cost.
            with self.phase("spare_wait"):
                proc.wait_warm(CANDIDATE_START_TIMEOUT_S)
        if build.cache_key and not trusted:  # a baseline's process starts with an empty cache (see jit_cache)
            jit_cache.restore(self.cache_dir, build.cache_key, proc.home)
        answer, _ = proc.request(
            {"cmd": "load", "build": build.model_dump(mode="json"), "solution": solution.model_dump(mode="json"),
             "dps": solution.spec.destination_passing_style, "device": str(self.device), "trusted": trusted},
            max(1.0, CANDIDATE_START_TIMEOUT_S - (time.perf_counter() - started)), cuda_ipc=False,
        )
        seconds = answer.get("load_seconds")
        if not trusted and isinstance(seconds, int | float) and 0 <= seconds < CANDIDATE_START_TIMEOUT_S:
            # The candidate's own figure (it could lie): a diagnostic phase only, never a score.
            self.phases["import"] = self.phases.get("import", 0.0) + float(seconds)
        return proc, answer

    def _open_trusted(self, solution: Solution, _label: str) -> tuple[CandidateProcess, dict[str, Any]] | str:
        build = self.build_of(solution)
        if not build.ok:
            return f"build failed: {tail(build.log)}"
        return self.open_process(solution, build, trusted=True)

    def runs_solution(self) -> bool:
        """Whether this evaluation runs the solution, or only builds it (compile_only was set, or a
        CUDA C++ / CuTe DSL solution on a machine without a GPU)."""
        gpu_only = self.solution.spec.language in (Language.cuda_cpp, Language.cute_dsl)
        return not self.options.compile_only and not (self.device.type == "cpu" and gpu_only)

    def load_candidate(self) -> bool:
        """Take a started process and load the solution; False (and ``load_failure`` set) when its
        import failed, which it will do the same way for every workload."""
        assert self.build is not None
        with self.phase("load"):
            self.candidate, answer = self.open_process(self.solution, self.build)
        if not answer.get("ok"):
            error = answer.get("error", "")
            if self.profiler_argv:
                error += ("\n(the candidate ran under Nsight Compute: profile with tool='cupti' to see whether "
                          f"ncu is the cause; the candidate's log: {self.candidate.log_path})")
            self.load_failure = (Status(answer["status"]), error)
            self.candidate.kill()
        return self.load_failure is None

    def wait_for_gpu(self, workloads: list[Workload]) -> None:
        """Load the solution, and the reference's baseline processes when a workload has no baseline yet
        (CPU work), then wait for the caller's ``go`` (``gpu_gate``): a worker takes the GPU's lease
        meanwhile, so the lease covers GPU work only. A solution that does not load needs no GPU: its
        workloads fail without one, and the caller is not asked."""
        if not self.load_candidate():
            return
        if self.needs_baselines(workloads):
            with self.phase("baseline_load"):  # its processes started and loaded now, not under the lease
                self.baseline_timer.open_all()
        with self.phase("gpu_wait"), self.candidate_paused():
            emit(EvalEvent(kind="gpu"))
            line = sys.stdin.readline()
        if line.strip() != "go":
            raise RuntimeError("the caller closed the GPU gate without saying go")

    @contextlib.contextmanager
    def candidate_paused(self) -> Iterator[None]:
        """Freeze the loaded candidate (SIGSTOP to its process group) while the worker waits for the GPU's
        lease: another lane times on that GPU meanwhile, and a solution whose import left a thread
        launching work would run beside that timing. Work it already queued is not stopped."""
        candidate = self.candidate
        if candidate is None:
            yield
            return
        candidate.signal_group(signal.SIGSTOP)
        try:
            yield
        finally:
            candidate.signal_group(signal.SIGCONT)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the block's wall time to ``phases[name]`` (the report shows where an evaluation went)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - started

    # -- one workload -------------------------------------------------------------------

    def make_inputs(self, workload: Workload, sizes: dict[str, int], round_index: int) -> dict[str, Any]:
        from solforge.problems.inputs import generate_inputs

        # crc32, not hash(): str hashes change from process to process, seeds must not.
        seed = (self.seed * 1_000_003 + zlib.crc32(workload.uuid.encode()) * 31 + round_index) % (2**63)
        return generate_inputs(self.problem.definition, workload, sizes, device=self.device,
                               seed_or_generator=seed, problem_folder=self.problem.folder)

    def shared(self) -> Any:
        """Allocate inside the pool shared with the candidate (never holding reference data)."""
        import torch

        if self.state.shared_pool is None:
            return contextlib.nullcontext()
        return torch.cuda.use_mem_pool(self.state.shared_pool)

    def run_reference(self, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        args = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs.values()]
        with torch.no_grad():
            result = self.reference.run(*args)
        values = list(result) if isinstance(result, tuple | list) else [result]
        names = list(self.problem.definition.outputs)
        if len(values) != len(names):
            raise RuntimeError(f"the reference returned {len(values)} values for {len(names)} outputs")
        return {n: v.detach() for n, v in zip(names, values, strict=True)}

    def output_buffers(self, references: dict[str, Any]) -> list[Any]:
        import torch

        buffers = []
        with self.shared():
            for ref in references.values():
                buf = torch.empty_like(ref, memory_format=torch.contiguous_format)
                if buf.is_floating_point():
                    buf.fill_(float("nan"))  # a kernel that skips an element cannot pass by luck
                else:
                    buf.zero_()
                buffers.append(buf)
        return buffers

    def to_shared(self, inputs: dict[str, Any]) -> list[Any]:
        import torch

        if self.device.type != "cuda":
            return list(inputs.values())
        with self.shared():
            return [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs.values()]

    def _fail(self, workload: Workload, answer: dict[str, Any], prefix: str = "") -> Trace:
        """The trace of a failed command, remembering whether it hung, crashed or ran out of memory."""
        self.failure_kind = _failure_kind(answer)
        if self.candidate is not None and not self.candidate.alive:
            self.state.spares.fill(self.profile, count=1)  # the next workload's process starts up now
        return failed_trace(self.problem, self.solution.name, workload, Status(answer["status"]),
                            prefix + answer.get("error", ""), self.env)

    def output_specs(self, sizes: dict[str, int]) -> list[list[Any]]:
        """Each output's name, shape and torch dtype, as the candidate's commands take them."""
        definition = self.problem.definition
        return [[n, list(s), str(definition.outputs[n].dtype.to_torch())] for n, s in definition.output_shapes(sizes).items()]

    def evaluate_workload(self, workload: Workload, timeout_s: float) -> Trace:
        """Correctness rounds, then timing, within ``timeout_s`` for the candidate's calls together."""
        self.failure_kind = None
        if self.load_failure is not None:
            return failed_trace(self.problem, self.solution.name, workload, *self.load_failure, self.env)
        definition = self.problem.definition
        tol = workload.effective_tolerance
        try:
            sizes = definition.resolve_axes(workload.axes)
        except ValueError as exc:
            return failed_trace(self.problem, self.solution.name, workload, Status.INVALID_REFERENCE, str(exc), self.env)
        specs = self.output_specs(sizes)
        cuda_ipc = self.device.type == "cuda"
        worst = Check(Status.PASSED)
        rounds = self.options.rounds + (5 if self.options.submission else 0)
        last: tuple[list[Any], list[Any], dict[str, Any]] | None = None
        deadline: float | None = None  # starts once the candidate is up: loading has its own limit
        for r in range(rounds):
            try:
                with self.phase("inputs"):
                    inputs = self.make_inputs(workload, sizes, r)
                    references = self.run_reference(inputs)
            except Exception as exc:
                return failed_trace(self.problem, self.solution.name, workload, Status.INVALID_REFERENCE,
                                    f"the reference failed on this workload: {type(exc).__name__}: {exc}", self.env)
            with self.phase("buffers"):
                shared_inputs = self.to_shared(inputs)
                buffers = self.output_buffers(references)
            if (self.candidate is None or not self.candidate.alive) and not self.load_candidate():
                assert self.load_failure is not None
                return failed_trace(self.problem, self.solution.name, workload, *self.load_failure, self.env)
            assert self.candidate is not None
            if deadline is None:
                deadline = time.monotonic() + timeout_s
            with self.phase("check"):
                answer, blob = self.candidate.request(
                    {"cmd": "check", "inputs": shared_inputs, "outputs": buffers, "output_specs": specs},
                    deadline - time.monotonic(), cuda_ipc=cuda_ipc, blob_limit=_blob_limit(references),
                )
            if not answer.get("ok"):
                return self._fail(workload, answer)
            with self.phase("compare"):
                outputs = self.read_outputs(buffers, blob, list(references))
                check = compare_outputs(outputs, references, tol)
                mutated = self.mutated_inputs(workload, sizes, r, shared_inputs) if check.passed else None
            if mutated:
                check = Check(Status.INCORRECT_NUMERICAL, f"the solution wrote into input {mutated!r}; inputs are read-only")
            if not check.passed:
                # A wrong answer keeps its error statistics, so that tools need not parse the message.
                measured = Correctness(max_absolute_error=check.max_absolute_error,
                                       max_relative_error=check.max_relative_error,
                                       matched_ratio=check.matched_ratio, rounds=r + 1) if check.errors_measured else None
                message = f"round {r + 1}/{rounds}: {check.message}"
                if self.device.type == "cpu" and self.solution.spec.language is Language.triton \
                        and "non-finite" in check.message:
                    message += TRITON_INTERPRETER_NOTE
                return failed_trace(self.problem, self.solution.name, workload, check.status, message, self.env,
                                    measured)
            worst.max_absolute_error = max(worst.max_absolute_error, check.max_absolute_error)
            worst.max_relative_error = max(worst.max_relative_error, check.max_relative_error)
            worst.matched_ratio = min(worst.matched_ratio, check.matched_ratio)
            last = (shared_inputs, buffers, references)
        assert last is not None and deadline is not None
        correctness = Correctness(max_absolute_error=worst.max_absolute_error, max_relative_error=worst.max_relative_error,
                                  matched_ratio=worst.matched_ratio, rounds=rounds)
        if self.options.profile is not None:
            return self.profile_workload(workload, sizes, last, correctness, deadline)
        return self.time_workload(workload, sizes, specs, last, correctness, tol, deadline)

    def read_outputs(self, buffers: list[Any], blob: bytes | None, names: list[str]) -> dict[str, Any]:
        if self.device.type == "cuda":
            return dict(zip(names, buffers, strict=True))
        from safetensors.torch import load

        if blob is None:
            raise RuntimeError("the candidate sent no outputs")
        loaded = load(blob)
        return {n: loaded[str(i)] for i, n in enumerate(names) if str(i) in loaded}

    def mutated_inputs(self, workload: Workload, sizes: dict[str, int], r: int, shared_inputs: list[Any]) -> str | None:
        """Regenerate the round's inputs from the seed and compare: cheaper than keeping a copy."""
        import torch

        if self.device.type != "cuda":
            return None  # on the CPU the candidate worked on its own copy
        fresh = self.make_inputs(workload, sizes, r)
        for (name, value), sent in zip(fresh.items(), shared_inputs, strict=True):
            if isinstance(value, torch.Tensor) and not torch.equal(value, sent):
                return name
        return None

    def regen_recipe(self, workload: Workload, sizes: dict[str, int]) -> dict[str, Any]:
        """What :class:`~solforge.sandbox.defences.FreshInputs` needs to draw inputs in the candidate."""
        folder = self.problem.folder
        return {"definition": self.problem.definition.to_json_dict(), "workload": workload.to_json_dict(),
                "sizes": dict(sizes), "folder": str(folder) if folder is not None else None}

    def baseline_key(self, workload: Workload) -> str:
        import torch

        return baseline_key(self.problem.definition, workload, self.env.hardware, torch.__version__, self.options.timer)

    def time_workload(self, workload: Workload, sizes: dict[str, int], specs: list[list[Any]],
                      last: tuple[list[Any], list[Any], dict[str, Any]], correctness: Correctness, tol: Any,
                      deadline: float) -> Trace:
        shared_inputs, buffers, references = last
        cuda_ipc = self.device.type == "cuda"
        iterations = self.options.iterations if cuda_ipc else min(self.options.iterations, 10)
        warmup = self.options.warmup if cuda_ipc else min(self.options.warmup, 2)
        check_at = self.rng.randrange(iterations)
        for b in buffers:
            if b.is_floating_point():
                b.fill_(float("nan"))
            else:
                b.zero_()
        assert self.candidate is not None
        cmd: dict[str, Any] = {"cmd": "time", "inputs": shared_inputs, "outputs": buffers, "output_specs": specs,
                               "warmup": warmup, "iterations": iterations, "check_at": check_at,
                               "timer": self.options.timer}
        if self.defences:
            # The checked timed call gets inputs nobody has seen (a fresh secret seed), and every other
            # timed call fresh inputs drawn in the candidate: nothing computed once can be replayed.
            from solforge.problems.inputs import generate_inputs

            with self.phase("inputs"):
                check_inputs = generate_inputs(self.problem.definition, workload, sizes, device=self.device,
                                               seed_or_generator=secrets.randbits(62),
                                               problem_folder=self.problem.folder, reference_module=self.reference)
                references = self.run_reference(check_inputs)
            cmd["check_inputs"] = self.to_shared(check_inputs)
            cmd["regen"] = self.regen_recipe(workload, sizes)
        with self.quiet_host(), self.phase("timed"):
            answer, blob = self.candidate.request(cmd, deadline - time.monotonic(), cuda_ipc=cuda_ipc,
                                                  blob_limit=_blob_limit(references))
        if not answer.get("ok"):
            return self._fail(workload, answer, "while timing: ")
        measurement = answer["measurement"]
        times = [float(t) for t in measurement["times_ms"]]
        if len(times) != iterations or not all(math.isfinite(t) and t >= 0 for t in times):
            return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK,
                                "the timing record is malformed (wrong count or non-finite times)", self.env)
        with self.phase("compare"):
            outputs = self.read_outputs(buffers, blob, list(references))
            check = compare_outputs(outputs, references, tol)
        if not check.passed:
            return failed_trace(
                self.problem, self.solution.name, workload, Status.REWARD_HACK,
                f"the outputs of timed call {check_at + 1} of {iterations} were wrong ({check.message}): the "
                "solution computes correctly when checked but not when timed (caching, skipping or deferring work)",
                self.env,
            )
        if cuda_ipc and any(t == 0.0 for t in times):
            return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK,
                                "some timed calls launched no GPU work: results must be computed in every call", self.env)
        counts = measurement.get("kernels_per_call") or []
        warnings = list(measurement.get("warnings") or []) + self.static_warnings
        if counts and len(set(counts)) > 1 and self.defences:
            # Fresh inputs every call make batch-and-skip impossible and a skipped call fails the hidden
            # check; a data-dependent launch count (a loop over the experts that received tokens) is honest.
            warnings.append(f"timed calls launched between {min(counts)} and {max(counts)} GPU operations")
        elif counts and len(set(counts)) > 1:
            return failed_trace(
                self.problem, self.solution.name, workload, Status.REWARD_HACK,
                f"timed calls launched different amounts of GPU work ({min(counts)} to {max(counts)} operations): "
                "every call must do the whole computation (no batching across calls, no skipping)", self.env)
        perf = Performance(latency_ms=resolved_median(times), timer=measurement["timer"], iterations=iterations,
                           latency_iqr_ms=interquartile_range(times))
        with self.phase("count"):
            counts = self.flops_and_bytes(sizes, shared_inputs)
        if counts is not None:
            self.counts[workload.uuid] = counts
        timed = _Timed(workload, sizes, perf, correctness, counts, warnings)
        baseline = self.baseline_for(workload)
        trace = self.scored_trace(timed, baseline)
        if self.options.time_baseline and baseline is None and trace.evaluation is not None \
                and trace.evaluation.status is Status.PASSED:
            # Measured after the loop, when the candidate is gone: timed now, the reference would need the
            # candidate killed first (a native thread of its own could slow the reference: baseline
            # sabotage) and a new one started for the next workload, inside the GPU lease (108 s of a
            # 14-workload evaluation's 156 s lease in the H200 swarm of 2026-12-03). Until then the trace
            # is held back; a speed-of-light verdict needs no baseline and is sent at once.
            self.unscored[workload.uuid] = timed
        return trace

    def scored_trace(self, timed: _Timed, baseline: BaselineRecord | None) -> Trace:
        """The PASSED trace of a timed workload with its baseline and speed-of-light scores, or the
        REWARD_HACK verdict of the speed-of-light check."""
        with self.phase("score"):
            verdict = attach_scores(timed.perf, baseline, counts=timed.counts, hardware=self.env.hardware,
                                    calibration_dir=self.cache_dir / "calibration", warnings=timed.warnings)
        if verdict is not None:
            return failed_trace(self.problem, self.solution.name, timed.workload, Status.REWARD_HACK, verdict, self.env)
        return Trace(
            definition=self.problem.name,
            solution=self.solution.name,
            workload=timed.workload,
            evaluation=Evaluation(status=Status.PASSED, log="; ".join(timed.warnings), correctness=timed.correctness,
                                  performance=timed.perf, environment=self.env),
        )

    def quiet_host(self) -> contextlib.AbstractContextManager[int]:
        """On a GPU, spare processes still starting up (torch imports, a CUDA context) are frozen for
        the length of a timed loop, so that none of that runs beside it. ``SOLFORGE_SPARE_PAUSE=0``
        leaves them running (to measure what the pause is worth); CPU timings carry no speed-of-light
        score and do not pause them."""
        if self.device.type == "cuda" and os.environ.get("SOLFORGE_SPARE_PAUSE", "1") != "0":
            return self.state.spares.starting_ones_paused()
        return contextlib.nullcontext(0)

    def baseline_for(self, workload: Workload) -> BaselineRecord | None:
        """The workload's baseline when it is known, cached or shipped (None: not timed or not known)."""
        if not self.options.time_baseline:
            return None
        return self.baselines.get(self.baseline_key(workload))

    def score_unscored(self, report: EvalReport) -> None:
        """Measure the baselines the loop found missing, each on fresh inputs of its workload, with no
        candidate process alive, then score those traces and send them."""
        progress(f"timing the reference as the baseline of {len(self.unscored)} workload(s): once, then kept")
        if self.candidate is not None:
            self.candidate.close()  # as at the end (its exit may write JIT caches), then killed with all it started
        position = {trace.workload.uuid: i for i, trace in enumerate(report.traces)}
        for timed in self.unscored.values():  # in the workloads' order
            started = time.perf_counter()
            key = self.baseline_key(timed.workload)
            record = self.baselines.get(key)  # another workload of the same shape may have measured it
            try:
                if record is None:
                    with self.phase("inputs"):
                        inputs = self.make_inputs(timed.workload, timed.sizes, 0)
                        references = self.run_reference(inputs)
                        shared_inputs, buffers = self.to_shared(inputs), self.output_buffers(references)
                    with self.quiet_host():
                        record = self.baseline_timer.measure(key, self.problem.name, timed.workload, self.env.hardware,
                                                             shared_inputs, buffers, self.output_specs(timed.sizes),
                                                             self.options.timer)
                    self.baselines.put(record)
            except Exception as exc:  # the trace keeps its latency; only the comparison is missing
                timed.warnings.append(f"baseline: the reference could not be timed ({tail(str(exc), 600)})")
            self.phases["baseline"] = self.phases.get("baseline", 0.0) + time.perf_counter() - started
            index = position[timed.workload.uuid]
            report.traces[index] = self.scored_trace(timed, record)
            emit(EvalEvent(kind="trace", trace=report.traces[index]))
        self.unscored.clear()

    def flops_and_bytes(self, sizes: dict[str, int], inputs: list[Any]) -> Any:
        """The workload's FLOP and byte counts for the speed of light (None on the CPU)."""
        if self.device.type != "cuda":
            return None
        from solforge.sandbox.sol.counting import count_workload

        named = dict(zip(self.problem.definition.inputs, inputs, strict=True))
        return count_workload(self.problem.definition, sizes, named, cache_dir=self.cache_dir / "sol_counts" / "meta")

    # -- the whole evaluation -----------------------------------------------------------

    def _timeout_after(self, hung: bool, slowest_pass_s: float) -> float:
        if not hung:
            return self.options.run_timeout_s
        return min(self.options.run_timeout_s, max(REPEAT_TIMEOUT_S, 4 * slowest_pass_s))

    def _not_run(self, workload: Workload, kind: _FailureKind, earlier: list[tuple[Workload, Trace]]) -> Trace:
        """The trace of a workload skipped because the solution failed the same way twice already."""
        first, second = earlier[0], earlier[-1]
        ev = second[1].evaluation
        assert ev is not None
        where = ", ".join(f"{w.uuid} ({', '.join(f'{k}={v}' for k, v in w.axes.items())})" for w, _ in (first, second))
        log = (f"not run: it repeats workload {second[0].uuid}. The solution {_KIND_WORDS[kind]} on workloads {where}, "
               f"so the later workloads were not run the same way again. Its error there: {tail(ev.log, 600)}")
        return failed_trace(self.problem, self.solution.name, workload, ev.status, log, self.env)

    def run(self) -> EvalReport:
        started = time.perf_counter()
        workloads = self.problem.workloads
        if self.options.workloads is not None:
            wanted = set(self.options.workloads)
            unknown = wanted - {w.uuid for w in workloads}
            if unknown:
                raise ValueError(f"unknown workload uuids {sorted(unknown)}")
            workloads = [w for w in workloads if w.uuid in wanted]
        if self.options.submission:
            workloads = [*workloads, *held_out_workloads(self.problem, HELD_OUT_WORKLOADS, self.rng)]
        report = EvalReport(problem=self.problem.name, solution=self.solution.name, device=self.env.hardware)
        findings = defences.scan_solution(self.solution) if self.defences else []
        verdict = defences.reject_message(findings)
        if verdict is not None and not self.options.compile_only:
            # Static checks, before anything is built or run: a reject is a REWARD_HACK outright.
            report.traces = [failed_trace(self.problem, self.solution.name, w, Status.REWARD_HACK, verdict, self.env)
                             for w in workloads]
            for trace in report.traces:
                emit(EvalEvent(kind="trace", trace=trace))
            return self.finish(report, started)
        self.static_warnings = defences.describe_findings(findings)
        build_started = time.perf_counter()
        self.build = self.do_build()
        self.phases["build"] = time.perf_counter() - build_started
        report.build = self.build
        if not self.build.ok:
            status = self.build.status or Status.COMPILE_ERROR
            report.traces = [failed_trace(self.problem, self.solution.name, w, status, self.build.log, self.env)
                             for w in workloads]
            for trace in report.traces:
                emit(EvalEvent(kind="trace", trace=trace))
            return self.finish(report, started)
        language = self.solution.spec.language
        self.build.warnings += [f.describe() for f in findings][:20]
        if not self.runs_solution():
            report.ran = False
            report.note = ("compiled only (compile_only was set)" if self.options.compile_only else
                           f"compiled for {self.target_arch()} but not run: {language.value} needs a GPU and none is visible")
            return self.finish(report, started)
        if self.options.profile is not None:
            workloads = workloads[:1]
            answered = self.prepare_profile(workloads[0], report)
            if answered:
                return self.finish(report, started)
        if self.request.gpu_gate and self.state.warm:
            self.wait_for_gpu(workloads)
        total = len(workloads)
        strikes: dict[_FailureKind, list[tuple[Workload, Trace]]] = {}
        stopped: _FailureKind | None = None
        slowest_pass_s = 0.0
        loop_started = time.perf_counter()
        load_before = self.phases.get("load", 0.0)
        for i, workload in enumerate(workloads):
            progress(f"workload {i + 1}/{total} ({', '.join(f'{k}={v}' for k, v in workload.axes.items())})", i, total)
            if stopped is not None:
                trace = self._not_run(workload, stopped, strikes[stopped])
            else:
                one_started = time.perf_counter()
                trace = self.evaluate_workload(workload, self._timeout_after("hang" in strikes, slowest_pass_s))
                if trace.evaluation is not None and trace.evaluation.status is Status.PASSED:
                    slowest_pass_s = max(slowest_pass_s, time.perf_counter() - one_started)
                if self.failure_kind is not None:
                    strikes.setdefault(self.failure_kind, []).append((workload, trace))
                    if len(strikes[self.failure_kind]) >= 2:
                        stopped = self.failure_kind
            report.traces.append(trace)
            if workload.uuid not in self.unscored:  # those are sent once they have their baselines
                emit(EvalEvent(kind="trace", trace=trace))
        self.phases["workloads"] = time.perf_counter() - loop_started - (self.phases.get("load", 0.0) - load_before)
        if self.unscored:
            self.score_unscored(report)
        report.timer = next((t.evaluation.performance.timer for t in report.traces
                             if t.evaluation and t.evaluation.performance), None)
        report.profile = self.profiled
        return self.finish(report, started)

    # -- profiling ---------------------------------------------------------------------------

    def profile_report_path(self, workload: Workload) -> Path:
        """Where Nsight Compute's report of this build on this workload is kept (the cache, by build)."""
        assert self.build is not None and self.build.cache_key
        return self.cache_dir / "profiles" / self.build.cache_key / f"{workload.uuid}.ncu-rep"

    def prepare_profile(self, workload: Workload, report: EvalReport) -> bool:
        """Choose the profiler; True when the report is already answered (the CPU's refusal, or a page of a
        kernel from a profile kept in the cache), so that nothing runs."""
        from . import profiling

        request = self.options.profile
        assert request is not None
        report.timer = None
        if self.device.type != "cuda":
            report.ran = False
            report.note = ("profiling needs an NVIDIA GPU (Nsight Compute or CUPTI), and this machine has none: "
                           "use run_benchmark's timings, and compile_kernel's registers, spills and SASS instruction mix")
            return True
        ncu = profiling.ncu_path() if request.tool in ("auto", "ncu") else None
        kept = self.profile_report_path(workload) if self.build and self.build.cache_key else None
        if request.kernel is not None:
            if ncu is None:
                raise ValueError("a kernel's raw sections come from Nsight Compute, which is not on this machine")
            if kept is not None and kept.exists():
                self.profiled = ProfileReport(tool="ncu", workload=workload.uuid)
                self.profiled.text, self.profiled.pages = profiling.details_page(ncu, kept, request.kernel, request.page)
                self.profiled.page = request.page
                report.profile, report.ran = self.profiled, False
                return True
        if ncu is None and request.tool == "ncu":
            raise ValueError("tool='ncu' was asked for, but Nsight Compute (ncu) is not on this machine's PATH")
        if ncu is not None:
            self.profiler_argv = profiling.ncu_prefix(ncu, self.scratch / "profile.ncu-rep")
        return False

    def profile_workload(self, workload: Workload, sizes: dict[str, int],
                         last: tuple[list[Any], list[Any], dict[str, Any]], correctness: Correctness,
                         deadline: float) -> Trace:
        """One call of the checked solution under the profiler; the answer goes in ``self.profiled``."""
        from . import profiling

        shared_inputs, buffers, references = last
        assert self.candidate is not None and self.options.profile is not None
        tool = "ncu" if self.profiler_argv else "cupti"
        with self.phase("profile"):
            answer, _ = self.candidate.request(
                {"cmd": "profile", "inputs": shared_inputs, "outputs": buffers, "tool": tool},
                max(PROFILE_TIMEOUT_S, deadline - time.monotonic()), cuda_ipc=True, blob_limit=_blob_limit(references))
        if not answer.get("ok"):
            return self._fail(workload, answer, "while profiling: ")
        counts = self.flops_and_bytes(sizes, shared_inputs)  # may read the inputs on the GPU
        if self.request.gpu_gate and self.state.warm:
            # ncu replayed each kernel inside the call; writing and reading its report is CPU work
            # (several seconds), which need not hold the GPU's lease.
            emit(EvalEvent(kind="gpu_done"))
        with self.phase("profile_report"):
            if tool == "cupti":
                self.profiled = ProfileReport(tool="cupti", workload=workload.uuid,
                                              kernels=profiling.cupti_kernels(answer.get("kernels") or []),
                                              note=profiling.cupti_note(self.options.profile.tool))
            else:
                self.profiled = self.read_ncu_report(workload)
            self.profiled.kernel_us = round(sum(k.duration_us for k in self.profiled.kernels), 3)
            # The trace's latency is the profiled kernels' time (one call, each kernel replayed alone under ncu),
            # marked by its timer: not a timing to compare with run_benchmark's medians. T_SOL as for a timing.
            perf = Performance(latency_ms=self.profiled.kernel_us / 1e3, timer=tool, iterations=1)
            verdict = attach_scores(perf, None, counts=counts,
                                    hardware=self.env.hardware, calibration_dir=self.cache_dir / "calibration")
            if verdict is not None:
                return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK, verdict, self.env)
            if perf.sol_latency_ms is not None:
                self.profiled.sol_us = round(perf.sol_latency_ms * 1e3, 3)
            if not self.profiled.text:
                self.profiled.text = profiling.summary_text(self.profiled)
        return Trace(definition=self.problem.name, solution=self.solution.name, workload=workload,
                     evaluation=Evaluation(status=Status.PASSED, log=f"profiled with {tool} (one call), not timed",
                                           correctness=correctness, performance=perf, environment=self.env))

    def read_ncu_report(self, workload: Workload) -> ProfileReport:
        """Close the candidate so that ncu writes its report, keep the report in the cache, and read it."""
        from . import profiling

        assert self.candidate is not None
        self.candidate.close(wait_s=PROFILE_TIMEOUT_S)
        written = self.scratch / "profile.ncu-rep"
        ncu = self.profiler_argv[0]
        if not written.exists():
            log = tail(self.candidate.log_path.read_text(errors="replace")) if self.candidate.log_path.exists() else ""
            return ProfileReport(tool="ncu", workload=workload.uuid,
                                 note=f"Nsight Compute wrote no report (its output: {log[-800:]})")
        kept = self.profile_report_path(workload)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, kept)
        kernels = profiling.kernels_from_raw(profiling.read_raw(ncu, kept))
        report = ProfileReport(tool="ncu", workload=workload.uuid, kernels=kernels)
        request = self.options.profile
        if request is not None and request.kernel is not None:
            report.text, report.pages = profiling.details_page(ncu, kept, request.kernel, request.page)
            report.page = request.page
        return report

    def finish(self, report: EvalReport, started: float) -> EvalReport:
        if not self.state.warm:
            # One evaluation and exit: clean up first, so the caller can stop this process at the report.
            self.clean_up()
        report.seconds = time.perf_counter() - started
        report.baselines = list(self.baselines.measured)
        report.counts = dict(self.counts)
        report.phases = {k: round(v, 4) for k, v in self.phases.items()}
        emit(EvalEvent(kind="report", report=report))
        return report

    def clean_up(self) -> None:
        """Stop every process this evaluation used and keep the candidate's JIT cache for its next run."""
        if self.cleaned:
            return
        self.cleaned = True
        self.state.baseline_processes = len(self.baseline_timer.procs)
        self.baseline_timer.close()
        if self.candidate is not None and self.build is not None and self.build.ok and self.build.cache_key:
            self.candidate.close()
            with contextlib.suppress(OSError):
                jit_cache.save(self.candidate.home, self.cache_dir, self.build.cache_key)
        for proc in self.processes:
            proc.discard()
        self.processes.clear()
        if self.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()


def evaluate_in(state: JudgeState, request: EvalRequest, scratch: Path) -> EvalReport | None:
    """One evaluation in ``state``: its events go to stdout; None when it failed (an error event)."""
    scratch.mkdir(parents=True, exist_ok=True)
    judge: Judge | None = None
    try:
        refused = state.serves(request.options)
        if refused:
            raise RuntimeError(refused)
        judge = Judge(request, state, scratch)
        return judge.run()
    except Exception as exc:
        import traceback

        emit(EvalEvent(kind="error", message=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()[-3000:]))
        return None
    finally:
        if judge is not None:
            judge.clean_up()
        shutil.rmtree(scratch, ignore_errors=True)


def _private_stdout() -> None:
    global _events
    # Events get their own copy of stdout; fd 1 then points at stderr, so anything a library (or
    # the reference) prints, from Python or C, cannot corrupt the event stream.
    _events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def serve(device: str, root: Path) -> int:
    """The warm judge: a ``ready`` event, then one request per stdin line until stdin closes."""
    state = JudgeState(device, root, warm=True)
    spare_profile = ProcessProfile(str(state.device), defences.defences_enabled(submission=False),
                                   None if state.device.type == "cuda" else int(EvalOptions().memory_limit_gb * 2**30))
    state.spares.fill(spare_profile)
    recent: collections.deque[str] = collections.deque(maxlen=RECENT_LANGUAGES)
    emit(EvalEvent(kind="ready", message=f"{state.env.hardware} ({state.device})"))
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                request = EvalRequest.model_validate_json(line)
            except ValueError as exc:
                emit(EvalEvent(kind="error", message=f"a request that does not parse: {exc}"))
                continue
            state.evaluations += 1
            evaluate_in(state, request, root / f"eval-{state.evaluations}")
            broken = state.healthy()
            if broken:
                emit(EvalEvent(kind="error", message=f"the GPU no longer answers ({broken}); this judge exits"))
                return 2
            # The next evaluation's process, started now that this one's timing is over, for the
            # languages the recent requests used.
            recent.append(request.solution.spec.language.value)
            state.spares.follow(list(recent))
            profile = state.profile(request.options)
            state.spares.keep_only(profile)
            state.spares.fill(profile, count=max(state.spares.depth, 1 + state.baseline_processes))
    finally:
        state.close()
        shutil.rmtree(root, ignore_errors=True)  # this judge's own folder, also when its caller died
    return 0


def _not_dumpable() -> None:
    """Keep other processes of this user out of this one's /proc files (environ, maps, mem) and
    core dumps: a candidate is such a process. Root with CAP_SYS_PTRACE is not stopped by it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="solforge judge process (started by solforge.sandbox.evaluate)")
    parser.add_argument("--serve", action="store_true", help="stay warm: one request per stdin line")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    args = parser.parse_args(argv)
    _not_dumpable()
    _private_stdout()
    root = Path(os.environ.get("SOLFORGE_SCRATCH") or Path.cwd())
    if args.serve:
        return serve(args.device, root)
    try:
        request = EvalRequest.model_validate_json(sys.stdin.read())
        # The candidate's process starts before this one imports torch: both start up in parallel.
        spares = SparePool(root, depth=1, language=request.solution.spec.language.value)
        spares.fill(profile_for(request.options, guess_device(request.options)))
        state = JudgeState(request.options.device, root, spares=spares)
    except Exception as exc:
        import traceback

        emit(EvalEvent(kind="error", message=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()[-3000:]))
        return 1
    try:
        return 0 if evaluate_in(state, request, root / "eval") is not None else 1
    finally:
        state.close()


if __name__ == "__main__":
    sys.exit(main())
