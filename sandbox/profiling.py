"""Nsight Compute for one call of a solution: the command that wraps its candidate process, and the compact
answer read back from the report. Judge side (trusted); no torch.

The candidate process runs under ``ncu --profile-from-start off``: it loads the solution and passes the
correctness rounds unprofiled, then brackets one call with ``cudaProfilerStart``/``Stop`` (the ``profile``
command of :mod:`solforge.sandbox.candidate`), so only that call's kernels are profiled, each replayed with
``--clock-control none`` (the GPU's own clocks, as timed runs see them). When the candidate exits, ncu writes
the report; the judge reads it with ``ncu --import`` (never anything the candidate wrote itself) and keeps
it in the cache, so that the pages of one kernel's raw sections need no second run.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from solforge.problems import Workload

from .api import KernelProfile, ProfileReport, StallShare

__all__ = ["ANSWER_CHARS", "NCU_SECTIONS", "cupti_kernels", "details_page", "kernels_from_raw", "largest_workload",
           "ncu_path", "ncu_prefix", "read_raw", "summary_text"]

NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis",
                "ComputeWorkloadAnalysis")
"""What one profile collects: about 40 replays of each kernel on the H200."""
ANSWER_CHARS = 4000
PAGE_CHARS = 4000
TOP_STALLS = 3
_IMPORT_TIMEOUT_S = 120.0

_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
_TENSOR = re.compile(r"^sm__(pipe_tensor\w*_cycles_active|inst_executed_pipe_tensor\w*)\.avg\.pct_of_peak_sustained_active$")
_LIMITS = {"launch__occupancy_limit_registers": "registers", "launch__occupancy_limit_shared_mem": "shared memory",
           "launch__occupancy_limit_warps": "warps per SM", "launch__occupancy_limit_blocks": "blocks per SM"}
_TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def largest_workload(workloads: Sequence[Workload]) -> Workload:
    """The workload a profile takes by default: the most elements along its axes, where launch overhead
    matters least (the smallest are often a single block on the whole GPU)."""
    return max(workloads, key=lambda w: math.prod(w.axes.values()) if w.axes else 0)


def ncu_path() -> str | None:
    """Nsight Compute's command line, from PATH, $CUDA_HOME or the usual toolkit folder; None without it."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.access(Path(root) / "bin" / "ncu", os.X_OK):
            return str(Path(root) / "bin" / "ncu")
    return None


def ncu_prefix(ncu: str, report: Path) -> list[str]:
    """The argv that goes before the candidate's own: profile only inside cudaProfilerStart/Stop."""
    sections = [arg for name in NCU_SECTIONS for arg in ("--section", name)]
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
            *sections, "--export", str(report), "--force-overwrite"]


def _ncu_import(ncu: str, report: Path, *args: str) -> str:
    done = subprocess.run([ncu, "--import", str(report), *args], capture_output=True, text=True,
                          timeout=_IMPORT_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"ncu --import {' '.join(args)} failed (exit {done.returncode}): "
                           f"{(done.stderr or done.stdout)[-600:]}")
    return done.stdout


def read_raw(ncu: str, report: Path) -> list[dict[str, str]]:
    """One dict per profiled kernel, metric name -> value, units in base form (ns, bytes, %)."""
    return parse_raw_csv(_ncu_import(ncu, report, "--page", "raw", "--csv", "--print-units", "base"))


