"""One evaluation in the judge: the solution built and loaded, every workload checked and timed, the baselines and
the speed of light attached (:class:`Judge`)."""

from __future__ import annotations

import contextlib
import math
import secrets
import signal
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from solforge.problems import (
    Correctness,
    Evaluation,
    Language,
    Performance,
    Solution,
    Status,
    Trace,
    Workload,
    config,
)

from .. import defences, jit_cache
from ..api import BaselineRecord, BuildReport, EvalEvent, EvalReport, EvalRequest, ProfileReport
from ..baseline import BaselineStore, BaselineTimer, attach_scores, baseline_key, tail
from ..correctness import Check, compare_outputs
from ..processes import CandidateProcess
from ..sol.counting import SolCounts
from ..timing import interquartile_range, resolved_median
from .profile_steps import ProfileSteps
from .state import (
    BASELINE_TIMEOUT_S,
    CANDIDATE_START_TIMEOUT_S,
    HELD_OUT_WORKLOADS,
    KIND_WORDS,
    REPEAT_TIMEOUT_S,
    TRITON_INTERPRETER_NOTE,
    FailureKind,
    JudgeState,
    Timed,
    blob_limit,
    default_cache_dir,
    emit,
    failed_trace,
    failure_kind,
    held_out_workloads,
    progress,
)


class Judge(ProfileSteps):
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
        self.trusted_builds: dict[CandidateProcess, str] = {}
        """The build key of each baseline process, whose JIT cache is kept when the evaluation ends."""
        self.load_failure: tuple[Status, str] | None = None
        self.static_warnings: list[str] = []
        self.build: BuildReport | None = None
        self.failure_kind: FailureKind | None = None
        """How the last workload failed, when it was a hang, a crash or an out-of-memory."""
        self.phases: dict[str, float] = {}
        self.counts: dict[str, SolCounts] = {}
        """The speed-of-light counts of the workloads timed so far (the report carries them)."""
        self.profiler_argv: list[str] = []
        """Nsight Compute's command before the candidate's, when this evaluation profiles with it."""
        self.profiled: ProfileReport | None = None
        self.unscored: dict[str, Timed] = {}
        """Passed workloads whose baseline is measured once the candidate is done (see :meth:`score_unscored`)."""
        if not state.warm and state.startup_s is not None:
            self.phases["startup"] = state.startup_s
            self.phases.update(state.startup_parts)
        self.cleaned = False
        from ..baseline import shipped_records

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
        from ..build import build_solution

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
        if build.cache_key:  # a baseline's process gets its own kind's cache, never a candidate's (see jit_cache)
            jit_cache.restore(self.cache_dir, jit_cache.kept_key(build.cache_key, trusted=trusted), proc.home)
            if trusted:
                self.trusted_builds[proc] = build.cache_key
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
        launching work would run beside that timing. Work it already queued is not stopped.

        A candidate under Nsight Compute is not frozen: once stopped and continued, its profiled call never
        returned (H100, 2026-12-06: the 120 s call timeout, whether ncu's own process was stopped with it or
        only the profiled one). While it waits, work its import left running may still disturb another lane."""
        candidate = self.candidate
        if candidate is None or self.profiler_argv:
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
        self.failure_kind = failure_kind(answer)
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
                    deadline - time.monotonic(), cuda_ipc=cuda_ipc, blob_limit=blob_limit(references),
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
                                                  blob_limit=blob_limit(references))
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
        timed = Timed(workload, sizes, perf, correctness, counts, warnings)
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

    def scored_trace(self, timed: Timed, baseline: BaselineRecord | None) -> Trace:
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
        if self.device.type == "cuda" and config.spare_pause():
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

    def _not_run(self, workload: Workload, kind: FailureKind, earlier: list[tuple[Workload, Trace]]) -> Trace:
        """The trace of a workload skipped because the solution failed the same way twice already."""
        first, second = earlier[0], earlier[-1]
        ev = second[1].evaluation
        assert ev is not None
        where = ", ".join(f"{w.uuid} ({', '.join(f'{k}={v}' for k, v in w.axes.items())})" for w, _ in (first, second))
        log = (f"not run: it repeats workload {second[0].uuid}. The solution {KIND_WORDS[kind]} on workloads {where}, "
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
        strikes: dict[FailureKind, list[tuple[Workload, Trace]]] = {}
        stopped: FailureKind | None = None
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
        for proc in self.baseline_timer.procs.values():
            # The compiled reference's inductor graphs and Triton kernels: the next baseline of this problem
            # (another workload, another worker sharing the cache) loads them rather than compiling again.
            key = self.trusted_builds.get(proc)
            if key and proc.alive:
                proc.close()
                with contextlib.suppress(OSError):
                    jit_cache.save(proc.home, self.cache_dir, jit_cache.kept_key(key, trusted=True))
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
