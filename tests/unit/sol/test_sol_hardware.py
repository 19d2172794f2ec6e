"""The datasheet table, name matching, peak resolution and the NVML readers (with a fake NVML)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from solforge.sandbox.sol import hardware
from solforge.sandbox.sol.calibrate import CALIBRATION_VERSION, Calibration, save_calibration
from solforge.sandbox.sol.hardware import (
    GPU_SPECS,
    check_health,
    detect_gpu,
    gpu_slug,
    match_spec,
)
from solforge.sandbox.sol.peaks import resolve_peaks


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 NVL", "H200-NVL"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA B300 SXM6 AC", "B300"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("B200", "B200"),
        ("h100-sxm", "H100-SXM"),
    ],
)
def test_match_spec(name: str, key: str) -> None:
    spec = match_spec(name)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("name", ["Tesla T4", "NVIDIA GH200 480GB", "cpu", ""])
def test_match_spec_unknown(name: str) -> None:
    assert match_spec(name) is None


@pytest.mark.parametrize("spec", GPU_SPECS.values(), ids=list(GPU_SPECS))
def test_table_is_consistent(spec: hardware.GpuSpec) -> None:
    assert spec.source and spec.sm_count > 0 and spec.l2_bytes > 0 and spec.smem_per_sm_bytes > 0
    assert 0.5e12 < spec.dram_bytes_per_s < 10e12
    assert spec.fp32_flops > spec.fp64_flops > 0
    assert spec.bf16_tensor_flops is not None and spec.bf16_tensor_flops == spec.fp16_tensor_flops
    assert spec.bf16_tensor_flops > spec.fp32_flops
    assert spec.tf32_tensor_flops is not None
    assert spec.tf32_tensor_flops == pytest.approx(spec.bf16_tensor_flops / 2, rel=0.03)
    if spec.fp8_tensor_flops is not None:
        assert spec.fp8_tensor_flops == pytest.approx(2 * spec.bf16_tensor_flops, rel=0.02)  # L40S: 733 vs 2 x 362.05
    if spec.fp4_tensor_flops is not None:
        assert spec.fp4_tensor_flops >= 2 * spec.fp8_tensor_flops  # type: ignore[operator]
    assert spec.bf16_tensor_flops < 3e15  # dense, never the sparse figure


def test_h200_datasheet_numbers() -> None:
    peaks = resolve_peaks("NVIDIA H200", Path("/nonexistent"))
    assert peaks is not None
    assert peaks.source == "datasheet:H200"
    assert peaks.dram_bytes_per_s == 4.8e12
    assert peaks.tensor_flops["bf16"] == 989.5e12
    assert peaks.tensor_flops["fp8"] == 1979e12
    assert "fp4" not in peaks.tensor_flops
    assert peaks.fp32_flops == 67e12


def test_unknown_gpu_without_calibration_has_no_peaks(tmp_path: Path) -> None:
    assert resolve_peaks("Tesla T4", tmp_path) is None


def _calibration(name: str, **fields: Any) -> Calibration:
    values: dict[str, Any] = {
        "gpu_name": name, "torch_version": "2.14.1", "date": "2026-01-01T00:00:00+00:00",
        "dram_bytes_per_s": 4.2e12, "matmul_flops": {"bf16": 700e12, "fp16": 710e12, "fp8": 1300e12, "fp32": 50e12},
        "l2_bytes": 60 * 2**20,
    }
    values.update(fields)
    return Calibration(**values)


def test_resolve_peaks_prefers_the_calibration(tmp_path: Path) -> None:
    path = save_calibration(_calibration("NVIDIA H200"), tmp_path)
    assert path.name == "nvidia-h200.json"
    peaks = resolve_peaks("NVIDIA H200", tmp_path)
    assert peaks is not None
    assert peaks.source == "calibrated:NVIDIA H200"
    assert peaks.dram_bytes_per_s == 4.2e12
    assert peaks.tensor_flops["bf16"] == 700e12 and peaks.tensor_flops["fp8"] == 1300e12
    assert peaks.fp32_flops == 50e12
    assert peaks.tensor_flops["fp64"] == 67e12  # not measured: datasheet
    assert peaks.tensor_flops["int8"] == pytest.approx(1979e12 * 1300 / 1979)  # scaled by the fp8 fraction
    assert peaks.l2_bytes == 60 * 2**20
    assert peaks.spec_key == "H200"


def test_calibration_scales_fp4_on_blackwell(tmp_path: Path) -> None:
    save_calibration(_calibration("NVIDIA B200", matmul_flops={"bf16": 1.8e15, "fp8": 3.6e15, "fp32": 60e12}), tmp_path)
    peaks = resolve_peaks("NVIDIA B200", tmp_path)
    assert peaks is not None
    assert peaks.tensor_flops["fp4"] == pytest.approx(9e15 * 0.8)
    assert any("fp4" in n for n in peaks.notes)


def test_calibrated_gpu_outside_the_table(tmp_path: Path) -> None:
    save_calibration(_calibration("Tesla T4", matmul_flops={"fp16": 50e12, "fp32": 7e12}), tmp_path)
    peaks = resolve_peaks("Tesla T4", tmp_path)
    assert peaks is not None and peaks.source == "calibrated:Tesla T4"
    assert peaks.tensor_flops == {"fp16": 50e12} and peaks.fp32_flops == 7e12 and peaks.fp64_flops is None


def test_outdated_or_corrupt_calibration_falls_back_to_the_datasheet(tmp_path: Path) -> None:
    save_calibration(_calibration("NVIDIA H200", version=CALIBRATION_VERSION + 1), tmp_path)
    assert resolve_peaks("NVIDIA H200", tmp_path).source == "datasheet:H200"  # type: ignore[union-attr]
    (tmp_path / "nvidia-h200.json").write_text("{not json")
    assert resolve_peaks("NVIDIA H200", tmp_path).source == "datasheet:H200"  # type: ignore[union-attr]


def test_gpu_slug() -> None:
    assert gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert gpu_slug("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"


# -- NVML -----------------------------------------------------------------------------------------------


@pytest.mark.skipif(cuda_available(), reason="a GPU is visible")
def test_no_gpu_here() -> None:
    assert detect_gpu() is None
    health = check_health()
    assert not health.ok and "NVML" in health.reason


class _NVMLError(Exception):
    pass


def _fake_pynvml(*, throttle: int = 0, ecc: int = 0, temperature: int = 45, init_fails: bool = False) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    handle = object()

    def init() -> None:
        if init_fails:
            raise _NVMLError("NVML Shared Library Not Found")

    def not_supported(*_: Any) -> Any:
        raise _NVMLError("Not Supported")

    memory = types.SimpleNamespace(total=141 * 10**9, used=10**9, free=140 * 10**9)
    funcs: dict[str, Any] = {
        "nvmlInit": init,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 2,
        "nvmlDeviceGetHandleByIndex": lambda i: handle,
        "nvmlDeviceGetName": lambda h: b"NVIDIA H200",
        "nvmlDeviceGetUUID": lambda h: "GPU-1234",
        "nvmlSystemGetDriverVersion": lambda: "580.65.06",
        "nvmlSystemGetCudaDriverVersion": lambda: 13000,
        "nvmlDeviceGetCudaComputeCapability": lambda h: (9, 0),
        "nvmlDeviceGetMemoryInfo": lambda h: memory,
        "nvmlDeviceGetClockInfo": lambda h, kind: 1980 if kind == 1 else 3201,
        "nvmlDeviceGetMaxClockInfo": lambda h, kind: 1980 if kind == 1 else 3201,
        "nvmlDeviceGetTemperature": lambda h, kind: temperature,
        "nvmlDeviceGetTemperatureThreshold": lambda h, kind: 90,
        "nvmlDeviceGetPowerUsage": lambda h: 350_000,
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700_000,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: throttle,
        "nvmlDeviceGetCurrentClocksThrottleReasons": lambda h: throttle,
        "nvmlDeviceGetTotalEccErrors": lambda h, kind, counter: ecc,
        "nvmlDeviceGetRetiredPagesPendingStatus": not_supported,
        "nvmlDeviceGetRemappedRows": lambda h: (0, 0, 0, 0),
        "NVML_CLOCK_SM": 1,
        "NVML_CLOCK_MEM": 2,
        "NVML_TEMPERATURE_GPU": 0,
        "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN": 1,
        "NVML_MEMORY_ERROR_TYPE_UNCORRECTED": 1,
        "NVML_VOLATILE_ECC": 0,
    }
    for key, value in funcs.items():
        setattr(nv, key, value)
    return nv


def test_detect_gpu_with_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    info = detect_gpu()
    assert info is not None
    assert info.name == "NVIDIA H200" and info.uuid == "GPU-1234" and info.driver == "580.65.06"
    assert info.spec_key == "H200" and info.compute_capability == "9.0" and info.cuda_driver_version == "13.0"
    assert info.sm_clock_mhz == 1980 and info.mem_clock_mhz == 3201 and info.temperature_c == 45
    assert info.power_w == 350.0 and info.memory_total_bytes == 141 * 10**9
    assert detect_gpu(5) is None  # no such index


def test_detect_gpu_without_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(init_fails=True))
    assert detect_gpu(0) is None
    assert not check_health(0).ok


def test_healthy_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(throttle=0x4))  # software power cap only
    health = check_health(0)
    assert health.ok and health.reason == ""
    assert health.throttle_reasons == ["sw_power_cap"] and health.warnings
    assert health.retired_pages_pending is None  # not supported: unknown, not a failure


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"throttle": 0x40}, "hw_thermal_slowdown"),
        ({"ecc": 3}, "ECC"),
        ({"temperature": 95}, "slowdown threshold 90"),
    ],
)
def test_unhealthy_gpu(monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, int], reason: str) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(**kwargs))
    health = check_health(0)
    assert not health.ok and reason in health.reason
