"""A swarm run's figures per slot: on a multi-GPU host each GPU's busy time, evaluations and lease overlaps."""

from __future__ import annotations

import pytest

from solforge.planner.swarm.summary import overlapping_leases, slot_figures


def _lease(slot: str, job: str, acquired: float, released: float, status: str = "done") -> dict:
    return {"gpu_id": slot, "job_id": job, "kind": "benchmark", "status": status,
            "acquired_at": acquired, "released_at": released}


def test_leases_that_touch_do_not_overlap_and_leases_that_cross_do() -> None:
    assert overlapping_leases([_lease("g", "a", 0, 1), _lease("g", "b", 1, 2), _lease("g", "c", 2, 3)]) == 0
    assert overlapping_leases([_lease("g", "a", 0, 2), _lease("g", "b", 1, 3)]) == 1
    # One long lease under two short ones: two pairs, counted in any order of the rows.
    assert overlapping_leases([_lease("g", "b", 1, 2), _lease("g", "a", 0, 10), _lease("g", "c", 3, 4)]) == 2
    assert overlapping_leases([]) == 0


def test_each_slot_gets_its_own_busy_time_evaluations_and_overlaps() -> None:
    gpu0, gpu1 = "host/cuda:0", "host/cuda:1"
    leases = [
        _lease(gpu0, "j1", 0, 30),
        _lease(gpu0, "j2", 30, 60),
        _lease(gpu1, "j3", 0, 15),
        # a job retried on the other GPU counts once, where it finished
        _lease(gpu0, "j4", 60, 70, status="done"),
        _lease(gpu1, "j4", 70, 80, status="done"),
        _lease(gpu1, "j5", 80, 90, status="failed"),
    ]
    figures = {f.slot: f for f in slot_figures(leases, steady_s=100.0)}
    assert list(figures) == [gpu0, gpu1]
    assert figures[gpu0].busy_s == 70 and figures[gpu0].lease_utilisation == pytest.approx(0.7)
    assert figures[gpu1].busy_s == 35 and figures[gpu1].lease_utilisation == pytest.approx(0.35)
    assert (figures[gpu0].evaluations, figures[gpu1].evaluations) == (2, 2)  # j1, j2 | j3, j4; j5 failed
    assert figures[gpu0].evaluations_per_hour == pytest.approx(72.0)  # 2 in 100 s
    assert all(f.overlapping_leases == 0 for f in figures.values())
    crossed = slot_figures([*leases, _lease(gpu1, "j6", 10, 20)], steady_s=100.0)
    assert [f.overlapping_leases for f in crossed] == [0, 1]


def test_no_window_gives_no_rates() -> None:
    (only,) = slot_figures([_lease("host/cuda:0", "j", 5, 5)], steady_s=0.0)
    assert only.lease_utilisation is None and only.evaluations_per_hour is None and only.evaluations == 1
