"""The persisting-L2 floor: the driver's own carve-out is cleared before a solution loads, and only a
limit above what is left afterwards is blamed on the solution."""

from __future__ import annotations

import types
from typing import Any

import pytest

from solforge.sandbox import timing


class _Runtime:
    """cuda-python's runtime, as far as the floor uses it: a limit that may or may not be settable."""

    def __init__(self, start: int, settable: bool) -> None:
        self.value = start
        self.settable = settable
        self.cudaLimit = types.SimpleNamespace(cudaLimitPersistingL2CacheSize=6)
        self.cudaError_t = types.SimpleNamespace(cudaSuccess=0, cudaErrorUnsupportedLimit=215)

    def cudaDeviceSetLimit(self, limit: int, value: int) -> tuple[int]:
        assert limit == 6
        if not self.settable:
            return (215,)
        self.value = value
        return (0,)

    def cudaDeviceGetLimit(self, limit: int) -> tuple[int, int]:
        return 0, self.value


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(start: int, settable: bool) -> _Runtime:
        fake = _Runtime(start, settable)
        monkeypatch.setattr(timing, "cuda_runtime", lambda: fake)
        monkeypatch.setattr(timing, "_persisting_floor", 0)
        return fake

    return make


def test_the_drivers_default_carve_out_is_cleared_and_the_floor_is_zero(runtime: Any) -> None:
    fake = runtime(11_796_480, settable=True)  # what an H200 context starts with (driver 580)
    assert timing.clear_persisting_l2() == 0
    assert fake.value == 0
    assert timing.allowed_persisting_bytes() == 0


def test_a_carve_out_that_cannot_be_cleared_becomes_the_floor(runtime: Any) -> None:
    runtime(4 << 20, settable=False)
    assert timing.clear_persisting_l2() == 4 << 20
    assert timing.allowed_persisting_bytes() == 4 << 20


def test_without_cuda_python_nothing_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "cuda_runtime", lambda: None)
    monkeypatch.setattr(timing, "_persisting_floor", 0)
    assert timing.clear_persisting_l2() is None
    assert timing.allowed_persisting_bytes() == 0