def parse_raw_csv(text: str) -> list[dict[str, str]]:
    """ncu's raw page as CSV: a header of metric names, a row of units, then a row per kernel. Lines
    before the header (ncu's own ``==PROF==`` notes) are skipped; a unit goes in ``<name>@unit``."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    start = next((i for i, row in enumerate(rows) if "Kernel Name" in row), None)
    if start is None:
        return []
    header = rows[start]
    units = rows[start + 1] if start + 1 < len(rows) else []
    body = rows[start + 2:]
    if units and units[0].strip().isdigit():  # no units row (older ncu): it is the first kernel
        body, units = rows[start + 1:], []
    out = []
    for row in body:
        kernel = dict(zip(header, row, strict=False))
        kernel.update({f"{name}@unit": unit for name, unit in zip(header, units, strict=False) if unit})
        out.append(kernel)
    return out


def _number(kernel: Mapping[str, str], *names: str) -> float | None:
    for name in names:
        raw = kernel.get(name)
        if raw is None:
            continue
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return None


def _duration_ns(kernel: Mapping[str, str]) -> float:
    value = _number(kernel, "gpu__time_duration.sum") or 0.0
    return value * _TIME_NS.get(kernel.get("gpu__time_duration.sum@unit", "nsecond"), 1.0)


def kernels_from_raw(rows: Sequence[Mapping[str, str]]) -> list[KernelProfile]:
    """The compact figures of each kernel; fields ncu did not collect on this GPU stay None."""
    kernels = []
    for index, kernel in enumerate(rows, start=1):
        stalls = sorted((StallShare(reason=m.group(1), cycles=round(v, 2)) for name in kernel
                         if (m := _STALL.match(name)) and (v := _number(kernel, name)) is not None and v > 0),
                        key=lambda s: -s.cycles)
        tensor = [v for name in kernel if _TENSOR.match(name) and (v := _number(kernel, name)) is not None]
        limits = {label: v for name, label in _LIMITS.items() if (v := _number(kernel, name)) is not None}
        static = _number(kernel, "launch__shared_mem_per_block_static")
        dynamic = _number(kernel, "launch__shared_mem_per_block_dynamic")
        duration_ns = _duration_ns(kernel)
        rate = _number(kernel, "dram__bytes.sum.per_second")  # what the six sections collect (ncu 2025.3)
        dram_bytes = _number(kernel, "dram__bytes.sum")
        if dram_bytes is None and rate is not None:
            dram_bytes = rate * duration_ns / 1e9
        registers = _number(kernel, "launch__registers_per_thread")
        theoretical = _number(kernel, "sm__maximum_warps_per_active_cycle_pct")
        # A limit only limits below full occupancy; then the smallest block count is the cap.
        limiter = min(limits, key=lambda k: limits[k]) if limits and theoretical is not None and theoretical < 99.5 \
            else None
        profile = KernelProfile(
            index=index,
            name=kernel.get("Kernel Name", "?"),
            duration_us=round(duration_ns / 1e3, 3),
            grid=kernel.get("Grid Size") or None,
            block=kernel.get("Block Size") or None,
            registers=int(registers) if registers is not None else None,
            shared_bytes=int((static or 0) + (dynamic or 0)) if static is not None or dynamic is not None else None,
            dram_pct=_number(kernel, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            sm_pct=_number(kernel, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            memory_pct=_number(kernel, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
            dram_bytes=round(dram_bytes) if dram_bytes is not None else None,
            achieved_occupancy_pct=_number(kernel, "sm__warps_active.avg.pct_of_peak_sustained_active"),
            theoretical_occupancy_pct=theoretical,
            occupancy_limiter=limiter,
            waves=_number(kernel, "launch__waves_per_multiprocessor"),
            l1_hit_pct=_number(kernel, "l1tex__t_sector_hit_rate.pct"),
            l2_hit_pct=_number(kernel, "lts__t_sector_hit_rate.pct"),
            tensor_pipe_pct=max(tensor) if tensor else None,
            issue_cycles=_number(kernel, "smsp__average_warps_active_per_issue_active.ratio",
                                 "smsp__average_warp_latency_per_inst_issued.ratio"),
            stalls=stalls[:TOP_STALLS],
        )
        profile.bound = bound_line(profile)
        kernels.append(profile)
    return kernels


def cupti_kernels(records: Iterable[Sequence[object]]) -> list[KernelProfile]:
    """The CUPTI fallback: each GPU operation of the call, (start_ns, end_ns, name), in launch order,
    named as Nsight Compute would (demangled: CUPTI gives the symbols)."""
    ordered = sorted((int(s), int(e), str(n)) for s, e, n in records)  # type: ignore[call-overload]
    names = demangle([name for _, _, name in ordered])
    return [KernelProfile(index=i, name=name, duration_us=round((end - start) / 1e3, 3),
                          bound="durations only (Nsight Compute did not run): see the note")
            for i, ((start, end, _), name) in enumerate(zip(ordered, names, strict=True), start=1)]


def cupti_note(asked: str) -> str:
    """Why a profile has durations only, from the tool that was asked for."""
    if asked == "cupti":
        return ("tool='cupti' was asked for: kernel durations from CUPTI only; tool='ncu' adds throughput, "
                "occupancy, cache hit rates, stalls and what bounds each kernel")
    return "Nsight Compute (ncu) is not on this machine: kernel durations from CUPTI only"


_SYMBOL = re.compile(r"_Z[\w.$]{1,2000}")


def demangle(names: list[str]) -> list[str]:
    """C++ symbols as source names, by binutils' c++filt (one process for all). The names come from the
    candidate's process, so only what looks like an Itanium symbol of bounded length goes to c++filt;
    other names, and every name when c++filt is missing or fails, stay as they are."""
    cxxfilt = shutil.which("c++filt")
    symbols = [n for n in names if _SYMBOL.fullmatch(n)]
    if not symbols or cxxfilt is None:
        return names
    try:
        done = subprocess.run([cxxfilt], input="\n".join(symbols) + "\n", capture_output=True, text=True,
                              timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return names
    readable = done.stdout.splitlines()
    if len(readable) != len(symbols):
        return names
    named = dict(zip(symbols, readable, strict=True))
    return [named.get(n, n) for n in names]


def _waves(value: float) -> str:
    return f"{value:.2g}" if value >= 0.01 else "under 0.01"


def _blocks(grid: str | None) -> int | None:
    """Blocks in a launch from ncu's '(x, y, z)'."""
    dims = re.findall(r"\d+", grid or "")
    return math.prod(int(d) for d in dims) if len(dims) == 3 else None


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}%"


