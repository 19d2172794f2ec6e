"""Slots (the GPUs and CPU slots a worker leases), their discovery through NVML, and health checks.

NVML is read through nvidia-ml-py (``pynvml``); on a machine without the library or a driver every
function here degrades to "no GPU". NVML numbers GPUs by PCI bus id; set
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that CUDA's numbering (``EvalOptions.gpu_index``) agrees.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ledger.models import SlotKind

__all__ = [
    "TEMPERATURE_LIMIT_C",
    "HealthCheck",
    "HealthReport",
    "Slot",
    "default_health_check",
    "discover_slots",
    "nvml_gpus",
    "nvml_health_check",
]

log = logging.getLogger("solforge.planner")

TEMPERATURE_LIMIT_C = 95
"""Above this the GPU throttles hard (H100/H200 slowdown temperatures sit around 87-95 C): timings
taken on it are worthless, so the slot is taken out of service."""


@dataclass(frozen=True)
class Slot:
    """One leasable place to run a benchmark: a CUDA GPU or a CPU slot of a host."""

    host: str
    kind: SlotKind
    index: int
    """NVML index for a GPU; 0.. for CPU slots."""
    name: str | None = None
    """Product name, for example 'NVIDIA H200'; 'cpu' for CPU slots."""
    uuid: str | None = None
    """NVML UUID (GPU-...); a GPU swapped behind the same index fails its health check."""

    @property
    def id(self) -> str:
        """The slot's ledger id, ``<host>/<kind>:<index>``."""
        return f"{self.host}/{self.kind}:{self.index}"


@dataclass(frozen=True)
class HealthReport:
    """A health check's verdict."""

    ok: bool
    reason: str | None = None
    """Why the slot is sick (recorded as its out-of-service reason)."""


HealthCheck = Callable[[Slot], HealthReport]
"""Checks one slot before it is leased; must return within a few seconds and never raise."""

_nvml_lock = threading.Lock()
_nvml_ready: bool | None = None


def _nvml() -> Any | None:
    """The initialised pynvml module, or None when NVML is not usable here."""
    global _nvml_ready
    with _nvml_lock:
        try:
            import pynvml
        except ImportError:
            _nvml_ready = False
            return None
        if _nvml_ready is None:
            try:
                pynvml.nvmlInit()
                _nvml_ready = True
            except Exception as exc:  # pynvml raises NVMLError subclasses and OSError for a missing library
                log.info("NVML unavailable (%s); this host has no GPU slots", exc, extra={"action": "nvml"})
                _nvml_ready = False
        return pynvml if _nvml_ready else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_gpus(host: str | None = None) -> list[Slot]:
    """Every GPU NVML sees on this host, as CUDA slots (empty without NVML)."""
    nv = _nvml()
    if nv is None:
        return []
    host = host or socket.gethostname()
    slots = []
    try:
        for index in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            slots.append(
                Slot(
                    host=host,
                    kind="cuda",
                    index=index,
                    name=_text(nv.nvmlDeviceGetName(handle)),
                    uuid=_text(nv.nvmlDeviceGetUUID(handle)),
                )
            )
    except nv.NVMLError as exc:
        log.warning("NVML failed while listing GPUs: %s", exc, extra={"action": "nvml"})
    return slots


def discover_slots(
    *,
    host: str | None = None,
    gpus: Sequence[int] | None = None,
    cpu_slots: int | None = None,
    visible: Callable[[str], list[Slot]] | None = None,
) -> list[Slot]:
    """The slots a worker on this host should register.

    Parameters
    ----------
    host
        Host name recorded in slot ids; default ``socket.gethostname()``.
    gpus
        NVML indices to use; None: every visible GPU; empty: none.
    cpu_slots
        CPU slots to add; None: one when there is no GPU slot, else none.
    visible
        Lists the host's GPUs (default :func:`nvml_gpus`); tests pass a fake.

    Raises
    ------
    ValueError
        A requested GPU index is not visible, or ``cpu_slots`` is negative.
    """
    host = host or socket.gethostname()
    found = (visible or nvml_gpus)(host)
    if gpus is None:
        chosen = found
    else:
        by_index = {s.index: s for s in found}
        missing = [i for i in gpus if i not in by_index]
        if missing:
            raise ValueError(
                f"GPU indices {missing} are not visible on {host} (visible: {sorted(by_index) or 'none'}); "
                "check nvidia-smi, or pass --gpus with visible indices"
            )
        chosen = [by_index[i] for i in dict.fromkeys(gpus)]
    if cpu_slots is not None and cpu_slots < 0:
        raise ValueError(f"cpu_slots must be 0 or more, got {cpu_slots}")
    n_cpu = cpu_slots if cpu_slots is not None else (0 if chosen else 1)
    return [*chosen, *(Slot(host=host, kind="cpu", index=i, name="cpu") for i in range(n_cpu))]


def nvml_health_check(slot: Slot) -> HealthReport:
    """Check a CUDA slot through NVML: reachable, the same GPU, no uncorrected ECC errors, not overheating."""
    nv = _nvml()
    if nv is None:
        return HealthReport(False, "NVML is not available on this host")
    try:
        handle = nv.nvmlDeviceGetHandleByIndex(slot.index)
        uuid = _text(nv.nvmlDeviceGetUUID(handle))
        if slot.uuid and uuid != slot.uuid:
            return HealthReport(False, f"GPU {slot.index} is now {uuid}, registered as {slot.uuid}")
        nv.nvmlDeviceGetMemoryInfo(handle)
        temperature = nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)
        if temperature > TEMPERATURE_LIMIT_C:
            return HealthReport(False, f"GPU {slot.index} at {temperature} C (limit {TEMPERATURE_LIMIT_C} C)")
        try:
            ecc = nv.nvmlDeviceGetTotalEccErrors(
                handle, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
            )
        except nv.NVMLError:
            ecc = 0  # ECC not supported or disabled on this board
        if ecc:
            return HealthReport(False, f"GPU {slot.index} reports {ecc} uncorrected ECC errors since boot")
    except nv.NVMLError as exc:
        return HealthReport(False, f"NVML cannot read GPU {slot.index}: {exc}")
    return HealthReport(True)


def default_health_check(slot: Slot) -> HealthReport:
    """CPU slots are always healthy; CUDA slots go through :func:`nvml_health_check`."""
    if slot.kind == "cpu":
        return HealthReport(True)
    return nvml_health_check(slot)
