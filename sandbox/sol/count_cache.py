"""Where meta counts are kept, so that a reference is traced once: in process, on disk, the shipped table.

A count is keyed by the reference, the sizes, the inputs' layouts and scalars, the torch version and
:data:`~solforge.sandbox.sol.cost_rules.COUNTING_VERSION`. Counts made on real inputs are never kept.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from solforge.problems.definition import Definition
from solforge.problems.files import write_text_atomic

from .cost_rules import COUNTING_VERSION, Tally
from .tracing import is_tensor


def meta_cache_key(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
                   scalars: Mapping[str, Any]) -> str:
    """The key of a meta count: everything it depends on (see the module docstring), hashed."""
    described: dict[str, Any] = {}
    for name, value in (inputs or {}).items():
        if is_tensor(value):
            described[name] = [list(value.shape), list(value.stride()), str(value.dtype)]
    import torch

    payload = {
        "v": COUNTING_VERSION,
        "torch": torch.__version__.split("+")[0],  # decompositions, hence counts, follow torch
        "ref": definition.reference,
        "inputs": {n: s.model_dump(mode="json") for n, s in definition.inputs.items()},
        "sizes": dict(sorted(sizes.items())),
        "given": described,
        "scalars": {n: repr(v) for n, v in sorted(scalars.items())},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


_META_CACHE: dict[str, Tally] = {}
_META_CACHE_MAX = 4096


def _tally_from_json(data: Mapping[str, Any]) -> Tally:
    return Tally(tensor=defaultdict(float, {str(k): float(v) for k, v in data["tensor"].items()}),
                 other=float(data["other"]),
                 by_op=defaultdict(float, {str(k): float(v) for k, v in data["by_op"].items()}),
                 uncounted={str(u) for u in data["uncounted"]})


def tally_to_json(tally: Tally) -> dict[str, Any]:
    """A tally as kept on disk and in the shipped table."""
    return {"tensor": dict(tally.tensor), "other": tally.other, "by_op": dict(tally.by_op),
            "uncounted": sorted(tally.uncounted)}


def _stored_tally(folder: Path | None, key: str) -> Tally | None:
    """A meta count kept on disk by an earlier process (see ``cache_dir`` of
    :func:`~solforge.sandbox.sol.counting.count_workload`)."""
    if folder is None:
        return None
    try:
        return _tally_from_json(json.loads((folder / f"{key}.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store_tally(folder: Path | None, key: str, tally: Tally) -> None:
    if folder is None:
        return
    with contextlib.suppress(OSError):  # judges on one host share the folder
        write_text_atomic(folder / f"{key}.json", json.dumps(tally_to_json(tally), sort_keys=True))


SHIPPED_COUNTS = "sol_counts.jsonl"
"""The catalogue's meta counts, in the shipped tables' folder (:func:`solforge.problems.tables_dir`): one
:func:`~solforge.sandbox.sol.counting.shipped_count_record` per line. A first evaluation of a catalogue
problem reads its counts there instead of tracing the reference (5.5-6.6 s on an H200 host, most of it
importing torch._dynamo)."""


@functools.cache
def _shipped_tallies(path: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                found[str(record["key"])] = record["tally"]
    return found


def _shipped_tally(key: str) -> Tally | None:
    """The shipped count with exactly this key (the same reference, sizes, layouts, torch and counting
    version), or None."""
    from solforge.problems.load import tables_dir

    data = _shipped_tallies(tables_dir() / SHIPPED_COUNTS).get(key)
    try:
        return _tally_from_json(data) if data is not None else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def cached_tally(store: Path | None, key: str) -> Tally | None:
    """The meta count with this key, from this process, ``store`` (the ``cache_dir`` folder) or the shipped
    table; None when none has it."""
    cached = _META_CACHE.get(key) or _stored_tally(store, key) or _shipped_tally(key)
    if cached is not None:
        _META_CACHE[key] = cached
    return cached


def keep_tally(store: Path | None, key: str, tally: Tally) -> None:
    """Keep a fresh meta count in this process and in ``store``."""
    if len(_META_CACHE) >= _META_CACHE_MAX:
        _META_CACHE.clear()
    _META_CACHE[key] = tally
    _store_tally(store, key, tally)
