"""The baseline T_b and the speed-of-light figures of one timed workload.

T_b is the faster of the eager reference and the reference under torch.compile, each run as a
solution in a process started exactly like the candidate's and timed by the same harness (timer,
fresh pointers, L2 flush), so the baseline and the candidate are measured under equal conditions.

A baseline is measured once per (definition, workload, GPU model, torch version, timer) and kept:

- :class:`BaselineStore` answers from, in order, the records the caller passed in (the ledger's,
  shared by every worker and host), this machine's cache (``<cache>/baselines/<problem>.json``) and
  the tables shipped with the catalogue; what it measures goes to the cache and back to the caller,
  which shares it;
- :class:`BaselineTimer` measures what none of them has, in trusted processes of its own.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import solforge.problems as problems_package
from solforge.problems import Definition, Performance, Solution, SourceFile, Workload, reference_solution
from solforge.problems.files import write_text_atomic

from .api import BaselineRecord
from .sol.counting import SHIPPED_COUNTS
from .timing import resolved_median

if TYPE_CHECKING:
    from .processes import CandidateProcess

BASELINE_WARMUP = 5
BASELINE_ITERATIONS = 30
ERROR_CHARS = 1500
"""How much of a failed variant's error is kept: its end, where the cause is."""
RECIPE = "b2"
"""Bumped when the way a baseline is measured changes, so that older records are measured again
(b2: torch.compile no longer depends on inductor's worker pool, which failed from the third shape on)."""


LAUNCH_BOUND_MS = 0.005
"""A baseline under 5 us is launch-bound: the launch and the harness's per-call cost are much of the time, so
an agent learns more from fusing launches away than from a faster kernel body."""
COMPILED_SLOW_FACTOR = 2.0
"""A compiled baseline this many times slower than eager is worth a note (inductor lost, or recompiled)."""


def is_launch_bound(baseline_ms: float | None) -> bool:
    return baseline_ms is not None and 0 < baseline_ms < LAUNCH_BOUND_MS


def baseline_checks(record: BaselineRecord, t_sol_ms: float | None) -> list[str]:
    """What a measured baseline says about its workload, as short flags (empty: nothing to say).

    ``faster_than_sol``: the baseline beats the speed of light, so the FLOP/byte counts are too high or the
    reference does less than its definition says; ``compiled_slow``: torch.compile took over
    :data:`COMPILED_SLOW_FACTOR` times the eager time; ``launch_bound``: under :data:`LAUNCH_BOUND_MS`.
    """
    flags = []
    if t_sol_ms and record.baseline_ms < t_sol_ms:
        flags.append("faster_than_sol")
    if record.compiled_ms and record.eager_ms and record.compiled_ms > COMPILED_SLOW_FACTOR * record.eager_ms:
        flags.append("compiled_slow")
    if is_launch_bound(record.baseline_ms):
        flags.append("launch_bound")
    return flags


def definition_digest(definition: Definition) -> str:
    """What of the definition a baseline depends on: its reference and its axes."""
    axes = json.dumps(definition.to_json_dict()["axes"], sort_keys=True)
    return hashlib.sha256((definition.reference + axes).encode()).hexdigest()[:16]


def baseline_key(definition: Definition, workload: Workload, hardware: str, torch_version: str, timer: str) -> str:
    """The identity of one baseline; two judges that compute the same key may share the record."""
    return "|".join([definition_digest(definition), workload.uuid, json.dumps(workload.axes, sort_keys=True),
                     hardware, torch_version, timer, RECIPE])


