"""``solforge calibrate``: measure the ceilings this GPU actually reaches.

Datasheet peaks are theoretical: no kernel moves 100% of the HBM bandwidth or sustains the boost
clock's tensor rate. A calibration measures, on the local GPU,

- the attainable DRAM bandwidth: a device-to-device ``copy_`` of buffers far larger than L2 (256
  MiB to 2 GiB), L2 flushed before every repetition, one CUDA event pair per repetition, read +
  written bytes over the median time, best buffer size kept;
- the attainable matrix rate per precision: square ``mm`` at 4096, 8192 and 16384 in bf16, fp16,
  tf32 (fp32 inputs with TF32 allowed) and fp32 (TF32 forbidden: the CUDA-core rate), fp8 through
  ``torch._scaled_mm`` (tensor-wise scales, bf16 output) and int8 through ``torch._int_mm`` where
  the GPU and torch support them; 2*N^3 FLOPs over the median time, best size kept.

The result, with the GPU's name, uuid, driver, torch and CUDA versions and the date, is written to
``<cache_dir>/calibration/<gpu name slug>.json``, where
:func:`solforge.sandbox.sol.peaks.resolve_peaks` finds it. It runs in whatever process calls it
(the ``solforge calibrate`` command, or a GPU worker); torch is imported inside the functions.

Measurement loop, per configuration::

    fn(); synchronize()                     # warm up: cuBLAS heuristics, allocations
    estimate = median of 3 timed calls
    reps = clamp(BUDGET_MS / estimate, MIN_REPS, MAX_REPS)
    for each rep: [flush L2]; event.record(); fn(); event.record()
    synchronize() once; median of the per-rep times
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solforge.problems import config
from solforge.problems.files import write_text_atomic

from .hardware import GpuHealth, check_health, detect_gpu, gpu_slug, match_spec

CALIBRATION_VERSION = 1
"""Format of the calibration file; files of another version are ignored (recalibrate)."""

COPY_SIZES_BYTES = (256 * 2**20, 512 * 2**20, 1024 * 2**20, 2048 * 2**20)
"""Copy buffer sizes: the smallest is twice the largest L2 in the table (126 MB on B200)."""

MATMUL_SIZES = (4096, 8192, 16384)
"""Square matrix sizes; cuBLAS reaches its plateau by 8192 on every GPU in the table."""

BUDGET_MS = 300.0
"""Timed time per configuration (milliseconds), as triton's do_bench budgets by time, not count."""
MIN_REPS = 5
MAX_REPS = 200
MEMORY_FRACTION = 0.6
"""Largest share of the free device memory one configuration may allocate."""


class Calibration(BaseModel):
    """Measured ceilings of one GPU model."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    version: int = CALIBRATION_VERSION
    gpu_name: str
    gpu_uuid: str | None = None
    device_index: int = 0
    """torch (logical) index of the GPU that was measured."""
    driver: str | None = None
    torch_version: str
    cuda_version: str | None = None
    date: str
    """ISO timestamp (UTC) of the measurement."""
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    dram_bytes_per_s: float
    """Best attainable device-to-device copy bandwidth (bytes read + written per second)."""
    copy_bytes_per_s: dict[str, float] = Field(default_factory=dict)
    """Copy bandwidth by buffer size in MiB."""
    matmul_flops: dict[str, float] = Field(default_factory=dict)
    """Best attainable matrix rate by precision class: bf16, fp16, tf32, fp32, fp8, int8."""
    matmul_by_size: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Matrix rate by precision class, then by square size."""
    datasheet_fraction: dict[str, float] = Field(default_factory=dict)
    """Measured / datasheet for each figure the table also has (dram, bf16, fp8, fp32, ...)."""
    spec_key: str | None = None
    health: GpuHealth | None = None
    """NVML health right after the measurement (throttling during it makes the numbers low)."""
    notes: list[str] = Field(default_factory=list)


def calibration_path(gpu_name: str, calibration_dir: Path) -> Path:
    return calibration_dir / f"{gpu_slug(gpu_name)}.json"


