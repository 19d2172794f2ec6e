"""Is this GPU fit to run the next job? NVML's view plus a tiny kernel run in a child process.

A candidate can leave a GPU hung (a kernel that never ends in a process that will not die) or broken
(an Xid error, a fallen-off-the-bus device); NVML alone sees the second but not always the first.
:func:`gpu_is_healthy` therefore also launches a real kernel through the CUDA driver API in a fresh,
isolated child process with a deadline: if it cannot create a context, launch, finish and return
the right numbers in time, the GPU is out of service until a later check passes. The planner's
worker calls it before leasing a GPU slot::

    from solforge.sandbox.health import gpu_is_healthy
    ok, reason = gpu_is_healthy(0)          # (False, "the probe kernel did not finish within 60 s ...")

Nothing here imports torch: the probe talks to ``libcuda`` with ctypes (about half a second on a
healthy GPU, most of it context creation).
"""

from __future__ import annotations

import json
import sys

__all__ = ["PROBE_TIMEOUT_S", "gpu_is_healthy", "probe_gpu"]

PROBE_TIMEOUT_S = 60.0
"""Deadline of the probe process: context creation takes a second, a hung GPU takes forever."""

_PROBE_ELEMENTS = 1 << 20

# One kernel, out[i] = 2 * i + 1, checked on the host. PTX ISA 6.0 for sm_50 is JIT-compiled by
# every driver for every later architecture.
_PTX = r"""
.version 6.0
.target sm_50
.address_size 64

.visible .entry solforge_probe(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    mad.lo.s32 %r6, %r5, 2, 1;
    st.global.u32 [%rd4], %r6;
DONE:
    ret;
}
"""

_PROBE_SCRIPT = r"""
import ctypes, json, sys
ptx, n = sys.argv[1].encode() + b"\0", int(sys.argv[2])
def fail(step, code):
    print(json.dumps({"ok": False, "step": step, "code": int(code)})); sys.exit(0)
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as exc:
    print(json.dumps({"ok": False, "step": "load libcuda", "code": -1, "detail": str(exc)})); sys.exit(0)
def call(step, fn, *args):
    code = fn(*args)
    if code != 0:
        fail(step, code)
call("cuInit", cu.cuInit, 0)
dev = ctypes.c_int()
call("cuDeviceGet", cu.cuDeviceGet, ctypes.byref(dev), 0)
ctx = ctypes.c_void_p()
call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, ctypes.byref(ctx), dev)
call("cuCtxSetCurrent", cu.cuCtxSetCurrent, ctx)
mod = ctypes.c_void_p()
call("cuModuleLoadData", cu.cuModuleLoadData, ctypes.byref(mod), ctypes.c_char_p(ptx))
fn = ctypes.c_void_p()
call("cuModuleGetFunction", cu.cuModuleGetFunction, ctypes.byref(fn), mod, b"solforge_probe")
buf = ctypes.c_uint64()
call("cuMemAlloc", cu.cuMemAlloc_v2, ctypes.byref(buf), ctypes.c_size_t(4 * n))
call("cuMemsetD32", cu.cuMemsetD32_v2, buf, ctypes.c_uint(0), ctypes.c_size_t(n))
arg_out, arg_n = ctypes.c_uint64(buf.value), ctypes.c_uint32(n)
params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(arg_out), ctypes.c_void_p),
                               ctypes.cast(ctypes.byref(arg_n), ctypes.c_void_p))
call("cuLaunchKernel", cu.cuLaunchKernel, fn, ctypes.c_uint((n + 255) // 256), 1, 1, 256, 1, 1, 0, None, params, None)
call("cuCtxSynchronize", cu.cuCtxSynchronize)
host = (ctypes.c_uint32 * n)()
call("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, host, buf, ctypes.c_size_t(4 * n))
bad = next((i for i in range(0, n, 4099) if host[i] != 2 * i + 1), None)
if bad is None and host[n - 1] != 2 * (n - 1) + 1:
    bad = n - 1
cu.cuMemFree_v2(buf)
cu.cuDevicePrimaryCtxRelease_v2(dev)
print(json.dumps({"ok": bad is None, "step": "verify", "code": 0 if bad is None else bad}))
"""