def tail(text: str, limit: int = ERROR_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


class BaselineStore:
    """Baseline records of one problem: the caller's, this machine's cache, the shipped tables.

    Parameters
    ----------
    cache_file
        This machine's cache for the problem (a JSON object of records by key).
    known
        Records from the caller (the ledger); they take precedence over the cache.
    shipped
        Records from the tables shipped with the catalogue, used when nothing else has the key.
    """

    def __init__(self, cache_file: Path, known: Iterable[BaselineRecord] = (),
                 shipped: Iterable[BaselineRecord] = ()) -> None:
        self.cache_file = cache_file
        self._known = {r.key: r.model_copy(update={"source": "ledger"}) for r in known}
        self._shipped = {r.key: r.model_copy(update={"source": "table"}) for r in shipped}
        self.measured: list[BaselineRecord] = []
        """What this store measured in its lifetime (the caller shares these)."""

    def _read_cache(self) -> dict[str, Any]:
        try:
            data = json.loads(self.cache_file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> BaselineRecord | None:
        if key in self._known:
            return self._known[key]
        cached = self._read_cache().get(key)
        if isinstance(cached, dict):
            try:
                return BaselineRecord.model_validate({**cached, "source": "cache"})
            except ValueError:
                pass  # an entry of an older format: measure again
        return self._shipped.get(key)

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, record: BaselineRecord) -> None:
        """Keep a new measurement in this machine's cache (atomically) and in :attr:`measured`."""
        self.measured.append(record)
        data = self._read_cache()
        data[record.key] = record.model_dump(mode="json", exclude={"source"})
        write_text_atomic(self.cache_file, json.dumps(data, indent=1))


def baseline_solutions(definition: Definition) -> dict[str, Solution]:
    """The reference as a solution, eager and under torch.compile (the two baseline candidates)."""
    eager = reference_solution(definition)
    source = eager.sources[0].content + (
        "\n\n# solforge baseline: the same reference under torch.compile\n"
        "import torch as _solforge_torch\n"
        "import torch._dynamo as _solforge_dynamo\n"
        "# one compiled graph per workload shape: lift the recompile limit so no shape falls back to eager\n"
        "_solforge_dynamo.config.cache_size_limit = 256\n"
        "if hasattr(_solforge_dynamo.config, 'recompile_limit'):\n"
        "    _solforge_dynamo.config.recompile_limit = 256\n"
        "# autotune on every process's first call, and keep no choice: inductor keys a kept choice by the\n"
        "# generating process's path, so a graph the judge kept for this baseline would write into that home\n"
        "import torch._inductor.config as _solforge_inductor_config\n"
        "_solforge_inductor_config.autotune_local_cache = False\n"
        "_solforge_eager_run = run\n"
        "run = _solforge_torch.compile(_solforge_eager_run, dynamic=False)\n"
    )
    compiled = eager.model_copy(update={"name": f"{definition.name}__compiled",
                                        "sources": [SourceFile(path="reference.py", content=source)]})
    return {"eager": eager, "compiled": compiled}


OpenProcess = Callable[[Solution, str], "tuple[CandidateProcess, dict[str, Any]] | str"]
"""Starts a trusted process for a baseline solution and loads it: (process, load answer), or why not."""


class BaselineTimer:
    """Times the eager and compiled reference of a problem, each in a trusted process kept for the
    problem's later workloads.

    Parameters
    ----------
    definition
        The problem's definition (its reference becomes the two baseline solutions).
    open_process
        Builds and loads a baseline solution in a process started like the candidate's.
    cuda
        Whether the GPU is used (the CPU times only the eager variant: inductor on the CPU needs
        minutes per shape for no useful number).
    timeout_s
        Limit of one variant's timing on one workload.
    """

    def __init__(self, definition: Definition, open_process: OpenProcess, *, cuda: bool, timeout_s: float) -> None:
        self.variants = baseline_solutions(definition)
        if not cuda:
            del self.variants["compiled"]
        self.open_process = open_process
        self.cuda = cuda
        self.timeout_s = timeout_s
        self.procs: dict[str, CandidateProcess] = {}
        self.load_errors: dict[str, str] = {}

    def open_all(self) -> None:
        """Start every variant's process and load the reference in it now: CPU work, which an evaluation
        that will need a baseline does before it takes the GPU's lease rather than inside it."""
        for variant in self.variants:
            self._process(variant)

    def _process(self, variant: str) -> CandidateProcess | str:
        """The variant's loaded process (started on first use), or why it could not be loaded."""
        proc = self.procs.get(variant)
        if proc is not None and proc.alive:
            return proc
        if variant in self.load_errors:  # it fails the same way every time: not tried again
            return self.load_errors[variant]
        opened = self.open_process(self.variants[variant], f"baseline-{variant}")
        if isinstance(opened, str):
            return opened
        proc, answer = opened
        if not answer.get("ok"):
            proc.discard()
            self.load_errors[variant] = f"load failed: {tail(answer.get('error', ''))}"
            return self.load_errors[variant]
        self.procs[variant] = proc
        return proc

    def _time_variant(self, variant: str, inputs: list[Any], buffers: list[Any], specs: list[list[Any]],
                      timer: str) -> float | str:
        """Median latency (ms) of one variant, or the reason it failed."""
        proc = self._process(variant)
        if isinstance(proc, str):
            return proc
        answer, _ = proc.request(
            {"cmd": "time", "inputs": inputs, "outputs": buffers, "output_specs": specs,
             "warmup": BASELINE_WARMUP if self.cuda else 1, "iterations": BASELINE_ITERATIONS if self.cuda else 5,
             "check_at": -1, "timer": timer},
            self.timeout_s, cuda_ipc=self.cuda,
        )
        if not answer.get("ok"):
            return f"{answer.get('status')}: {tail(answer.get('error', ''))}"
        return resolved_median([float(t) for t in answer["measurement"]["times_ms"]])

    def measure(self, key: str, problem: str, workload: Workload, hardware: str, inputs: list[Any],
                buffers: list[Any], specs: list[list[Any]], timer: str) -> BaselineRecord:
        fields: dict[str, Any] = {}
        for name in self.variants:
            measured = self._time_variant(name, inputs, buffers, specs, timer)
            fields[f"{name}_error" if isinstance(measured, str) else f"{name}_ms"] = measured
        times = [v for k, v in fields.items() if k.endswith("_ms")]
        if not times:
            raise RuntimeError(f"the reference could not be timed as a baseline: {fields}")
        return BaselineRecord(key=key, problem=problem, workload=workload.uuid, hardware=hardware,
                              baseline_ms=min(times), **fields)

    def close(self) -> None:
        for proc in self.procs.values():
            proc.discard()
        self.procs.clear()


def table_name(hardware: str) -> str:
    """The file name of a GPU model's table: ``NVIDIA H200`` -> ``nvidia-h200.jsonl``."""
    return "-".join("".join(c if c.isalnum() else " " for c in hardware.lower()).split()) + ".jsonl"


@functools.cache
def _table(path: Path) -> dict[str, list[BaselineRecord]]:
    by_problem: dict[str, list[BaselineRecord]] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return by_problem
    for line in lines:
        if line.strip():
            with contextlib.suppress(ValueError):
                record = BaselineRecord.model_validate_json(line)
                by_problem.setdefault(record.problem, []).append(record)
    return by_problem


def shipped_records(problem: str, hardware: str, tables_dir: Path | None = None) -> list[BaselineRecord]:
    """The shipped baselines of ``problem`` on ``hardware`` (empty when no table ships for that GPU).

    Records are used only when their key matches the judge's own, so a table measured with another
    torch version or timer is never applied (the judge measures, and says so, as without a table).
    """
    folder = tables_dir if tables_dir is not None else problems_package.tables_dir()
    return list(_table(folder / table_name(hardware)).get(problem, []))


def shipped_gpus(tables_dir: Path | None = None) -> list[str]:
    """The GPU models a baseline table ships for, as their records name them (``NVIDIA H200``)."""
    folder = tables_dir if tables_dir is not None else problems_package.tables_dir()
    found = set()
    for path in sorted(folder.glob("*.jsonl")):
        if path.name != SHIPPED_COUNTS:
            found |= {r.hardware for records in _table(path).values() for r in records}
    return sorted(found)


def shipped_problem_names(hardware: str, tables_dir: Path | None = None) -> list[str]:
    """The problems the table of ``hardware``'s model holds records of, sorted."""
    folder = tables_dir if tables_dir is not None else problems_package.tables_dir()
    return sorted(_table(folder / table_name(hardware)))


def shipped_by_gpu(problem: str, tables_dir: Path | None = None) -> dict[str, list[BaselineRecord]]:
    """Every shipped table's records of ``problem``, by GPU model (for showing; a judge uses
    :func:`shipped_records` of its own GPU, key by key)."""
    folder = tables_dir if tables_dir is not None else problems_package.tables_dir()
    found: dict[str, list[BaselineRecord]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        if path.name == SHIPPED_COUNTS:
            continue  # the speed-of-light counts share the folder
        for record in _table(path).get(problem, []):
            found.setdefault(record.hardware, []).append(record)
    return found


def attach_scores(perf: Performance, baseline: BaselineRecord | None, *, counts: Any, hardware: str,
                  calibration_dir: Path, warnings: list[str] | None = None) -> str | None:
    """Fill the baseline and speed-of-light fields of ``perf``; return a REWARD_HACK verdict or None.

    ``counts`` are the workload's FLOPs and bytes (None on the CPU, which gets no speed-of-light
    figures). A baseline variant that could not be timed is named in ``warnings`` (the trace's log):
    a speedup over the eager reference alone reads very differently from one over torch.compile.
    """
    from .sol import score

    if baseline is not None:
        if warnings is not None:
            warnings += [f"baseline: the {name} reference was not timed ({error}); the baseline is the other variant"
                         for name, error in (("eager", baseline.eager_error), ("compiled", baseline.compiled_error))
                         if error]
        perf.reference_latency_ms = baseline.eager_ms
        perf.baseline_latency_ms = baseline.baseline_ms
        eager = baseline.eager_ms
        perf.speedup_factor = eager / perf.latency_ms if eager and perf.latency_ms > 0 else None
        perf.speedup = score.speedup(baseline.baseline_ms, perf.latency_ms)
    if counts is None:
        return None  # CPU timings carry no speed-of-light score
    from .sol.hardware import datasheet_peaks, match_spec
    from .sol.peaks import resolve_peaks

    peaks = resolve_peaks(hardware, calibration_dir)
    if peaks is None:
        return None
    estimate = score.sol_time(counts, peaks)
    perf.sol_latency_ms = estimate.t_sol_ms
    perf.sol_bound = estimate.bound
    perf.peak_source = peaks.source
    if perf.baseline_latency_ms is not None:
        perf.sol_score = score.sol_score(perf.latency_ms, perf.baseline_latency_ms, estimate.t_sol_ms)
    # The hack check uses the datasheet, never a calibration: a kernel may legitimately beat what torch
    # reached during calibration, but not what the silicon can do. Outputs small enough to stay in L2
    # are forgiven their DRAM write (physical_floor_ms).
    spec = match_spec(hardware)
    if spec is None:
        return None
    floor_ms = score.physical_floor_ms(counts, datasheet_peaks(spec))
    if score.is_below_sol(perf.latency_ms, floor_ms):
        return (f"measured {perf.latency_ms * 1e3:.2f} us, below the physical floor {floor_ms * 1e3:.2f} us "
                f"(T_SOL {estimate.t_sol_ms * 1e3:.2f} us, {estimate.bound}-bound, datasheet {spec.name}): faster "
                "than the hardware allows, so the time cannot be real")
    return None
