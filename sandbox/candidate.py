"""The candidate process: the only place a solution's code is imported and called.

Started by the judge with a scrubbed environment, its own scratch folder as working directory and
home, resource limits and (where the kernel allows) no network. It speaks to the judge over one
socket (see channel.py): commands come in as pickles, answers go out as JSON. It never sees the
reference outputs or the seed; inputs arrive already generated.

Harness integrity: before the solution is imported, the identities of the functions the timing and
checking depend on are recorded; after the import and after every command they are compared again,
and the count of Python threads is checked. A change is reported as tampering (REWARD_HACK).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import channel, defences

_MAX_ERROR_CHARS = 3000


def _trim_traceback(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text if len(text) <= _MAX_ERROR_CHARS else "...(trimmed)\n" + text[-_MAX_ERROR_CHARS:]


def _guarded() -> dict[str, Any]:
    """The functions whose identity must not change once the solution is loaded."""
    import torch

    from . import timing

    guarded: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.Tensor.copy_": torch.Tensor.copy_,
        "torch.Tensor.fill_": torch.Tensor.fill_,
        "torch.Tensor.zero_": torch.Tensor.zero_,
        "torch.Tensor.clone": torch.Tensor.clone,
        "timing.time_calls": timing.time_calls,
        "timing.ShiftingPool.args_for_call": timing.ShiftingPool.args_for_call,
        "timing.L2Flusher.flush": timing.L2Flusher.flush,
        "timing.allowed_persisting_bytes": timing.allowed_persisting_bytes,
        "timing.CuptiRecorder.spans": timing.CuptiRecorder.spans,
        "timing.CuptiRecorder._buffer_completed": timing.CuptiRecorder._buffer_completed,
        "channel.send_json": channel.send_json,
        "candidate.Harness.handle": Harness.handle,
        "candidate.Harness.tampering": Harness.tampering,
    }
    if timing.cupti_available():
        from cupti import cupti

        for name in ("get_timestamp", "activity_flush_all", "activity_enable", "activity_register_callbacks"):
            guarded[f"cupti.{name}"] = getattr(cupti, name)
    return guarded


def _block_runtime_compilation() -> None:
    """C++ must be declared as cuda_cpp and built by the harness, not compiled from Python at run time."""
    from torch.utils import cpp_extension

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(
            "torch.utils.cpp_extension.load/load_inline is disabled inside solutions: declare the C++ "
            "sources as a cuda_cpp solution so the harness builds them"
        )

    cpp_extension.load = refuse
    cpp_extension.load_inline = refuse


class Harness:
    """Runs commands from the judge against the loaded entry function."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.fn: Callable[..., Any] | None = None
        self.dps = True
        self.device = "cpu"
        self.guarded: dict[str, Any] = {}
        self.threads_at_load = 0
        self.trusted = False
        """Set for the baseline processes, which run the problem's own reference, not a candidate."""
        # The defences of sandbox/defences/ (on unless the judge was started with SOLFORGE_DEFENCES=off).
        self.defences = True
        self.notes: list[str] = []
        """Confinement steps that could not be applied on this machine (reported with the timings)."""
        self.audit = defences.AuditGuard()
        self.integrity: defences.Integrity | None = None
        self.roots: list[str] = []
        self.known_threads: set[int] = set()
        self.stream_id: int | None = None

    def tampering(self) -> str | None:
        if self.trusted:
            return None  # the reference timed as a baseline: trusted code, which may use threads (inductor)
        current = _guarded()
        changed = sorted(k for k, v in self.guarded.items() if current.get(k) is not v)
        if changed:
            return f"the solution replaced harness functions: {changed}"
        if self.defences:
            return self._defence_problems()
        if threading.active_count() > self.threads_at_load:
            names = sorted(t.name for t in threading.enumerate())
            return f"the solution started Python threads ({names}); work must happen inside the call"
        return None

    def _defence_problems(self) -> str | None:
        """The runtime checks of defences/guards.py: audit-hook violations, integrity, threads, torch state."""
        if self.audit.violations:
            return "the solution was stopped doing what only a hack does: " + "; ".join(dict.fromkeys(self.audit.violations))
        changed = self.integrity.changed() if self.integrity is not None else []
        if changed:
            return f"the solution replaced what the harness relies on: {changed[:8]}"
        threads = defences.thread_problems(self.roots, self.known_threads)
        if threads:
            return (f"threads still running the solution's code after the call ({threads}): work must happen "
                    "inside the call")
        problems = defences.torch_state_problems(self.device, self.stream_id) if self.fn is not None else []
        return "; ".join(problems) or None

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        kind = cmd["cmd"]
        if kind == "load":
            return self._load(cmd)
        if self.fn is None:
            return {"ok": False, "status": "RUNTIME_ERROR", "error": "no solution loaded"}
        if kind == "check":
            return self._check(cmd)
        if kind == "time":
            return self._time(cmd)
        if kind == "profile":
            return self._profile(cmd)
        return {"ok": False, "status": "RUNTIME_ERROR", "error": f"unknown command {kind!r}"}

    def _load(self, cmd: dict[str, Any]) -> dict[str, Any]:
        import torch

        self.dps = bool(cmd["dps"])
        self.device = cmd["device"]
        self.trusted = bool(cmd.get("trusted", False))
        if self.trusted:
            self.defences = False
        if self.device.startswith("cuda"):
            torch.cuda.init()
            torch.empty(1, device=self.device)  # create the context before the solution runs
        _import_language_packages(self.device, languages_of(cmd["solution"]))
        _block_runtime_compilation()
        self.guarded = _guarded()
        self.threads_at_load = threading.active_count()
        if self.defences:
            self._arm(cmd)
        started = time.perf_counter()
        try:
            from solforge.problems import Solution

            from .api import BuildReport
            from .build import load_entry

            self.fn = load_entry(BuildReport.model_validate(cmd["build"]), Solution.model_validate(cmd["solution"]))
        except BaseException as exc:  # the solution's import failed: its fault, reported as a status
            hack = self._defence_problems() if self.defences else None
            if hack:
                return {"ok": False, "status": "REWARD_HACK", "error": hack}
            return {"ok": False, "status": "COMPILE_ERROR", "error": "importing the solution failed:\n" + _trim_traceback(exc)}
        # Import may legitimately spawn threads (compilers, thread pools); the limit counts from here.
        self.threads_at_load = threading.active_count()
        if self.integrity is not None:
            self.integrity.freeze_hooks()
        if self.device.startswith("cuda"):
            self.stream_id = torch.cuda.current_stream().stream_id
        hack = self.tampering()
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        return {"ok": True, "load_seconds": time.perf_counter() - started}

    def _arm(self, cmd: dict[str, Any]) -> None:
        """Before the solution's code first runs: the audit hook, the integrity snapshot, the thread baseline."""
        import safetensors.torch  # noqa: F401  (imported now: a source named safetensors.py cannot shadow it later)

        from solforge.problems import inputs as problem_inputs
        from solforge.problems import random_inputs

        artifact = Path(cmd["build"].get("artifact_dir") or ".")
        self.roots = [str(artifact / "src"), str(artifact / "build")]
        self.audit.install(self.roots, Path.cwd(), defences.invoker_codes([Harness._invoke]))
        from . import timing

        self.integrity = defences.Integrity(
            defences.harness_namespaces(),
            [timing, channel, defences, defences.guards, problem_inputs, random_inputs, sys.modules[__name__]],
        )
        self.known_threads = {t.ident for t in threading.enumerate() if t.ident is not None}

    def _invoke(self, *args: Any) -> Any:
        """The one place the solution is called (the audit hook attributes native callbacks here)."""
        assert self.fn is not None
        return self.fn(*args)

    def _call(self, inputs: list[Any], outputs: list[Any]) -> Any:
        if self.dps:
            return self._invoke(*inputs, *outputs)
        return self._invoke(*inputs)

    def _returned_outputs(self, result: Any, specs: list[list[Any]]) -> list[Any]:
        """Validate what a non-DPS run returned: exactly the outputs, as plain tensors."""
        import torch

        values = list(result) if isinstance(result, tuple | list) else [result]
        if len(values) != len(specs):
            raise _Verdict("INCORRECT_SHAPE", f"run returned {len(values)} values, expected {len(specs)} outputs")
        for value, (name, shape, dtype) in zip(values, specs, strict=True):
            if type(value) is not torch.Tensor:
                raise _Verdict(
                    "REWARD_HACK" if isinstance(value, torch.Tensor) else "RUNTIME_ERROR",
                    f"output {name!r} is a {type(value).__module__}.{type(value).__name__}, not a plain torch.Tensor",
                )
            if list(value.shape) != list(shape):
                raise _Verdict("INCORRECT_SHAPE", f"output {name!r}: shape {tuple(value.shape)}, expected {tuple(shape)}")
            if str(value.dtype) != dtype:
                raise _Verdict("INCORRECT_DTYPE", f"output {name!r}: dtype {value.dtype}, expected {dtype}")
        return values

    def _check_outputs(self, produced: list[Any], specs: list[list[Any]]) -> None:
        """Outputs are plain tensors (no subclass, no swapped class) and no torch mode outlives the call."""
        problems = defences.plain_tensor_problems(produced, [spec[0] for spec in specs])
        problems += defences.torch_state_problems(self.device, self.stream_id)
        if problems:
            raise _Verdict("REWARD_HACK", "; ".join(problems))

    def _deliver(self, produced: list[Any], buffers: list[Any]) -> dict[str, Any]:
        """Put the outputs where the judge can read them."""
        if self.device.startswith("cuda"):
            for src, dst in zip(produced, buffers, strict=True):
                if src is not dst:
                    dst.copy_(src)
            import torch

            torch.cuda.synchronize()
            return {}
        from safetensors.torch import save

        return {"_blob": save({str(i): t.contiguous() for i, t in enumerate(produced)})}

    def _check(self, cmd: dict[str, Any]) -> dict[str, Any]:
        import torch

        inputs, buffers, specs = cmd["inputs"], cmd["outputs"], cmd["output_specs"]
        try:
            call_outputs = buffers if self.device.startswith("cuda") else [b.clone() for b in buffers]
            # On the GPU the judge compares the shared inputs with a regenerated copy; on the CPU the
            # candidate works on its own copy, so it keeps a pristine one to compare with.
            pristine = ([v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
                        if self.defences and not self.device.startswith("cuda") else None)
            result = self._call(inputs, call_outputs)
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
            produced = call_outputs if self.dps else self._returned_outputs(result, specs)
            if self.defences:
                self._check_outputs(produced, specs)
                mutated = _mutated(pristine, inputs) if pristine is not None else None
                if mutated is not None:
                    raise _Verdict("INCORRECT_NUMERICAL", f"the solution wrote into input {mutated}; inputs are read-only")
            answer = {"ok": True, **self._deliver(produced, buffers)}
        except _Verdict as v:
            answer = {"ok": False, "status": v.status, "error": v.message}
        except torch.cuda.OutOfMemoryError as exc:
            answer = {"ok": False, "status": "RUNTIME_ERROR", "error": "out of GPU memory: " + str(exc)[:500]}
        except BaseException as exc:
            answer = {"ok": False, "status": "RUNTIME_ERROR", "error": _trim_traceback(exc), "fatal": _is_sticky(exc)}
        hack = self.tampering()
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        return answer

    def _time(self, cmd: dict[str, Any]) -> dict[str, Any]:
        import torch

        from . import timing

        inputs, buffers, specs = cmd["inputs"], cmd["outputs"], cmd["output_specs"]
        warmup, iterations, check_at = int(cmd["warmup"]), int(cmd["iterations"]), int(cmd["check_at"])
        device = torch.device(self.device)
        templates = [*inputs, *buffers] if self.dps else list(inputs)
        source = None
        if self.defences and cmd.get("regen") is not None and cmd.get("check_inputs") is not None and check_at >= 0:
            # Every timed call gets freshly drawn inputs; the checked one gets the judge's check set.
            try:
                source = defences.FreshInputs(cmd["regen"], self.device, inputs, cmd["check_inputs"], warmup + check_at)
            except Exception as exc:  # a recipe the candidate cannot draw from: the harness's fault, not the solution's
                return {"ok": False, "status": "RUNTIME_ERROR", "error": f"harness: cannot draw fresh inputs: {exc}"}
        pool = timing.ShiftingPool(templates, warmup + iterations, fill_outputs_from=len(inputs) if self.dps else None,
                                   source=source)
        checked: dict[str, Any] = {}

        def call(*args: Any) -> Any:
            if self.dps:
                return self._invoke(*args)
            return self._invoke(*args[: len(inputs)])

        def after_call(i: int, args: list[Any], result: Any) -> None:
            if i != check_at:
                return
            produced = args[len(inputs) :] if self.dps else self._returned_outputs(result, specs)
            if self.defences:
                self._check_outputs(produced, specs)
            checked.update(self._deliver(produced, buffers))

        try:
            m = timing.time_calls(
                call, pool.args_for_call, warmup=warmup, iterations=iterations, device=device,
                timer=cmd.get("timer", "auto"), after_call=after_call, check_streams=self.defences,
            )
        except _Verdict as v:
            return {"ok": False, "status": v.status, "error": v.message}
        except BaseException as exc:
            return {"ok": False, "status": "RUNTIME_ERROR", "error": _trim_traceback(exc), "fatal": _is_sticky(exc)}
        hack = self.tampering() or "; ".join(m.violations)
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        m.warnings += [f"sandbox: {w}" for w in self.audit.warnings] + self.notes
        return {"ok": True, "measurement": m.to_json(), **checked}


    def _profile(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """One call under the profiler, after one unprofiled call (JIT compiles and autotuning stay out):
        between cudaProfilerStart and Stop for Nsight Compute (which runs this process with
        ``--profile-from-start off``), or with CUPTI recording each GPU operation's span."""
        import torch

        from . import timing

        inputs, buffers = cmd["inputs"], cmd["outputs"]
        records: list[tuple[int, int, str]] = []
        try:
            self._call(inputs, buffers)
            torch.cuda.synchronize()
            if cmd["tool"] == "ncu":
                torch.cuda.profiler.start()
                self._call(inputs, buffers)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            else:
                cupti = timing.CuptiRecorder()
                cupti.start()
                began = cupti.timestamp()
                self._call(inputs, buffers)
                torch.cuda.synchronize()
                ended = cupti.timestamp()
                cupti.stop()
                records = [r for r in cupti.gpu_records if began <= r[0] <= ended]
        except BaseException as exc:
            return {"ok": False, "status": "RUNTIME_ERROR", "error": _trim_traceback(exc), "fatal": _is_sticky(exc)}
        hack = self.tampering()
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        return {"ok": True, "kernels": records}


class _Verdict(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _mutated(pristine: list[Any], inputs: list[Any]) -> str | None:
    """The position of the first input tensor that no longer equals its pristine copy."""
    import torch

    for k, (before, after) in enumerate(zip(pristine, inputs, strict=True)):
        if isinstance(before, torch.Tensor) and not torch.equal(before, after):
            return f"#{k + 1}"
    return None


def _is_sticky(exc: BaseException) -> bool:
    """CUDA errors such as an illegal address or a device assert poison the context: the process must go."""
    text = str(exc)
    return any(s in text for s in ("illegal memory access", "device-side assert", "unspecified launch failure",
                                   "misaligned address", "illegal instruction", "CUDA error"))


def _warm_up(device: str, language: str | None = None) -> None:
    """Import what loading a solution and timing it need: torch and CUDA, the harness, the timer's
    CUPTI, and the kernel languages' own packages (library code, never the solution's): all of them,
    or those of ``language`` when the judge knows it (see :func:`_import_language_packages`)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.init()
        torch.empty(1, device=device)
    import safetensors.torch  # noqa: F401

    from solforge.problems import inputs  # noqa: F401

    from . import build, timing  # noqa: F401

    timing.cupti_available()
    if device.startswith("cuda"):
        timing.cuda_runtime()  # the L2 flusher's persisting-line reset (90 ms to import)
        timing.clear_persisting_l2()  # before any solution: a carve-out found later is the solution's
        import_torch_lazy_modules()
    _import_language_packages(device, [language] if language else None)


def import_torch_lazy_modules() -> None:
    """Modules torch imports on the first call of common tensor methods, not at ``import torch``:
    ``Tensor.dim_order()`` (which CuTe DSL solutions call to describe their tensors) and the shape
    checks of many ops import ``torch.fx.experimental.symbolic_shapes``, and with it sympy. That was 3 s
    of a CuTe DSL rmsnorm's first call on the H200 (2026-12-03, sympy without bytecode), paid in every
    candidate process inside the judge's checks; imported here, a spare pays it before it is needed.
    :func:`_warm_up` calls it on a GPU only: a CPU candidate's start-up is what the CPU's tests wait for."""
    with contextlib.suppress(Exception):
        import torch.fx.experimental.symbolic_shapes  # noqa: F401


def prepare_triton() -> None:
    """Triton's per-process costs that come before any kernel, paid by a spare before a solution arrives.
    Its first JIT compile, even one its cache answers, hashes Triton's own compiler and backend files into
    the cache key (``triton_key``, kept for the process): 0.38 s of a Triton rmsnorm's 0.44 s first call
    on the H200 with the cache warm (2026-12-03), paid inside the judge's checks. Its CUDA driver (a
    helper module built once into Triton's cache, and the device's target) starts on the first launch.
    Library code only; on a machine without a GPU the driver part fails and is skipped."""
    with contextlib.suppress(Exception):
        from triton.runtime.cache import triton_key

        triton_key()
    with contextlib.suppress(Exception):
        from triton.runtime import driver

        driver.active.get_current_target()


def languages_of(solution: dict[str, Any]) -> list[str]:
    """The languages a solution as the judge sends it (``Solution.model_dump``) names."""
    spec = solution.get("spec")
    languages = spec.get("languages") if isinstance(spec, dict) else None
    return [str(x) for x in languages] if isinstance(languages, list) else []


def _import_language_packages(device: str, languages: list[str] | None) -> None:
    """The kernel languages' own packages (library code): triton always (torch.compile uses it too),
    the CuTe DSL for a solution that names ``cute_dsl`` or when the languages are not known yet
    (None). Importing an already imported package costs nothing, so :meth:`Harness._load` calls this
    again with the solution's languages: a process started for another language gets them before
    arming, not from inside the solution's import, where the audit hook would see the DSL's own exec
    and inspect."""
    with contextlib.suppress(Exception):
        import triton  # noqa: F401
    if device.startswith("cuda") and (languages is None or "triton" in languages):
        prepare_triton()
    if device.startswith("cuda") and (languages is None or "cute_dsl" in languages):
        with contextlib.suppress(Exception):
            import cutlass.cute  # noqa: F401


def _run_near_the_gpu() -> None:
    """Keep this process on the CPUs of the GPU's own NUMA node, as GPU benchmarks usually bind: a
    host-bound solution's launches (eager PyTorch: kernels with host work between them) cross the socket
    from a far node. One node: no change. Before torch, so that every thread it starts inherits the set."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    if not visible.isdigit():  # a UUID or MIG name: NVML's index is not known here
        return
    from .sol.hardware import gpu_local_cpus

    cpus = gpu_local_cpus(int(visible))
    if cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)


CU_CTX_SCHED_SPIN = 1
"""cuda.h: the host thread spins while it waits for the GPU, rather than yielding or sleeping."""


def _spin_while_waiting() -> str | None:
    """Make the primary CUDA context spin in ``synchronize`` (before torch creates it); why not, if it failed.

    The harness synchronises after every timed call. Under the driver's default policy the waiting thread may
    yield, and the host work that follows (the next launch's dispatch) starts on a CPU that went idle. On the
    H200 the gap between an eager PyTorch rmsnorm's two launches was 8.9-17.8 us by process under the default
    and 7.0-8.3 us in four of six spinning processes, with the kernels the same in all (h200-2026-12-04,
    launch_gaps.json). The processes at the higher level are rarer this way, but they still occur. A baseline
    process starts the same way, so the candidate and its baseline are timed alike."""
    import ctypes

    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return f"no libcuda ({exc})"
    device = ctypes.c_int()
    for call, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(device), 0)),
                       ("cuDevicePrimaryCtxSetFlags_v2", (device, CU_CTX_SCHED_SPIN))):
        code = getattr(cu, call)(*args)
        if code != 0:
            return f"{call} returned CUresult {code}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="solforge candidate process (started by the judge)")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--defences", choices=("on", "off"), default="on")
    parser.add_argument("--device", default="cpu", help="where the solution will run (cuda:N or cpu)")
    parser.add_argument("--language", help="the solution's kernel language, when known before it is sent")
    args = parser.parse_args(argv)
    notes: list[str] = []
    if args.device.startswith("cuda"):
        _run_near_the_gpu()
        not_spinning = _spin_while_waiting()
        if not_spinning:
            notes.append(f"timing: the CUDA context could not be set to spin while waiting ({not_spinning})")
    if args.defences == "on":
        # Before any solution code exists in this process: Landlock (writes only in the scratch folder)
        # and seccomp (no namespace changes, no ptrace). Only what could not be applied is reported.
        notes += [n for n in defences.confine_process(defences.writable_folders(Path.cwd()))
                  if not n.startswith(("landlock ABI", "seccomp:"))]
    # Start torch, the CUDA context and the harness while the judge is still building and preparing
    # inputs (or, for a warm judge's spare, before the evaluation exists): the first command then
    # finds this process warm. Nothing of the solution is here yet.
    _warm_up(args.device, args.language)
    from .processes import STACK_SIGNAL, WARM_MARKER

    # A call that hangs gets its stacks written to the log before the judge kills the process, so the
    # TIMEOUT says where it hung (native frames show as the Python line that called them).
    faulthandler.register(STACK_SIGNAL, file=sys.stderr, all_threads=True)

    Path(WARM_MARKER).touch()  # the judge times nothing while a process is still starting up
    sock = socket.socket(fileno=args.fd)
    # The solution's prints must not reach the judge's channel; they land in the log the judge tails.
    sys.stdout = io.TextIOWrapper(os.fdopen(os.dup(2), "wb"), write_through=True)
    harness = Harness(sock)
    harness.defences = args.defences == "on"
    harness.notes = [f"sandbox: {n}" for n in notes]
    while True:
        try:
            cmd = channel.recv_pickle(sock)
        except channel.ChannelClosed:
            return 0
        if cmd.get("cmd") == "exit":
            return 0
        answer = harness.handle(cmd)
        # Echo the judge's per-command nonce: an answer forged by the solution must first find it.
        answer["nonce"] = cmd.get("nonce")
        blob = answer.pop("_blob", None)
        if blob is not None:
            answer["has_blob"] = True
        channel.send_json(sock, answer)
        if blob is not None:
            channel.send_frame(sock, channel.KIND_BYTES, blob)
        if answer.get("fatal"):
            return 3


if __name__ == "__main__":
    sys.exit(main())