def bound_line(k: KernelProfile) -> str:
    """What bounds the kernel, in one line an agent can act on."""
    dram, sm, memory = k.dram_pct, k.sm_pct, k.memory_pct
    if dram is None and sm is None:
        return "not known: ncu collected no throughput for this kernel"
    busiest = max(v for v in (dram, sm, memory) if v is not None)
    top = k.stalls[0].reason if k.stalls else None
    if k.waves is not None and k.waves < 1 and busiest < 40:
        blocks = _blocks(k.grid)
        launched = f"{blocks} block(s), " if blocks is not None else ""
        return (f"too little parallel work: {launched}{_waves(k.waves)} waves, so most SMs idle "
                f"(DRAM {_pct(dram)}, SM {_pct(sm)}); more blocks per launch, or fuse with the next kernel")
    if dram is not None and dram >= 60 and dram >= (sm or 0):
        return f"memory-bound: DRAM at {_pct(dram)} of peak; cut bytes moved (fuse, narrower types, reuse on chip)"
    if memory is not None and memory >= 60 and memory >= (sm or 0):
        return (f"memory-bound on chip: the busiest memory unit (L1/L2/shared) at {_pct(memory)}; "
                "fewer or wider accesses, fewer bank conflicts")
    if sm is not None and sm >= 60:
        tensor = f", tensor pipe {_pct(k.tensor_pipe_pct)}" if k.tensor_pipe_pct is not None else ""
        return f"compute-bound: SM at {_pct(sm)}{tensor}; cheaper math, or the tensor cores"
    limiter = ""
    if k.achieved_occupancy_pct is not None and k.achieved_occupancy_pct < 40 and k.occupancy_limiter:
        limiter = f"; occupancy {_pct(k.achieved_occupancy_pct)}, capped by {k.occupancy_limiter}"
    stall = f"; warps wait mostly on {top}" if top else ""
    return f"latency-bound: neither DRAM ({_pct(dram)}) nor SM ({_pct(sm)}) is busy{stall}{limiter}"


