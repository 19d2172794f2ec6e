"""The judge process: trusted, holds the seed, the inputs' recipe and the reference outputs.

Started by :func:`solforge.sandbox.evaluate.evaluate` with an :class:`EvalRequest` on stdin; writes
one :class:`EvalEvent` per line on stdout. For each workload it generates fresh inputs, runs the
reference, hands the inputs (and output buffers) to the candidate process, compares what comes
back, and asks the candidate to time its call. Reference outputs are allocated outside the memory
pool that is shared with the candidate, so no IPC handle the candidate holds reaches them.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

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

from . import channel, defences
from .api import BuildReport, EvalEvent, EvalOptions, EvalReport, EvalRequest
from .correctness import Check, compare_outputs
from .timing import interquartile_range

CANDIDATE_START_TIMEOUT_S = 120.0
"""Importing torch and a solution (a CuTe DSL compile included) within this, or TIMEOUT."""
HELD_OUT_WORKLOADS = 2
"""Extra workloads at unseen sizes added at submission, against shape specialisation."""


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
    return Path(os.environ.get("SOLFORGE_CACHE", Path.home() / ".cache" / "solforge"))


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
    for attempt in range(count * 20):
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
        out.append(Workload(uuid=f"heldout-{attempt}-{secrets.token_hex(4)}", axes=axes, inputs=inputs,
                            tolerance=base.tolerance))
    return out


class CandidateProcess:
    """The candidate's process and the judge's end of the socket."""

    def __init__(self, solution: Solution, options: EvalOptions, device: str, scratch: Path) -> None:
        from . import isolation

        self.sock, child = socket.socketpair()
        self.defences = defences.defences_enabled(submission=options.submission)
        home = scratch / "home"  # the only folder the candidate may write in
        home.mkdir(parents=True, exist_ok=True)
        self.log_path = scratch / "candidate.log"
        self._log = self.log_path.open("ab")
        spec = solution.spec
        extra_env = {"TRITON_INTERPRET": "1"} if device == "cpu" and spec.language is Language.triton else {}
        # Where solforge's own dependencies live when they are not in site-packages (a --target install).
        if os.environ.get("PYTHONPATH"):
            extra_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env = isolation.scrubbed_env(extra_env, gpu_index=None, scratch_dir=home)
        # The judge's CUDA_VISIBLE_DEVICES is already narrowed to the one GPU of this evaluation.
        if device.startswith("cuda"):
            env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
        self.proc = isolation.spawn_isolated(
            [sys.executable, "-m", "solforge.sandbox.candidate", "--fd", str(child.fileno()),
             "--defences", "on" if self.defences else "off", "--device", device],
            cwd=home,
            env=env,
            memory_limit_bytes=None if device.startswith("cuda") else int(options.memory_limit_gb * 2**30),
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        ).popen
        child.close()

    def request(self, cmd: dict[str, Any], timeout_s: float, *, cuda_ipc: bool) -> tuple[dict[str, Any], bytes | None]:
        """Send one command and wait for its answer, killing the process on timeout."""
        self.sock.settimeout(timeout_s)
        nonce = None
        if self.defences:
            if self._unread_bytes():
                self.kill()
                return {"ok": False, "status": "REWARD_HACK", "error": "the candidate wrote to the result channel "
                        "outside an answer (a forged answer)"}, None
            nonce = secrets.token_hex(8)
            cmd = {**cmd, "nonce": nonce}
        try:
            channel.send_pickle(self.sock, cmd, cuda_ipc=cuda_ipc)
            answer = channel.recv_json(self.sock)
            if nonce is not None and answer.get("nonce") != nonce:
                self.kill()
                return {"ok": False, "status": "REWARD_HACK", "error": "an answer on the result channel did not "
                        "carry this command's nonce: it was forged by the solution"}, None
            blob = None
            if answer.get("has_blob"):
                kind, blob = channel.recv_frame(self.sock)
                if kind != channel.KIND_BYTES:
                    raise ValueError(f"expected an output blob, got frame kind {kind!r}")
            return answer, blob
        except TimeoutError:
            self.kill()
            return {"ok": False, "status": "TIMEOUT", "error": f"the call did not finish within {timeout_s:.0f} s; "
                    "the candidate process tree was killed"}, None
        except (channel.ChannelClosed, ConnectionError, OSError, ValueError) as exc:
            try:  # a closed channel usually means the process is exiting: wait a moment to say how it ended
                code: int | None = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            tail = self.log_tail()
            return {"ok": False, "status": "RUNTIME_ERROR", "error": f"the candidate process died ({_describe_exit(code)}; "
                    f"{type(exc).__name__}). Last output:\n{tail}"}, None

    def _unread_bytes(self) -> bool:
        """Whether the candidate sent something nobody asked for (checked before each command)."""
        import select

        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and bool(self.sock.recv(1, socket.MSG_PEEK))
        except OSError:
            return False  # a closed channel is a death, which the request itself reports

    def log_tail(self, limit: int = 2000) -> str:
        with contextlib.suppress(OSError):
            data = self.log_path.read_bytes()[-limit:]
            return data.decode("utf-8", "replace")
        return ""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        from . import isolation

        isolation.kill_tree(self.proc.pid)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            self._log.close()

    def close(self) -> None:
        if self.alive:
            with contextlib.suppress(Exception):
                self.sock.settimeout(5)
                channel.send_pickle(self.sock, {"cmd": "exit"}, cuda_ipc=False)
                self.proc.wait(timeout=5)
        self.kill()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        import signal

        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit code {code}"


class Judge:
    """Evaluates one solution on a problem's workloads."""

    def __init__(self, request: EvalRequest) -> None:
        import torch

        self.request = request
        self.options = request.options
        self.problem = load_problem(request.problem)
        self.solution = request.solution
        use_cuda = self.options.device in ("auto", "cuda") and torch.cuda.is_available()
        if self.options.device == "cuda" and not use_cuda:
            raise RuntimeError("device=cuda was asked for but no CUDA GPU is visible")
        self.device = torch.device("cuda:0" if use_cuda else "cpu")
        self.scratch = Path(os.environ.get("SOLFORGE_SCRATCH", "/tmp"))
        self.spares: dict[str, CandidateProcess] = {}
        """Processes started ahead of their load command, by label (see :meth:`prestart_candidate`)."""
        if self.runs_solution():
            self.prestart_candidate()  # first thing: it starts up while the rest of this is set up
        self.env = environment(self.device)
        self.cache_dir = default_cache_dir(self.options)
        self.rng = secrets.SystemRandom()
        self.seed = self.options.seed if self.options.seed is not None and not self.options.submission else secrets.randbits(62)
        self.candidate: CandidateProcess | None = None
        self.load_failure: tuple[Status, str] | None = None
        self.baseline_procs: dict[str, CandidateProcess | None] = {}
        self.defences = defences.defences_enabled(submission=self.options.submission)
        self.static_warnings: list[str] = []
        self.build: BuildReport | None = None
        from solforge.problems.reference import load_reference_module

        self.reference = load_reference_module(self.problem.definition)
        self.shared_pool = None
        if self.device.type == "cuda":
            if self.defences and "expandable_segments:true" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").lower():
                # Expandable segments travel over CUDA IPC as file descriptors the consumer takes with
                # pidfd_getfd, which the confined candidate may not do (Landlock, seccomp): keep classic
                # segments, whose IPC handles need no access to this process.
                with contextlib.suppress(Exception):
                    torch.cuda.memory._set_allocator_settings("expandable_segments:False")
            with contextlib.suppress(Exception):
                self.shared_pool = torch.cuda.MemPool()

    # -- build and candidate -------------------------------------------------------------

    def target_arch(self) -> str:
        import torch

        if self.options.target_arch:
            return self.options.target_arch
        if self.device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(self.device)
            return f"sm_{major}{minor}" + ("a" if major >= 9 else "")
        return "sm_90a"

    def do_build(self) -> BuildReport:
        from .build import build_solution

        progress(f"building {self.solution.spec.language.value} solution for {self.target_arch()}")
        report = build_solution(self.solution, target_arch=self.target_arch(), cache_dir=self.cache_dir,
                                timeout_s=self.options.compile_timeout_s)
        emit(EvalEvent(kind="build", build=report))
        return report

    def open_process(self, solution: Solution, build: BuildReport, label: str, *,
                     trusted: bool = False) -> tuple[CandidateProcess, dict[str, Any]]:
        """Start a candidate-style process and load ``solution`` in it.

        The baselines run in processes started the same way (same isolation, same harness), so the
        reference and the candidate are timed under identical conditions.
        """
        spare = self.spares.pop(label, None)
        proc = spare if spare is not None and spare.alive else \
            CandidateProcess(solution, self.options, str(self.device), self.scratch / label)
        if spare is not None and proc is not spare:
            spare.kill()
        answer, _ = proc.request(
            {"cmd": "load", "build": build.model_dump(mode="json"), "solution": solution.model_dump(mode="json"),
             "dps": solution.spec.destination_passing_style, "device": str(self.device), "trusted": trusted},
            CANDIDATE_START_TIMEOUT_S, cuda_ipc=False,
        )
        return proc, answer

    def runs_solution(self) -> bool:
        """Whether this evaluation runs the solution, or only builds it (compile_only was set, or a
        CUDA C++ / CuTe DSL solution on a machine without a GPU)."""
        gpu_only = self.solution.spec.language in (Language.cuda_cpp, Language.cute_dsl)
        return not self.options.compile_only and not (self.device.type == "cpu" and gpu_only)

    def prestart_candidate(self) -> None:
        """Start the candidate's process now, so that its interpreter, torch and CUDA start up while
        the judge does something else (builds the solution, prepares a workload, times the baseline);
        the load command follows when the candidate is needed."""
        if "candidate" not in self.spares:
            self.spares["candidate"] = CandidateProcess(self.solution, self.options, str(self.device),
                                                        self.scratch / "candidate")

    def start_candidate(self) -> dict[str, Any]:
        assert self.build is not None
        self.candidate, answer = self.open_process(self.solution, self.build, "candidate")
        return answer

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

        if self.shared_pool is None:
            return contextlib.nullcontext()
        return torch.cuda.use_mem_pool(self.shared_pool)

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

    def evaluate_workload(self, workload: Workload) -> Trace:

        definition = self.problem.definition
        tol = workload.effective_tolerance
        try:
            sizes = definition.resolve_axes(workload.axes)
        except ValueError as exc:
            return failed_trace(self.problem, self.solution.name, workload, Status.INVALID_REFERENCE, str(exc), self.env)
        specs = [[n, list(s), str(definition.outputs[n].dtype.to_torch())]
                 for n, s in definition.output_shapes(sizes).items()]
        cuda_ipc = self.device.type == "cuda"
        worst = Check(Status.PASSED)
        rounds = self.options.rounds + (5 if self.options.submission else 0)
        last: tuple[list[Any], list[Any], dict[str, Any]] | None = None
        for r in range(rounds):
            try:
                inputs = self.make_inputs(workload, sizes, r)
                references = self.run_reference(inputs)
            except Exception as exc:
                return failed_trace(self.problem, self.solution.name, workload, Status.INVALID_REFERENCE,
                                    f"the reference failed on this workload: {type(exc).__name__}: {exc}", self.env)
            shared_inputs = self.to_shared(inputs)
            buffers = self.output_buffers(references)
            if self.load_failure is not None:
                return failed_trace(self.problem, self.solution.name, workload, *self.load_failure, self.env)
            if self.candidate is None or not self.candidate.alive:
                answer = self.start_candidate()
                if not answer.get("ok"):
                    # Importing the solution failed: it will fail the same way for every workload.
                    self.load_failure = (Status(answer["status"]), answer.get("error", ""))
                    self.candidate.kill()
                    return failed_trace(self.problem, self.solution.name, workload, *self.load_failure, self.env)
            assert self.candidate is not None
            answer, blob = self.candidate.request(
                {"cmd": "check", "inputs": shared_inputs, "outputs": buffers, "output_specs": specs},
                self.options.run_timeout_s, cuda_ipc=cuda_ipc,
            )
            if not answer.get("ok"):
                return failed_trace(self.problem, self.solution.name, workload, Status(answer["status"]),
                                    answer.get("error", ""), self.env)
            outputs = self.read_outputs(buffers, blob, list(references))
            check = compare_outputs(outputs, references, tol)
            if check.passed:
                mutated = self.mutated_inputs(workload, sizes, r, shared_inputs)
                if mutated:
                    check = Check(Status.INCORRECT_NUMERICAL, f"the solution wrote into input {mutated!r}; inputs are read-only")
            if not check.passed:
                # A wrong answer keeps its error statistics, so that tools need not parse the message.
                measured = Correctness(max_absolute_error=check.max_absolute_error,
                                       max_relative_error=check.max_relative_error,
                                       matched_ratio=check.matched_ratio, rounds=r + 1) if check.errors_measured else None
                return failed_trace(self.problem, self.solution.name, workload, check.status,
                                    f"round {r + 1}/{rounds}: {check.message}", self.env, measured)
            worst.max_absolute_error = max(worst.max_absolute_error, check.max_absolute_error)
            worst.max_relative_error = max(worst.max_relative_error, check.max_relative_error)
            worst.matched_ratio = min(worst.matched_ratio, check.matched_ratio)
            last = (shared_inputs, buffers, references)
        assert last is not None
        correctness = Correctness(max_absolute_error=worst.max_absolute_error, max_relative_error=worst.max_relative_error,
                                  matched_ratio=worst.matched_ratio, rounds=rounds)
        return self.time_workload(workload, sizes, specs, last, correctness, tol)

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

    def time_workload(self, workload: Workload, sizes: dict[str, int], specs: list[list[Any]],
                      last: tuple[list[Any], list[Any], dict[str, Any]], correctness: Correctness, tol: Any) -> Trace:
        import torch

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

            check_inputs = generate_inputs(self.problem.definition, workload, sizes, device=self.device,
                                           seed_or_generator=defences.check_seed(), problem_folder=self.problem.folder,
                                           reference_module=self.reference)
            references = self.run_reference(check_inputs)
            cmd["check_inputs"] = self.to_shared(check_inputs)
            cmd["regen"] = defences.regen_recipe(self, workload, sizes)
        answer, blob = self.candidate.request(cmd, self.options.run_timeout_s, cuda_ipc=cuda_ipc)
        if not answer.get("ok"):
            return failed_trace(self.problem, self.solution.name, workload, Status(answer["status"]),
                                "while timing: " + answer.get("error", ""), self.env)
        measurement = answer["measurement"]
        times = [float(t) for t in measurement["times_ms"]]
        if len(times) != iterations or not all(math.isfinite(t) and t >= 0 for t in times):
            return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK,
                                "the timing record is malformed (wrong count or non-finite times)", self.env)
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
        import statistics

        latency = statistics.median(times)
        perf = Performance(latency_ms=latency, timer=measurement["timer"], iterations=iterations,
                           latency_iqr_ms=interquartile_range(times))
        from .baseline import attach_scores

        if self.defences and cuda_ipc and self.options.time_baseline and \
                not defences.baseline_cached(self, workload, self.options.timer):
            # The reference is about to be timed: a candidate left alive could keep the GPU busy from a
            # native thread (baseline sabotage). It restarts for the next workload: a fresh process,
            # which starts up while the baseline is timed (no solution code is loaded in it yet).
            self.candidate.kill()
            self.prestart_candidate()

        verdict = attach_scores(self, workload, sizes, perf, shared_inputs, buffers, specs, warnings)
        if verdict is not None:
            return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK, verdict, self.env)
        del torch
        return Trace(
            definition=self.problem.name,
            solution=self.solution.name,
            workload=workload,
            evaluation=Evaluation(status=Status.PASSED, log="; ".join(warnings), correctness=correctness,
                                  performance=perf, environment=self.env),
        )

    # -- the whole evaluation -----------------------------------------------------------

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
        self.build = self.do_build()
        report.build = self.build
        if not self.build.ok:
            status = self.build.status or Status.COMPILE_ERROR
            report.traces = [failed_trace(self.problem, self.solution.name, w, status, self.build.log, self.env)
                             for w in workloads]
            return self.finish(report, started)
        language = self.solution.spec.language
        self.build.warnings += [f.describe() for f in findings][:20]
        if not self.runs_solution():
            report.ran = False
            report.note = ("compiled only (compile_only was set)" if self.options.compile_only else
                           f"compiled for {self.target_arch()} but not run: {language.value} needs a GPU and none is visible")
            return self.finish(report, started)
        total = len(workloads)
        try:
            for i, workload in enumerate(workloads):
                progress(f"workload {i + 1}/{total} ({', '.join(f'{k}={v}' for k, v in workload.axes.items())})", i, total)
                trace = self.evaluate_workload(workload)
                report.traces.append(trace)
                emit(EvalEvent(kind="trace", trace=trace))
                if self.device.type == "cuda":
                    import torch

                    torch.cuda.empty_cache()
        finally:
            for proc in [self.candidate, *self.baseline_procs.values(), *self.spares.values()]:
                if proc is not None:
                    proc.close()
        report.timer = next((t.evaluation.performance.timer for t in report.traces
                             if t.evaluation and t.evaluation.performance), None)
        return self.finish(report, started)

    def finish(self, report: EvalReport, started: float) -> EvalReport:
        for spare in self.spares.values():  # started ahead, never loaded (the build failed, say)
            spare.close()
        self.spares.clear()
        report.seconds = time.perf_counter() - started
        emit(EvalEvent(kind="report", report=report))
        return report


def main() -> int:
    global _events
    # Events get their own copy of stdout; fd 1 then points at stderr, so anything a library (or
    # the reference) prints, from Python or C, cannot corrupt the event stream.
    _events = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        request = EvalRequest.model_validate_json(sys.stdin.read())
        Judge(request).run()
        return 0
    except Exception as exc:
        import traceback

        emit(EvalEvent(kind="error", message=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()[-3000:]))
        return 1


if __name__ == "__main__":
    sys.exit(main())
