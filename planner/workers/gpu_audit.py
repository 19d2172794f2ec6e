"""Which processes hold a context on each GPU, and whether each of them is pinned to that GPU alone.

Every process solforge starts on a GPU host (a slot's judge, its candidates, a health check) sees one GPU:
the one its slot leases, through ``CUDA_VISIBLE_DEVICES`` with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (so CUDA's
index is NVML's). A candidate cannot widen that: CUDA reads the variable once, when the process initialises
it, and a candidate's process has done so before its solution is imported. So "no candidate touches a GPU
it does not lease" can be checked from outside: every process NVML lists on GPU *i* must name GPU *i*, and
only it, in its ``CUDA_VISIBLE_DEVICES``. One that names another GPU, or none (it sees every GPU), is a
violation, whatever it is.

:class:`GpuAuditor` samples NVML's per-GPU lists of compute processes while a swarm runs and reads each new
process's environment and command line from ``/proc`` the first time it is seen (processes are short-lived).
Reading another user's ``/proc/<pid>/environ``, or a judge's (it makes itself non-dumpable), needs root: such a
process is reported as unreadable, not as a violation.

    python -m solforge.planner.workers.gpu_audit --seconds 600 --out audit.json   # SIGTERM ends it sooner
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .gpus import _nvml, _text

__all__ = [
    "AuditReport",
    "GpuAuditor",
    "GpuProcesses",
    "ProcessFacts",
    "Violation",
    "nvml_compute_processes",
    "pinned_to",
    "process_facts",
]


@dataclass(frozen=True)
class GpuProcesses:
    """One GPU's compute processes at one instant."""

    index: int
    uuid: str
    pids: tuple[int, ...]


class ProcessFacts(BaseModel):
    """What ``/proc`` says about a process NVML listed."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    command: str = ""
    """Its command line, shortened."""
    visible_devices: str | None = None
    """Its ``CUDA_VISIBLE_DEVICES`` (None: not set, so it sees every GPU)."""
    device_order: str | None = None
    """Its ``CUDA_DEVICE_ORDER``: an index in ``visible_devices`` is NVML's only under ``PCI_BUS_ID``."""
    readable: bool = True
    """False when its environment could not be read (another user's process, a non-dumpable one, gone)."""


class Violation(BaseModel):
    """A process with a context on a GPU it is not pinned to."""

    model_config = ConfigDict(extra="forbid")

    gpu: int
    gpu_uuid: str
    process: ProcessFacts
    reason: str


class AuditReport(BaseModel):
    """What a sampling run saw: per GPU the processes, and every violation (none in a correct run)."""

    model_config = ConfigDict(extra="forbid")

    seconds: float
    samples: int
    gpus: dict[int, list[int]]
    """Every pid seen on each GPU (by NVML index)."""
    processes: list[ProcessFacts]
    violations: list[Violation]
    unreadable: list[int]
    """Pids listed on a GPU whose environment could not be read (run the audit as root to read them)."""


_COMMAND_CHARS = 300


