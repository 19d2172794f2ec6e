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
import io
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from . import channel

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
        "timing._Cupti.spans": timing._Cupti.spans,
        "timing._Cupti._buffer_completed": timing._Cupti._buffer_completed,
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

    def tampering(self) -> str | None:
        current = _guarded()
        changed = sorted(k for k, v in self.guarded.items() if current.get(k) is not v)
        if changed:
            return f"the solution replaced harness functions: {changed}"
        if threading.active_count() > self.threads_at_load:
            names = sorted(t.name for t in threading.enumerate())
            return f"the solution started Python threads ({names}); work must happen inside the call"
        return None

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
        return {"ok": False, "status": "RUNTIME_ERROR", "error": f"unknown command {kind!r}"}

    def _load(self, cmd: dict[str, Any]) -> dict[str, Any]:
        import torch

        self.dps = bool(cmd["dps"])
        self.device = cmd["device"]
        if self.device.startswith("cuda"):
            torch.cuda.init()
            torch.empty(1, device=self.device)  # create the context before the solution runs
        _block_runtime_compilation()
        self.guarded = _guarded()
        self.threads_at_load = threading.active_count()
        started = time.perf_counter()
        try:
            from solforge.problems import Solution

            from .api import BuildReport
            from .build import load_entry

            self.fn = load_entry(BuildReport.model_validate(cmd["build"]), Solution.model_validate(cmd["solution"]))
        except BaseException as exc:  # the solution's import failed: its fault, reported as a status
            return {"ok": False, "status": "COMPILE_ERROR", "error": "importing the solution failed:\n" + _trim_traceback(exc)}
        # Import may legitimately spawn threads (compilers, thread pools); the limit counts from here.
        self.threads_at_load = threading.active_count()
        hack = self.tampering()
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        return {"ok": True, "load_seconds": time.perf_counter() - started}

    def _call(self, inputs: list[Any], outputs: list[Any]) -> Any:
        assert self.fn is not None
        if self.dps:
            return self.fn(*inputs, *outputs)
        return self.fn(*inputs)

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
            result = self._call(inputs, call_outputs)
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
            produced = call_outputs if self.dps else self._returned_outputs(result, specs)
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
        pool = timing.ShiftingPool(templates, warmup + iterations, fill_outputs_from=len(inputs) if self.dps else None)
        checked: dict[str, Any] = {}

        def call(*args: Any) -> Any:
            if self.dps:
                return self.fn(*args)  # type: ignore[misc]
            return self.fn(*args[: len(inputs)])  # type: ignore[misc]

        def after_call(i: int, args: list[Any], result: Any) -> None:
            if i != check_at:
                return
            produced = args[len(inputs) :] if self.dps else self._returned_outputs(result, specs)
            checked.update(self._deliver(produced, buffers))

        try:
            m = timing.time_calls(
                call, pool.args_for_call, warmup=warmup, iterations=iterations, device=device,
                timer=cmd.get("timer", "auto"), after_call=after_call,
            )
        except _Verdict as v:
            return {"ok": False, "status": v.status, "error": v.message}
        except BaseException as exc:
            return {"ok": False, "status": "RUNTIME_ERROR", "error": _trim_traceback(exc), "fatal": _is_sticky(exc)}
        hack = self.tampering()
        if hack:
            return {"ok": False, "status": "REWARD_HACK", "error": hack}
        return {"ok": True, "measurement": m.to_json(), **checked}


class _Verdict(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _is_sticky(exc: BaseException) -> bool:
    """CUDA errors such as an illegal address or a device assert poison the context: the process must go."""
    text = str(exc)
    return any(s in text for s in ("illegal memory access", "device-side assert", "unspecified launch failure",
                                   "misaligned address", "illegal instruction", "CUDA error"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="solforge candidate process (started by the judge)")
    parser.add_argument("--fd", type=int, required=True)
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    # The solution's prints must not reach the judge's channel; they land in the log the judge tails.
    sys.stdout = io.TextIOWrapper(os.fdopen(os.dup(2), "wb"), write_through=True)
    harness = Harness(sock)
    while True:
        try:
            cmd = channel.recv_pickle(sock)
        except channel.ChannelClosed:
            return 0
        if cmd.get("cmd") == "exit":
            return 0
        answer = harness.handle(cmd)
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