def load_calibration(gpu_name: str, calibration_dir: Path) -> Calibration | None:
    """The calibration saved for ``gpu_name`` in ``calibration_dir``, or None.

    A missing, unreadable or outdated file gives None: the caller falls back to the datasheet.
    """
    path = calibration_path(gpu_name, calibration_dir)
    if not path.is_file():
        return None
    try:
        calibration = Calibration.model_validate_json(path.read_text())
    except (OSError, ValidationError, ValueError):
        return None
    if calibration.version != CALIBRATION_VERSION or calibration.dram_bytes_per_s <= 0:
        return None
    return calibration


def save_calibration(calibration: Calibration, calibration_dir: Path) -> Path:
    """Write ``calibration`` where :func:`load_calibration` looks (atomically); return the path."""
    path = calibration_path(calibration.gpu_name, calibration_dir)
    return write_text_atomic(path, calibration.model_dump_json(indent=2) + "\n")


# -- measuring ---------------------------------------------------------------------------------------


def _median_ms(fn: Callable[[], Any], flush: Callable[[], Any] | None = None) -> float:
    """Median time of ``fn`` in milliseconds, per the loop in the module docstring."""
    import torch

    fn()
    torch.cuda.synchronize()

    def timed(reps: int) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for start, end in zip(starts, ends, strict=True):
            if flush is not None:
                flush()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    estimate = max(statistics.median(timed(3)), 1e-3)
    reps = max(MIN_REPS, min(MAX_REPS, int(BUDGET_MS / estimate)))
    return statistics.median(timed(reps))


def _free_bytes(device: Any) -> int:
    import torch

    free, _ = torch.cuda.mem_get_info(device)
    return int(free)