def process_facts(pid: int, proc: Path = Path("/proc")) -> ProcessFacts:
    """The command line and CUDA variables of ``pid``, from ``/proc`` (``readable=False`` when refused)."""
    folder = proc / str(pid)
    try:
        command = (folder / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    try:
        raw = (folder / "environ").read_bytes()
    except OSError:
        return ProcessFacts(pid=pid, command=command[:_COMMAND_CHARS], readable=False)
    environ = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
    return ProcessFacts(pid=pid, command=command[:_COMMAND_CHARS],
                        visible_devices=environ.get("CUDA_VISIBLE_DEVICES"),
                        device_order=environ.get("CUDA_DEVICE_ORDER"))


def pinned_to(facts: ProcessFacts, index: int, uuid: str) -> str | None:
    """None when ``facts`` pin the process to GPU ``index`` (``uuid``) alone, else why not."""
    if facts.visible_devices is None:
        return "CUDA_VISIBLE_DEVICES is not set: the process sees every GPU"
    entries = [e.strip() for e in facts.visible_devices.split(",") if e.strip()]
    if len(entries) != 1:
        return f"CUDA_VISIBLE_DEVICES={facts.visible_devices!r} does not name exactly one GPU"
    (entry,) = entries
    if entry.startswith(("GPU-", "MIG-")):
        # CUDA accepts any unique prefix of a UUID.
        return None if uuid.startswith(entry) else f"pinned to {entry}, listed on {uuid}"
    if not entry.isdigit():
        return f"CUDA_VISIBLE_DEVICES={entry!r} is neither an index nor a UUID"
    if facts.device_order != "PCI_BUS_ID":
        return (f"pinned to index {entry} without CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's index need not be "
                f"NVML's {index}")
    return None if int(entry) == index else f"pinned to GPU {entry}, listed on GPU {index}"


def nvml_compute_processes() -> list[GpuProcesses]:
    """Every GPU's compute processes as NVML lists them now (empty without NVML)."""
    nv = _nvml()
    if nv is None:
        return []
    found = []
    for index in range(nv.nvmlDeviceGetCount()):
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        try:
            running = nv.nvmlDeviceGetComputeRunningProcesses(handle)
        except nv.NVMLError:
            running = []
        found.append(GpuProcesses(index, _text(nv.nvmlDeviceGetUUID(handle)), tuple(p.pid for p in running)))
    return found


class GpuAuditor:
    """Samples which processes hold each GPU, in a thread, until stopped; :meth:`report` judges them.

    Parameters
    ----------
    interval_s
        Between two samples. A candidate lives for a whole evaluation (seconds), so 0.2 s sees every one.
    list_processes
        Lists each GPU's compute processes (default :func:`nvml_compute_processes`); tests pass their own.
    facts
        Reads a process's facts (default :func:`process_facts`).
    """

    def __init__(self, interval_s: float = 0.2, *,
                 list_processes: Callable[[], list[GpuProcesses]] = nvml_compute_processes,
                 facts: Callable[[int], ProcessFacts] = process_facts) -> None:
        self.interval_s = interval_s
        self._list = list_processes
        self._facts = facts
        self._seen: dict[tuple[int, str], set[int]] = {}
        self._processes: dict[int, ProcessFacts] = {}
        self._samples = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Take one sample now."""
        for gpu in self._list():
            self._seen.setdefault((gpu.index, gpu.uuid), set()).update(gpu.pids)
            for pid in gpu.pids:
                if pid not in self._processes:  # read at first sight: it may be gone by the next sample
                    self._processes[pid] = self._facts(pid)
        self._samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def start(self) -> GpuAuditor:
        self._started = time.monotonic()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="gpu-audit", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> AuditReport:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.report()

    def report(self) -> AuditReport:
        violations = []
        for (index, uuid), pids in sorted(self._seen.items()):
            for pid in sorted(pids):
                facts = self._processes[pid]
                if not facts.readable:
                    continue
                reason = pinned_to(facts, index, uuid)
                if reason is not None:
                    violations.append(Violation(gpu=index, gpu_uuid=uuid, process=facts, reason=reason))
        return AuditReport(
            seconds=round(time.monotonic() - self._started, 3),
            samples=self._samples,
            gpus={index: sorted(pids) for (index, _), pids in sorted(self._seen.items())},
            processes=sorted(self._processes.values(), key=lambda f: f.pid),
            violations=violations,
            unreadable=sorted(pid for pid, f in self._processes.items() if not f.readable),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, required=True, help="how long to sample")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--out", type=Path, required=True, help="the report (JSON)")
    args = parser.parse_args(argv)
    done = threading.Event()
    for ending in (signal.SIGINT, signal.SIGTERM):  # either ends the sampling early, with a report
        signal.signal(ending, lambda *_: done.set())
    auditor = GpuAuditor(args.interval).start()
    done.wait(args.seconds)
    report = auditor.stop()
    args.out.write_text(report.model_dump_json(indent=1))
    print(f"{report.samples} samples in {report.seconds:.0f} s: {len(report.processes)} processes on "
          f"{len(report.gpus)} GPU(s), {len(report.violations)} violation(s), {len(report.unreadable)} unreadable",
          file=sys.stderr)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
