"""The peaks a GPU is scored against: its calibration when ``solforge calibrate`` measured one, else
the datasheet (the one place that joins :mod:`.hardware` and :mod:`.calibrate`)."""

from __future__ import annotations

from pathlib import Path

from .calibrate import load_calibration
from .hardware import Peaks, datasheet_peaks, default_calibration_dir, match_spec

__all__ = ["resolve_peaks"]

# Precision classes calibrate does not measure take the measured/datasheet ratio of a measured one.
_SCALE_FROM = {"fp4": ("fp8", "bf16", "fp16"), "int8": ("fp8", "bf16", "fp16")}


def resolve_peaks(gpu_name: str, calibration_dir: Path | None = None) -> Peaks | None:
    """The peaks to score against on ``gpu_name``: its calibration if there is one, else the datasheet.

    Parameters
    ----------
    gpu_name
        The name NVML or ``torch.cuda.get_device_name`` reports, or a table key.
    calibration_dir
        The folder ``solforge calibrate`` writes to (``<cache_dir>/calibration``); None means
        :func:`~solforge.sandbox.sol.hardware.default_calibration_dir`.

    Returns
    -------
    Peaks | None
        With a calibration: the measured copy bandwidth and matrix rates (bf16, fp16, fp8, tf32,
        int8, and fp32 for the CUDA-core rate); fp4 and int8 when not measured take the datasheet
        value scaled by the measured fraction of fp8 (else bf16); fp64 stays at the datasheet.
        Without one: the datasheet. None when the GPU is neither calibrated nor in the table.
    """
    spec = match_spec(gpu_name)
    calibration = load_calibration(gpu_name, calibration_dir if calibration_dir is not None else default_calibration_dir())
    if calibration is None:
        return datasheet_peaks(spec, gpu_name) if spec is not None else None
    notes: list[str] = []
    datasheet = spec.tensor_peaks() if spec is not None else {}
    tensor = dict(datasheet)
    measured = {k: v for k, v in calibration.matmul_flops.items() if k != "fp32" and v > 0}
    tensor.update(measured)
    for cls, origins in _SCALE_FROM.items():
        if cls in measured or cls not in datasheet:
            continue
        for origin in origins:
            if origin in measured and origin in datasheet:
                tensor[cls] = datasheet[cls] * measured[origin] / datasheet[origin]
                notes.append(f"{cls} not measured: datasheet scaled by the measured {origin} fraction")
                break
    fp32 = calibration.matmul_flops.get("fp32") or (spec.fp32_flops if spec is not None else None)
    if fp32 is None:
        return None
    return Peaks(
        gpu=gpu_name,
        source=f"calibrated:{calibration.gpu_name}",
        dram_bytes_per_s=calibration.dram_bytes_per_s,
        tensor_flops=tensor,
        fp32_flops=fp32,
        fp64_flops=spec.fp64_flops if spec is not None else None,
        l2_bytes=calibration.l2_bytes or (spec.l2_bytes if spec is not None else None),
        spec_key=spec.key if spec is not None else None,
        notes=notes,
    )
