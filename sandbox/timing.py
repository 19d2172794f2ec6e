"""Timing one call of a kernel, every stream included.

The loop, for each of ``warmup + iterations`` calls::

    args  = fresh copies of the inputs at a new address, outputs at a new address  (untimed)
    flush L2 by writing a buffer twice its size; synchronise                        (untimed)
    t0 = CUPTI timestamp; fn(*args); synchronise the device; t1 = CUPTI timestamp    (the window)
    (after the loop) time of call i = max(end) - min(start) over every GPU activity
                     that started inside window i

With CUPTI the GPU activities are kernels, memcpys and memsets on any stream, in the same clock
as the host timestamps. The flush has finished before t0 and the device is idle again at t1, so
everything that runs in the window belongs to the call, whichever stream or thread launched it.
Only GPU activity is traced, not the runtime and driver APIs: API tracing adds tens of microseconds
to every launch, which would count against multi-kernel solutions through the gaps it opens. CUDA events on the current stream are
the stated fallback when CUPTI is not importable; on the CPU the host clock is used and the result
is labelled ``cpu``.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

TimerKind = Literal["cupti", "cuda_events", "cpu"]

NOISY_IQR_RATIO = 0.10
"""Above this IQR/median the measurement carries a noise warning (do_bench-style heuristic)."""
WARMUP_MIN_S = 0.025
"""Warm up for at least this long (and at least ``warmup`` calls) after the GPU sat idle: it then runs
below its boost clock for a while, which would show as run-to-run spread on kernels of a few
microseconds (triton's do_bench warms up for 25 ms for the same reason)."""
WARMUP_IDLE_S = 0.25
"""A timed loop that starts within this long of the previous one's end (the next workload of the same
evaluation) finds the clocks still up and warms up with its ``warmup`` calls only: 16 workloads
otherwise spend 0.4 s just keeping a busy GPU busy."""
POINTER_SHIFT_BYTES = 256
"""Each call's copies sit this many bytes further into their pool, so no two calls share an address."""


@dataclass
class Measurement:
    """Per-call times of one timed loop and how they were taken."""

    times_ms: list[float]
    timer: TimerKind
    warmup: int
    l2_flushed: bool
    kernels_per_call: list[int] = field(default_factory=list)
    kernel_names: list[list[str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    """Reward hacks seen while timing (GPU work still running after the current stream drained)."""

    @property
    def median_ms(self) -> float:
        return resolved_median(self.times_ms)

    @property
    def iqr_ms(self) -> float:
        return interquartile_range(self.times_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "times_ms": self.times_ms,
            "timer": self.timer,
            "warmup": self.warmup,
            "l2_flushed": self.l2_flushed,
            "kernels_per_call": self.kernels_per_call,
            "kernel_names": self.kernel_names[:2],
            "warnings": self.warnings,
        }


CLOCK_TICK_MIN_NS = 8
"""A common step of at least this many nanoseconds between the times marks a clock that counts in ticks
(CUPTI reads the H200's in 32 ns steps); finer steps are noise, not a clock."""


def clock_tick_ns(times_ns: Sequence[int]) -> int | None:
    """The step every difference between ``times_ns`` is a multiple of, when it is a clock's tick."""
    distinct = sorted(set(times_ns))
    if len(distinct) < 2:
        return None
    tick = 0
    for low, high in itertools.pairwise(distinct):
        tick = math.gcd(tick, high - low)
    return tick if tick >= CLOCK_TICK_MIN_NS else None


def resolved_median(times_ms: Sequence[float]) -> float:
    """The median of per-call times, resolved below the tick of the clock that took them.

    CUPTI reads the H200's clock in 32 ns steps, so every time of a 1.7 us kernel is one of a few
    values 1.9% apart and the plain median jumps a whole step between two evaluations of the same
    kernel (5-8% spread on the smallest workloads, 2026-12-03). Read as grouped data, a time ``t``
    stands for the interval ``t +- tick/2``, and the median interpolates inside the interval that
    holds the middle call (``statistics.median_grouped``). It stays within half a tick of the plain
    median; times off any grid (CUDA events, the host clock) get the plain median.
    """
    if not times_ms:
        raise ValueError("no times to take the median of")
    times_ns = [round(t * 1e6) for t in times_ms]
    if any(abs(t * 1e6 - ns) > 1e-3 for t, ns in zip(times_ms, times_ns, strict=True)):
        return statistics.median(times_ms)  # not whole nanoseconds: not a CUPTI clock
    tick = clock_tick_ns(times_ns)
    if tick is None:
        return statistics.median(times_ms)
    return statistics.median_grouped(times_ns, interval=tick) / 1e6


def interquartile_range(times: list[float]) -> float:
    """Q3 - Q1 of the times (0 for fewer than four)."""
    if len(times) < 4:
        return 0.0
    q = statistics.quantiles(times, n=4)
    return q[2] - q[0]


def cuda_runtime() -> Any:
    """cuda-python's runtime bindings, or None where they are not installed."""
    try:
        from cuda.bindings import runtime
    except ImportError:
        return None
    return runtime


_last_loop_end = float("-inf")
"""When this process's last timed GPU loop ended (``time.perf_counter``), for :data:`WARMUP_IDLE_S`."""


def _loop_ended() -> None:
    global _last_loop_end
    _last_loop_end = time.perf_counter()


_persisting_floor = 0
"""The persisting-L2 carve-out left after :func:`clear_persisting_l2` (0 where the limit could be set)."""


def clear_persisting_l2() -> int | None:
    """Set the persisting-L2 carve-out to 0 before any solution is loaded; return what is left.

    The driver starts a context with a carve-out already set (11.25 MiB on an H200 with driver 580),
    so a nonzero limit alone says nothing: the harness clears it while only trusted code has run, and a
    limit above what is left afterwards is the solution's doing.
    """
    global _persisting_floor
    runtime = cuda_runtime()
    if runtime is None:
        return None
    limit = runtime.cudaLimit.cudaLimitPersistingL2CacheSize
    runtime.cudaDeviceSetLimit(limit, 0)  # refused on GPUs without the carve-out: the floor is then what it reads
    err, value = runtime.cudaDeviceGetLimit(limit)
    if err != runtime.cudaError_t.cudaSuccess:
        return None
    _persisting_floor = int(value)
    return _persisting_floor


def allowed_persisting_bytes() -> int:
    """The carve-out a timing may find set without blaming the solution (see :func:`clear_persisting_l2`)."""
    return _persisting_floor


class L2Flusher:
    """Evicts the L2 cache by writing a buffer twice its size.

    Lines marked persisting (a carve-out set with ``cudaLimitPersistingL2CacheSize`` and a stream's
    access-policy window) survive ordinary writes, so every flush first turns them back into normal
    lines; :meth:`persisting_bytes` says whether a carve-out was set at all (a REWARD_HACK).
    """

    def __init__(self, device: torch.device) -> None:
        import torch

        props = torch.cuda.get_device_properties(device)
        size = max(int(getattr(props, "L2_cache_size", 0)) * 2, 64 * 1024 * 1024)
        self._buffer = torch.empty(size // 4, dtype=torch.int32, device=device)
        self._runtime = cuda_runtime()

    def flush(self) -> None:
        if self._runtime is not None:
            self._runtime.cudaCtxResetPersistingL2Cache()
        self._buffer.zero_()

    def persisting_bytes(self) -> int | None:
        """The persisting-L2 carve-out now set, in bytes (None when it cannot be read)."""
        if self._runtime is None:
            return None
        err, value = self._runtime.cudaDeviceGetLimit(self._runtime.cudaLimit.cudaLimitPersistingL2CacheSize)
        return int(value) if err == self._runtime.cudaError_t.cudaSuccess else None


class ShiftingPool:
    """Fresh addresses for every call: each tensor gets a pool it is copied into at a moving offset.

    Allocation happens once, before the loop, so no timed call pays for cudaMalloc; the copy into
    the pool happens before the L2 flush, so it leaves nothing warm in the cache.
    """

    def __init__(self, template: Sequence[Any], calls: int, *, fill_outputs_from: int | None = None,
                 source: Callable[[int], Sequence[Any]] | None = None) -> None:
        import torch

        self._source = source
        """Fresh input values for call i (defences.FreshInputs): copied into the pool instead of the template."""
        self._template = list(template)
        self._pools: list[torch.Tensor | None] = []
        self._calls = calls
        self._outputs_from = fill_outputs_from
        for value in self._template:
            if isinstance(value, torch.Tensor) and value.numel() > 0:
                nbytes = value.numel() * value.element_size()
                self._pools.append(
                    torch.empty(nbytes + calls * POINTER_SHIFT_BYTES, dtype=torch.uint8, device=value.device)
                )
            else:
                self._pools.append(None)

    def args_for_call(self, i: int) -> list[Any]:
        import torch

        args: list[Any] = []
        offset = (i % self._calls) * POINTER_SHIFT_BYTES
        fresh = list(self._source(i)) if self._source is not None else []
        for k, (value, pool) in enumerate(zip(self._template, self._pools, strict=True)):
            if k < len(fresh) and _same_layout(fresh[k], value):
                value = fresh[k]  # a new value for this call, same shape and dtype
            if pool is None:
                args.append(value.clone() if isinstance(value, torch.Tensor) else value)
                continue
            nbytes = value.numel() * value.element_size()
            view = pool[offset : offset + nbytes].view(value.dtype).view(value.shape)
            if self._outputs_from is not None and k >= self._outputs_from:
                if view.is_floating_point():
                    view.fill_(float("nan"))
                else:
                    view.zero_()
            else:
                view.copy_(value)
            args.append(view)
        return args


def _same_layout(new: Any, old: Any) -> bool:
    """Whether ``new`` can take ``old``'s place in its pool (same type, and for tensors shape and dtype)."""
    shape, dtype = getattr(old, "shape", None), getattr(old, "dtype", None)
    if shape is None:
        return not hasattr(new, "shape")
    return getattr(new, "shape", None) == shape and getattr(new, "dtype", None) == dtype


UNJOINED_SLACK_NS = 50_000
"""GPU work ending this long (50 us) after the current stream drained counts as unjoined: generous
against any skew between CUPTI's GPU and host clocks, and no honest work ends after its stream
was joined."""


class CuptiRecorder:
    """CUPTI activity collection around a timed loop (cupti-python)."""

    def __init__(self) -> None:
        from cupti import cupti

        self.cupti = cupti
        self.gpu_records: list[tuple[int, int, str]] = []  # (start, end, name)
        kinds = cupti.ActivityKind
        self._gpu_kinds = {int(kinds.CONCURRENT_KERNEL), int(kinds.MEMCPY), int(kinds.MEMSET)}
        self._enabled = [kinds.CONCURRENT_KERNEL, kinds.MEMCPY, kinds.MEMSET]

    def _buffer_requested(self) -> tuple[int, int]:
        return 8 * 1024 * 1024, 0

    def _buffer_completed(self, activities: list[Any]) -> None:
        for a in activities:
            kind = int(a.kind)
            if kind in self._gpu_kinds:
                name = getattr(a, "name", None) or ("memcpy" if kind == int(self.cupti.ActivityKind.MEMCPY) else "memset")
                self.gpu_records.append((int(a.start), int(a.end), str(name)))

    def start(self) -> None:
        for kind in self._enabled:
            self.cupti.activity_enable(kind)
        self.cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed)

    def timestamp(self) -> int:
        return int(self.cupti.get_timestamp())

    def stop(self) -> None:
        try:
            self.cupti.activity_flush_all(1)
        finally:
            for kind in self._enabled:
                self.cupti.activity_disable(kind)
            self.cupti.finalize()

    def spans(self, windows: list[tuple[int, int]]) -> tuple[list[float], list[list[str]]]:
        """Per window: (max end - min start) in ms over GPU work that started inside it, and the names."""
        records = sorted(self.gpu_records)
        times: list[float] = []
        names: list[list[str]] = []
        for t0, t1 in windows:
            work = [r for r in records if t0 <= r[0] <= t1]
            if not work:
                times.append(0.0)
                names.append([])
                continue
            times.append((max(e for _s, e, _n in work) - min(s for s, _e, _n in work)) / 1e6)
            names.append(sorted(n for _s, _e, n in work))
        return times, names


def _unjoined_calls(records: Sequence[tuple[int, int, str]], windows: Sequence[tuple[int, int]],
                    drained: Sequence[int]) -> list[int]:
    """Indices of windows with GPU work ending ``UNJOINED_SLACK_NS`` after the current stream drained."""
    late = []
    for i, ((t0, t1), t_drained) in enumerate(zip(windows, drained, strict=True)):
        if any(t0 <= start <= t1 and end > t_drained + UNJOINED_SLACK_NS for start, end, _name in records):
            late.append(i)
    return late


def cupti_available() -> bool:
    try:
        from cupti import cupti  # noqa: F401
    except Exception:
        return False
    return True


def time_calls(
    fn: Callable[..., Any],
    make_args: Callable[[int], list[Any]],
    *,
    warmup: int,
    iterations: int,
    device: torch.device,
    timer: Literal["auto", "cupti", "cuda_events"] = "auto",
    after_call: Callable[[int, list[Any], Any], None] | None = None,
    check_streams: bool = False,
) -> Measurement:
    """Time ``fn(*make_args(i))`` for ``iterations`` calls after ``warmup`` calls.

    Parameters
    ----------
    fn
        The callable under test.
    make_args
        Builds the arguments of call ``i`` (untimed): fresh copies at new addresses.
    after_call
        Called after each timed call has synchronised, with (timed index, args, return value);
        used to check the outputs of an unpredictable timed call.
    check_streams
        With CUPTI: after each call, drain the current stream first and note the time; GPU work that
        still runs well after that was launched on another stream and never joined back (a
        REWARD_HACK by the protocol, recorded in ``violations``; the time itself stays right, since
        the window ends with a device-wide synchronise).
    """
    import torch

    if device.type != "cuda":
        return _time_cpu(fn, make_args, warmup=warmup, iterations=iterations, after_call=after_call)
    kind: TimerKind = "cupti" if timer in ("auto", "cupti") and cupti_available() else "cuda_events"
    if timer == "cupti" and kind != "cupti":
        raise RuntimeError("CUPTI timing was asked for but cupti-python is not importable; install cupti-python")
    flusher = L2Flusher(device)
    idle = time.perf_counter() - _last_loop_end > WARMUP_IDLE_S
    warm_until = time.perf_counter() + (WARMUP_MIN_S if idle else 0.0)
    for i in range(warmup):
        args = make_args(i)
        flusher.flush()
        fn(*args)
    torch.cuda.synchronize(device)
    while warmup and time.perf_counter() < warm_until:
        # The last warm-up arguments again: only the clocks need warming, and make_args may draw
        # from a finite pool.
        flusher.flush()
        fn(*args)
        torch.cuda.synchronize(device)

    if kind == "cupti":
        rec = CuptiRecorder()
        windows: list[tuple[int, int]] = []
        drained: list[int] = []
        own_stream = torch.cuda.current_stream(device)
        rec.start()
        try:
            for i in range(iterations):
                args = make_args(warmup + i)
                flusher.flush()
                torch.cuda.synchronize(device)
                t0 = rec.timestamp()
                result = fn(*args)
                if check_streams:
                    own_stream.synchronize()  # host-side only: adds no GPU activity to the span
                    drained.append(rec.timestamp())
                torch.cuda.synchronize(device)
                t1 = rec.timestamp()
                windows.append((t0, t1))
                if after_call is not None:
                    after_call(i, args, result)
        finally:
            rec.stop()
        times, names = rec.spans(windows)
        m = Measurement(times, "cupti", warmup, True, [len(n) for n in names], names)
        if drained:
            late = _unjoined_calls(rec.gpu_records, windows, drained)
            if late:
                m.violations.append(
                    f"timed calls {[i + 1 for i in late[:5]]} left GPU work running on another stream after the "
                    "current stream had finished: join side streams (an event the current stream waits on) before "
                    "run returns")
    else:
        stream = torch.cuda.current_stream(device)
        times = []
        for i in range(iterations):
            args = make_args(warmup + i)
            flusher.flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record(stream)
            result = fn(*args)
            end.record(stream)
            torch.cuda.synchronize(device)
            times.append(float(start.elapsed_time(end)))
            if after_call is not None:
                after_call(i, args, result)
        m = Measurement(times, "cuda_events", warmup, True)
        m.warnings.append("timed with CUDA events on the current stream (CUPTI unavailable): unjoined side-stream work is not seen")
    _loop_ended()
    carve_out = flusher.persisting_bytes()
    if carve_out and carve_out > allowed_persisting_bytes():
        m.violations.append(
            f"the solution set aside {carve_out} bytes of L2 for persisting accesses (cudaLimitPersistingL2CacheSize): "
            "data kept in L2 across the harness's flush is a cache benchmark, not the kernel; leave the limit at 0 and "
            "use no access-policy window")
    _add_noise_warning(m)
    return m


def _time_cpu(
    fn: Callable[..., Any],
    make_args: Callable[[int], list[Any]],
    *,
    warmup: int,
    iterations: int,
    after_call: Callable[[int, list[Any], Any], None] | None,
) -> Measurement:
    for i in range(warmup):
        fn(*make_args(i))
    times = []
    for i in range(iterations):
        args = make_args(warmup + i)
        t0 = time.perf_counter()
        result = fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
        if after_call is not None:
            after_call(i, args, result)
    m = Measurement(times, "cpu", warmup, False)
    m.warnings.append("CPU timing: no GPU was used, so there is no speed-of-light score")
    _add_noise_warning(m)
    return m


def _add_noise_warning(m: Measurement) -> None:
    if m.times_ms and m.median_ms > 0 and m.iqr_ms / m.median_ms > NOISY_IQR_RATIO:
        m.warnings.append(f"noisy: IQR is {100 * m.iqr_ms / m.median_ms:.0f}% of the median")
