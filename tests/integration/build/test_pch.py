"""The precompiled torch/extension.h: built once with torch's own flags, used by a cuda_cpp build
whose .cpp includes it, never used for builds with compile options of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solforge.problems import Solution
from solforge.sandbox.build import build_solution, pch

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc and the CUDA build of torch")]


def test_the_precompiled_header_is_built_once_and_used_by_a_binding(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = pch.prepare(cache)
    if folder is None:
        pytest.skip("no GCC, or torch cannot build extensions here")
    assert (folder / pch.PCH_HEADER).stat().st_size > 10_000_000
    flags = json.loads((folder / "flags.json").read_text())
    assert not any(f.startswith("-DTORCH_EXTENSION_NAME") for f in flags) and "-DTORCH_API_INCLUDE_EXTENSION_H" in flags
    assert pch.prepare(cache) == folder and pch.find(cache, []) == folder  # once
    assert pch.find(cache, ["-O2"]) is None  # other compile options: no header made for them

    # binding.cpp starts with #include <torch/extension.h>; kernel.cu includes no torch header.
    solution = Solution.model_validate(json.loads(
        (ROOT / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm" / "cuda_cpp.json").read_text()))
    report = build_solution(solution, target_arch="sm_90a", cache_dir=cache, timeout_s=900)
    assert report.ok, report.log
    entry = Path(report.artifact_dir or "")
    ninja = (entry / "build" / "build.ninja").read_text()
    assert f"-I{folder}" in ninja and "-Winvalid-pch" in ninja
    log = (entry / "build.log").read_text()
    assert "extension.h.gch: not used" not in log, log[-2000:]
    assert not any("precompiled" in w for w in report.warnings)
