"""The GPU process audit: a process NVML lists on a GPU must be pinned to that GPU alone."""

from __future__ import annotations

from solforge.planner.workers.gpu_audit import GpuAuditor, GpuProcesses, ProcessFacts, pinned_to
from solforge.sandbox.warm import judge_env

UUID0, UUID1 = "GPU-0a1b2c3d-0000-1111-2222-333344445555", "GPU-9f8e7d6c-0000-1111-2222-333344445555"


def _facts(pid: int = 7, visible: str | None = "0", order: str | None = "PCI_BUS_ID", readable: bool = True):
    return ProcessFacts(pid=pid, command="python -m solforge.sandbox.candidate", visible_devices=visible,
                        device_order=order, readable=readable)


def test_a_process_is_pinned_only_to_the_one_gpu_it_names() -> None:
    assert pinned_to(_facts(visible="0"), 0, UUID0) is None
    assert pinned_to(_facts(visible=UUID0), 0, UUID0) is None
    assert pinned_to(_facts(visible=UUID0[:12]), 0, UUID0) is None  # CUDA takes a unique UUID prefix
    assert "listed on GPU 0" in pinned_to(_facts(visible="1"), 0, UUID0)
    assert "listed on" in pinned_to(_facts(visible=UUID1), 0, UUID0)
    assert "sees every GPU" in pinned_to(_facts(visible=None), 0, UUID0)
    assert "exactly one" in pinned_to(_facts(visible="0,1"), 0, UUID0)
    assert "exactly one" in pinned_to(_facts(visible=""), 0, UUID0)
    assert "PCI_BUS_ID" in pinned_to(_facts(visible="0", order=None), 0, UUID0)  # CUDA's order may differ
    assert "neither" in pinned_to(_facts(visible="gpu0"), 0, UUID0)


def test_the_auditor_reports_every_process_once_and_only_the_unpinned_as_violations() -> None:
    facts = {10: _facts(10, "0"), 11: _facts(11, "1"), 12: _facts(12, "0"), 13: _facts(13, None, readable=False)}
    samples = iter([
        [GpuProcesses(0, UUID0, (10,)), GpuProcesses(1, UUID1, (11,))],
        [GpuProcesses(0, UUID0, (10, 12, 13)), GpuProcesses(1, UUID1, (11, 12))],  # 12 reaches GPU 1
    ])
    reads: list[int] = []

    def read(pid: int) -> ProcessFacts:
        reads.append(pid)
        return facts[pid]

    auditor = GpuAuditor(list_processes=lambda: next(samples), facts=read)
    auditor.sample()
    auditor.sample()
    report = auditor.report()
    assert report.samples == 2 and sorted(reads) == [10, 11, 12, 13]  # each read once, at first sight
    assert report.gpus == {0: [10, 12, 13], 1: [11, 12]}
    assert [(v.gpu, v.process.pid) for v in report.violations] == [(1, 12)]
    assert report.unreadable == [13]  # not readable: reported apart, never silently passed as pinned


def test_a_judge_for_a_gpu_is_pinned_to_it_in_nvml_order(tmp_path) -> None:
    env = judge_env(tmp_path, device="cuda", gpu_index=3)
    facts = ProcessFacts(pid=1, visible_devices=env["CUDA_VISIBLE_DEVICES"], device_order=env.get("CUDA_DEVICE_ORDER"))
    assert pinned_to(facts, 3, UUID0) is None
    assert judge_env(tmp_path, device="cpu", gpu_index=None)["CUDA_VISIBLE_DEVICES"] == ""