def measure_copy_bandwidth(device: Any, l2_bytes: int) -> dict[str, float]:
    """Device-to-device copy bandwidth (read + write bytes per second) by buffer size in MiB."""
    import torch

    flush_buffer = torch.empty(max(2 * l2_bytes, 256 * 2**20), dtype=torch.uint8, device=device)
    results: dict[str, float] = {}
    for size in COPY_SIZES_BYTES:
        if 2 * size > MEMORY_FRACTION * _free_bytes(device):
            continue
        src = torch.ones(size, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        ms = _median_ms(lambda src=src, dst=dst: dst.copy_(src), flush=flush_buffer.zero_)
        results[str(size // 2**20)] = 2 * size / (ms * 1e-3)
        del src, dst
        torch.cuda.empty_cache()
    del flush_buffer
    torch.cuda.empty_cache()
    return results


@contextlib.contextmanager
def _fp32_precision(mode: str) -> Iterator[None]:
    """Temporarily set how fp32 matmuls run: ``ieee`` (true fp32) or ``tf32``."""
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        before = matmul.fp32_precision
        matmul.fp32_precision = mode
        try:
            yield
        finally:
            matmul.fp32_precision = before
    else:  # torch before 2.9
        before_flag = matmul.allow_tf32
        matmul.allow_tf32 = mode == "tf32"
        try:
            yield
        finally:
            matmul.allow_tf32 = before_flag


def _matmul_case(cls: str, n: int, device: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(operation, context factory) computing one n x n x n product in precision class ``cls``."""
    import torch

    if cls in ("bf16", "fp16"):
        dtype = torch.bfloat16 if cls == "bf16" else torch.float16
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        return (lambda: torch.mm(a, b, out=c)), contextlib.nullcontext
    if cls in ("tf32", "fp32"):
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        c = torch.empty(n, n, device=device)
        mode = "tf32" if cls == "tf32" else "ieee"
        return (lambda: torch.mm(a, b, out=c)), (lambda: _fp32_precision(mode))
    if cls == "fp8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # second operand column-major
        one = torch.ones((), device=device, dtype=torch.float32)
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), contextlib.nullcontext
    if cls == "int8":
        a = torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8)
        b = torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8)
        return (lambda: torch._int_mm(a, b)), contextlib.nullcontext
    raise ValueError(f"unknown precision class {cls!r}")


_BYTES_PER_ELEMENT = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4, "fp8": 1, "int8": 1}
MATMUL_CLASSES = ("bf16", "fp16", "fp8", "int8", "tf32", "fp32")


def measure_matmul(device: Any, classes: tuple[str, ...] = MATMUL_CLASSES,
                   sizes: tuple[int, ...] | None = None) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Matrix rate (FLOP/s) by precision class and size (default :data:`MATMUL_SIZES`), and notes on
    what could not run."""
    import torch

    sizes = sizes if sizes is not None else MATMUL_SIZES
    results: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    for cls in classes:
        for n in sizes:
            if 4 * n * n * _BYTES_PER_ELEMENT[cls] > MEMORY_FRACTION * _free_bytes(device):
                continue
            op: Callable[[], Any] | None = None
            try:
                op, context = _matmul_case(cls, n, device)
                with context():
                    ms = _median_ms(op)
            except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:
                first_line = (str(exc).splitlines() or [""])[0][:160]
                notes.append(f"{cls} matmul not measured: {type(exc).__name__}: {first_line}")
                break  # an unsupported precision fails at every size
            finally:
                del op  # the closure holds the operands
                torch.cuda.empty_cache()
            results.setdefault(cls, {})[str(n)] = 2.0 * n**3 / (ms * 1e-3)
    return results, notes


def _nvml_index_for(uuid: str | None) -> int | None:
    """The NVML index of the GPU with this torch uuid (None when NVML cannot say)."""
    if not uuid:
        return None
    from .hardware import _nvml

    with _nvml() as nv:
        if nv is None:
            return None
        try:
            handle = nv.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
            return int(nv.nvmlDeviceGetIndex(handle))
        except Exception:  # NVMLError_NotFound: MIG instances and old drivers do not map
            return None


def calibrate(device_index: int = 0, *, cache_dir: Path | None = None, save: bool = True,
              matmul_sizes: tuple[int, ...] | None = None) -> Calibration:
    """Measure this GPU's attainable copy bandwidth and matrix rates, and save them.

    Parameters
    ----------
    device_index
        torch (logical) index of the GPU to measure.
    cache_dir
        Root of solforge's caches; the file goes to ``<cache_dir>/calibration/<gpu slug>.json``.
        None: ``$SOLFORGE_CACHE`` or ``~/.cache/solforge``.
    save
        Write the file (otherwise only return the measurement).
    matmul_sizes
        Square sizes to try; None: :data:`MATMUL_SIZES`, which suits every GPU in the table.

    Returns
    -------
    Calibration
        The measurement.

    Raises
    ------
    RuntimeError
        If no CUDA GPU is visible, or the copy could not be measured at any size.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU is visible: calibrate needs one")
    device = torch.device("cuda", device_index)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    uuid = str(getattr(props, "uuid", "") or "") or None
    if uuid and not uuid.startswith("GPU-"):
        uuid = f"GPU-{uuid}"
    nvml_index = _nvml_index_for(uuid)
    info = detect_gpu(nvml_index) if nvml_index is not None else None
    l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0) or 128 * 2**20
    copy = measure_copy_bandwidth(device, l2_bytes)
    if not copy:
        raise RuntimeError("not enough free GPU memory to measure the copy bandwidth (needs 512 MiB)")
    by_size, notes = measure_matmul(device, sizes=matmul_sizes)
    best = {cls: max(rates.values()) for cls, rates in by_size.items() if rates}
    spec = match_spec(props.name)
    fractions: dict[str, float] = {}
    if spec is not None:
        fractions["dram"] = max(copy.values()) / spec.dram_bytes_per_s
        datasheet = {**spec.tensor_peaks(), "fp32": spec.fp32_flops}
        for cls, rate in best.items():
            if cls in datasheet:
                fractions[cls] = rate / datasheet[cls]
    else:
        notes.append(f"{props.name} is not in the datasheet table: only measured peaks are known")
    health = check_health(nvml_index) if nvml_index is not None else None
    if health is not None and not health.ok:
        notes.append(f"GPU unhealthy after calibration ({health.reason}): the numbers may be low; rerun when it is fixed")
    calibration = Calibration(
        gpu_name=props.name,
        gpu_uuid=uuid,
        device_index=device_index,
        driver=info.driver if info is not None else None,
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        sm_count=int(props.multi_processor_count),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0) or None,
        memory_bytes=int(props.total_memory),
        dram_bytes_per_s=max(copy.values()),
        copy_bytes_per_s=copy,
        matmul_flops=best,
        matmul_by_size=by_size,
        datasheet_fraction=fractions,
        spec_key=spec.key if spec is not None else None,
        health=health,
        notes=notes,
    )
    if save:
        save_calibration(calibration, (cache_dir if cache_dir is not None else config.cache_dir()) / "calibration")
    return calibration


# -- the command ---------------------------------------------------------------------------------------


def _distinct_devices() -> list[int]:
    """One torch index per distinct GPU model among the visible devices."""
    import torch

    seen: dict[str, int] = {}
    for i in range(torch.cuda.device_count()):
        seen.setdefault(torch.cuda.get_device_name(i), i)
    return sorted(seen.values())


def _print_table(calibration: Calibration, path: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{calibration.gpu_name} (device {calibration.device_index})")
    table.add_column("ceiling")
    table.add_column("measured", justify="right")
    table.add_column("datasheet", justify="right")
    table.add_column("fraction", justify="right")
    spec = match_spec(calibration.gpu_name)
    ds = {**spec.tensor_peaks(), "fp32": spec.fp32_flops} if spec is not None else {}
    fraction = calibration.datasheet_fraction
    table.add_row(
        "DRAM copy bandwidth",
        f"{calibration.dram_bytes_per_s / 1e12:.2f} TB/s",
        f"{spec.dram_bytes_per_s / 1e12:.2f} TB/s" if spec is not None else "-",
        f"{fraction['dram']:.0%}" if "dram" in fraction else "-",
    )
    for cls, rate in calibration.matmul_flops.items():
        table.add_row(
            f"{cls} matmul" + (" (CUDA cores)" if cls == "fp32" else ""),
            f"{rate / 1e12:.1f} TFLOP/s",
            f"{ds[cls] / 1e12:.1f} TFLOP/s" if cls in ds else "-",
            f"{fraction[cls]:.0%}" if cls in fraction else "-",
        )
    console.print(table)
    for note in calibration.notes:
        console.print(f"[yellow]note:[/] {note}")
    if path is not None:
        console.print(f"saved to {path}; scores on this GPU now use these peaks (source calibrated:{calibration.gpu_name})")


def run_calibrate_cli(json_output: bool, device_index: int | None = None, cache_dir: Path | None = None) -> int:
    """What ``solforge calibrate`` does: measure, save and print.

    Parameters
    ----------
    json_output
        Print one JSON object per GPU (the calibration plus ``path``) instead of a table.
    device_index
        torch index of the GPU to measure; None measures one GPU of every distinct model visible.
    cache_dir
        Root of the caches (None: ``$SOLFORGE_CACHE`` or ``~/.cache/solforge``).

    Returns
    -------
    int
        0 on success, 1 when no GPU is visible, 2 when a measurement failed.
    """
    try:
        import torch
    except ImportError:
        message = "torch is not installed; install solforge[gpu] to calibrate"
        print(json.dumps({"error": message}) if json_output else message, file=sys.stdout if json_output else sys.stderr)
        return 1
    if not torch.cuda.is_available():
        message = "no CUDA GPU is visible: calibrate measures the local GPU, and scores fall back to datasheet peaks"
        print(json.dumps({"error": message}) if json_output else message, file=sys.stdout if json_output else sys.stderr)
        return 1
    root = cache_dir if cache_dir is not None else config.cache_dir()
    indices = [device_index] if device_index is not None else _distinct_devices()
    status = 0
    for index in indices:
        try:
            calibration = calibrate(index, cache_dir=root, save=True)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:
            message = f"calibration of device {index} failed: {exc}"
            print(json.dumps({"error": message, "device_index": index}) if json_output else message,
                  file=sys.stdout if json_output else sys.stderr)
            status = 2
            continue
        path = calibration_path(calibration.gpu_name, root / "calibration")
        if json_output:
            print(json.dumps({**calibration.model_dump(mode="json"), "path": str(path)}))
        else:
            _print_table(calibration, path)
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m solforge.sandbox.sol.calibrate [--json] [--device N] [--cache-dir DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="solforge calibrate", description="Measure this GPU's ceilings.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--device", type=int, default=None, help="torch index of the GPU (default: one per model)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="cache root (default: $SOLFORGE_CACHE)")
    args = parser.parse_args(argv)
    return run_calibrate_cli(args.json, args.device, args.cache_dir)


if __name__ == "__main__":
    raise SystemExit(main())
