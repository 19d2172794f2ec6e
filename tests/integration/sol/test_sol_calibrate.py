"""Calibration: the file format everywhere, the measurement on a GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solforge.sandbox.sol.calibrate import (
    Calibration,
    calibrate,
    calibration_path,
    load_calibration,
    main,
    run_calibrate_cli,
    save_calibration,
)
from solforge.sandbox.sol.hardware import match_spec
from solforge.sandbox.sol.peaks import resolve_peaks


def _gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    calibration = Calibration(gpu_name="NVIDIA H200", torch_version="2.14.1", date="2026-01-01T00:00:00+00:00",
                              dram_bytes_per_s=4.3e12, matmul_flops={"bf16": 7e14})
    path = save_calibration(calibration, tmp_path)
    assert path == calibration_path("NVIDIA H200", tmp_path) and path.is_file()
    assert load_calibration("NVIDIA H200", tmp_path) == calibration
    assert load_calibration("NVIDIA B200", tmp_path) is None


@pytest.mark.skipif(_gpu_visible(), reason="a GPU is visible")
def test_cli_without_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json"]) == 1
    assert "no CUDA GPU" in json.loads(capsys.readouterr().out)["error"]
    assert run_calibrate_cli(False) == 1
    assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.skipif(_gpu_visible(), reason="a GPU is visible")
def test_calibrate_without_gpu_raises() -> None:
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        calibrate(0, save=False)


@pytest.mark.gpu
def test_calibrate_measures_and_saves(tmp_path: Path) -> None:
    calibration = calibrate(0, cache_dir=tmp_path, matmul_sizes=(4096,))
    assert calibration.dram_bytes_per_s > 1e11
    assert calibration.copy_bytes_per_s and max(calibration.copy_bytes_per_s.values()) == calibration.dram_bytes_per_s
    assert calibration.matmul_flops["bf16"] > 1e13
    assert calibration.matmul_flops["fp32"] > 1e12
    assert calibration.matmul_flops["bf16"] > calibration.matmul_flops["fp32"]
    assert calibration.sm_count and calibration.memory_bytes and calibration.torch_version
    spec = match_spec(calibration.gpu_name)
    if spec is not None:
        # Measured ceilings sit below the datasheet (allow a little for clocks above the table's boost).
        assert 0.3 < calibration.datasheet_fraction["dram"] <= 1.05
        assert 0.2 < calibration.datasheet_fraction["bf16"] <= 1.1
    saved = load_calibration(calibration.gpu_name, tmp_path / "calibration")
    assert saved == calibration
    peaks = resolve_peaks(calibration.gpu_name, tmp_path / "calibration")
    assert peaks is not None and peaks.source == f"calibrated:{calibration.gpu_name}"
    assert peaks.dram_bytes_per_s == calibration.dram_bytes_per_s


@pytest.mark.gpu
def test_cli_json_on_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import solforge.sandbox.sol.calibrate as module

    monkeypatch.setattr(module, "MATMUL_SIZES", (2048,))
    monkeypatch.setattr(module, "COPY_SIZES_BYTES", (256 * 2**20,))
    assert run_calibrate_cli(True, device_index=0, cache_dir=tmp_path) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    data = json.loads(line)
    assert Path(data["path"]).is_file() and data["dram_bytes_per_s"] > 0