def _kernel_block(k: KernelProfile, share: float | None) -> str:
    of_call = f" ({share:.0%} of the kernels' time)" if share is not None else ""
    lines = [f"#{k.index} {k.name[:120]}  {k.duration_us:.3g} us{of_call}"]
    launch = [f"grid {k.grid}" if k.grid else "", f"block {k.block}" if k.block else "",
              f"{k.registers} regs" if k.registers is not None else "",
              f"{k.shared_bytes} B shared" if k.shared_bytes is not None else "",
              f"{_waves(k.waves)} waves" if k.waves is not None else ""]
    if any(launch):
        lines.append("  " + ", ".join(x for x in launch if x))
    if k.dram_pct is not None or k.sm_pct is not None:
        traffic = f" ({k.dram_bytes / 1e6:.2f} MB)" if k.dram_bytes is not None else ""
        lines.append(f"  DRAM {_pct(k.dram_pct)}{traffic}, SM {_pct(k.sm_pct)}, memory {_pct(k.memory_pct)}; "
                     f"L1 hit {_pct(k.l1_hit_pct)}, L2 hit {_pct(k.l2_hit_pct)}; tensor pipe {_pct(k.tensor_pipe_pct)}")
    if k.achieved_occupancy_pct is not None:
        limiter = f", limited by {k.occupancy_limiter}" if k.occupancy_limiter else ""
        lines.append(f"  occupancy {_pct(k.achieved_occupancy_pct)} achieved of "
                     f"{_pct(k.theoretical_occupancy_pct)} theoretical{limiter}")
    if k.stalls:
        issue = f" ({k.issue_cycles:.1f} cycles between issues)" if k.issue_cycles is not None else ""
        lines.append(f"  stalls per issued instruction{issue}: "
                     + ", ".join(f"{s.reason} {s.cycles:.1f}" for s in k.stalls))
    lines.append(f"  bound: {k.bound}")
    return "\n".join(lines)


def summary_text(report: ProfileReport, *, limit: int = ANSWER_CHARS) -> str:
    """The compact answer: the call against T_SOL, then the kernels by time, as many as fit in ``limit``."""
    total = report.kernel_us
    head = [f"{report.tool}: {len(report.kernels)} kernel(s) in one call, {total:.3g} us of kernel time"]
    if report.sol_us:
        head[0] += f"; T_SOL {report.sol_us:.3g} us"
        if total > 0:
            head[0] += f", so the kernels run at {report.sol_us / total:.2g} of speed of light"
    if report.note:
        head.append(f"note: {report.note}")
    text = "\n".join(head)
    for shown, k in enumerate(sorted(report.kernels, key=lambda k: -k.duration_us)):
        block = _kernel_block(k, k.duration_us / total if total > 0 else None)
        tail = f"\n... {len(report.kernels) - shown} more kernel(s); profile with kernel=N for one kernel's sections"
        if len(text) + len(block) + len(tail) + 2 > limit:
            return text + tail
        text += "\n" + block
    return text


_KERNEL_HEADER = re.compile(r"^\s{0,2}\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context \d+, Stream \d+")


def split_details(text: str) -> list[str]:
    """ncu's details page, one block per kernel (each starts with the kernel's launch line)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if _KERNEL_HEADER.match(line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return ["\n".join(b).rstrip() for b in blocks]


def details_page(ncu: str, report: Path, kernel: int, page: int, *, page_chars: int = PAGE_CHARS
                 ) -> tuple[str, int]:
    """Page ``page`` of kernel ``kernel``'s sections as ncu prints them, and the number of pages."""
    blocks = split_details(_ncu_import(ncu, report, "--page", "details", "--print-details", "all"))
    if not 1 <= kernel <= len(blocks):
        raise ValueError(f"kernel {kernel} is not in this profile: it has {len(blocks)} kernel(s), numbered from 1")
    return page_of(blocks[kernel - 1], page, page_chars=page_chars)


def page_of(text: str, page: int, *, page_chars: int = PAGE_CHARS) -> tuple[str, int]:
    """Page ``page`` (1-based) of ``text`` cut at line ends, about ``page_chars`` each, and the page count."""
    pages: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > page_chars:  # a line longer than a page is cut where it must be
            if current:
                pages.append(current)
                current = ""
            pages.append(line[:page_chars])
            line = line[page_chars:]
        if len(current) + len(line) > page_chars:
            pages.append(current)
            current = ""
        current += line
    if current or not pages:
        pages.append(current)
    if not 1 <= page <= len(pages):
        raise ValueError(f"page {page} does not exist: this kernel's sections have {len(pages)} page(s)")
    return pages[page - 1].rstrip(), len(pages)