def probe_gpu(index: int, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Run the probe kernel on physical GPU ``index`` in an isolated child with a deadline.

    Returns
    -------
    tuple[bool, str]
        ``(True, "")``, or ``(False, reason)`` when the child timed out, crashed, a driver call
        failed (the step and the CUresult are named) or the kernel computed wrong numbers.
    """
    from .child_env import scratch_dir, scrubbed_env
    from .isolation import run_isolated

    with scratch_dir() as scratch:
        result = run_isolated(
            [sys.executable, "-c", _PROBE_SCRIPT, _PTX, str(_PROBE_ELEMENTS)],
            cwd=scratch,
            env=scrubbed_env(gpu_index=index, scratch_dir=scratch),
            timeout_s=timeout_s,
            isolate_network=True,
        )
    if result.timed_out:
        return False, (f"the probe kernel did not finish within {timeout_s:g} s on GPU {index}: the GPU is hung or "
                       "still busy with a process that would not die")
    for line in reversed(result.stdout.strip().splitlines()):
        try:
            verdict = json.loads(line)
        except ValueError:
            continue
        if verdict.get("ok"):
            return True, ""
        if verdict.get("step") == "verify":
            return False, f"the probe kernel computed wrong values on GPU {index} (first at element {verdict['code']})"
        detail = f" ({verdict['detail']})" if verdict.get("detail") else ""
        return False, f"CUDA driver call {verdict.get('step')} failed with CUresult {verdict.get('code')} on GPU {index}{detail}"
    signal = f"killed by signal {result.killed_by_signal}" if result.killed_by_signal else f"exit {result.returncode}"
    return False, f"the probe process failed on GPU {index} ({signal}): {result.stderr.strip()[-500:]}"


def _leftover_processes(index: int) -> list[int]:
    """PIDs holding a context on GPU ``index`` (NVML), empty when NVML cannot tell."""
    from .sol.hardware import _nvml

    with _nvml() as nv:
        if nv is None:
            return []
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:
            return []
        return sorted(int(p.pid) for p in procs)


def gpu_is_healthy(index: int, *, timeout_s: float = PROBE_TIMEOUT_S, allow_processes: bool = False) -> tuple[bool, str]:
    """Whether physical GPU ``index`` may take the next job, and if not why.

    Three checks, cheapest first: NVML health (:func:`solforge.sandbox.sol.hardware.check_health`:
    reachable, not throttled or overheating, no uncorrected ECC errors, no pending page retirement or
    row remapping); no process still holding a context on it (a candidate that survived its kill, a
    hung job), unless ``allow_processes``; and the probe kernel (:func:`probe_gpu`) completing with
    the right values within ``timeout_s``.

    Parameters
    ----------
    index
        The NVML (``nvidia-smi``) index of the GPU.
    timeout_s
        Deadline for the probe process.
    allow_processes
        Do not fail on other processes using the GPU (a shared machine).

    Returns
    -------
    tuple[bool, str]
        ``(True, "")`` or ``(False, reason)``; never raises.
    """
    try:
        from .sol.hardware import check_health

        health = check_health(index)
        if not health.ok:
            return False, health.reason or f"GPU {index} failed its NVML health check"
        if not allow_processes:
            pids = _leftover_processes(index)
            if pids:
                return False, f"processes {pids[:8]} still hold GPU {index}; it stays out of service until they are gone"
        return probe_gpu(index, timeout_s)
    except Exception as exc:  # a health check must give a verdict, not take the caller down
        return False, f"the health check of GPU {index} failed: {type(exc).__name__}: {exc}"


if __name__ == "__main__":
    gpu = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    ok, why = gpu_is_healthy(gpu)
    print(json.dumps({"gpu": gpu, "ok": ok, "reason": why}))
    sys.exit(0 if ok else 1)
