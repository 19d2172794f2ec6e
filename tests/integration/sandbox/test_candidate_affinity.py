"""Candidate processes run on the CPUs of their GPU's NUMA node (NVML's CPU affinity)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from solforge.sandbox.processes import CandidateProcess, ProcessProfile
from solforge.sandbox.sol.hardware import cpus_of_mask, gpu_local_cpus


def _allowed_cpus(pid: int) -> set[int]:
    return os.sched_getaffinity(pid)


def test_nvml_affinity_words_read_as_cpu_numbers() -> None:
    assert cpus_of_mask([0b1011, 0b1]) == {0, 1, 3, 64}
    assert cpus_of_mask([0, 1 << 63]) == {127}
    assert cpus_of_mask([]) == set()


def test_a_cpu_candidate_keeps_every_cpu(tmp_path: Path) -> None:
    process = CandidateProcess(ProcessProfile(device="cpu", defences=True, memory_limit_bytes=None), tmp_path / "c")
    try:
        deadline = time.monotonic() + 120
        while not process.warm and process.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.warm
        assert _allowed_cpus(process.proc.pid) == os.sched_getaffinity(0)
    finally:
        process.discard()


@pytest.mark.gpu
def test_a_gpu_candidate_runs_on_the_gpus_numa_node(tmp_path: Path) -> None:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    index = int(visible) if visible.isdigit() else 0
    expected = gpu_local_cpus(index) or os.sched_getaffinity(0)
    process = CandidateProcess(ProcessProfile(device="cuda:0", defences=True, memory_limit_bytes=None),
                               tmp_path / "c", language="pytorch")
    try:
        deadline = time.monotonic() + 120
        while not process.warm and process.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.warm
        assert _allowed_cpus(process.proc.pid) == expected
    finally:
        process.discard()
