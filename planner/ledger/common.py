"""What the parts of :class:`~solforge.planner.ledger.Ledger` share: its limits, token hashing, and the
conversion of database rows into the typed views it returns."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import RowMapping

from solforge.sandbox.api import BuildReport, EvalReport

from .changes import ChangeSignal
from .db import Tx
from .models import AgentView, GpuView, JobView, SubmissionView, parse_progress, ts

__all__ = ["DEFAULT_MAX_ATTEMPTS", "LedgerPart", "hash_token"]

log = logging.getLogger("solforge.planner")
T = TypeVar("T")

DEFAULT_MAX_ATTEMPTS = 3
"""Attempts per job: one run plus two retries after infrastructure faults."""




def hash_token(token: str) -> str:
    """SHA-256 hex of a bearer token.

    Tokens are 256-bit random strings, so a fast hash is enough: there is nothing to brute-force.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _problem_name(problem: str) -> str:
    """The ledger's name for ``EvalRequest.problem``: a catalogue name as is, a folder by its definition."""
    path = Path(problem)
    definition = path / "definition.json"
    if ("/" in problem or "\\" in problem or path.is_dir()) and definition.is_file():
        try:
            name = json.loads(definition.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError):
            name = None
        if isinstance(name, str) and name:
            return name
    return problem


def _agent_view(row: RowMapping) -> AgentView:
    return AgentView(
        name=row["name"],
        created_at=ts(row["created_at"]),  # type: ignore[arg-type]
        last_seen_at=ts(row["last_seen_at"]),
        disabled=bool(row["disabled"]),
        has_token=row["token_hash"] is not None,
    )


def _summary_fields(row: RowMapping) -> dict[str, Any]:
    return {
        "id": row["id"],
        "agent": row["agent"],
        "kind": row["kind"],
        "problem": row["problem"],
        "solution_name": row["solution_name"],
        "solution_hash": row["solution_hash"],
        "status": row["status"],
        "priority": int(row["priority"]),
        "attempts": int(row["attempts"]),
        "max_attempts": int(row["max_attempts"]),
        "created_at": ts(row["created_at"]),
        "started_at": ts(row["started_at"]),
        "finished_at": ts(row["finished_at"]),
        "worker_id": row["worker_id"],
        "gpu_id": row["gpu_id"],
        "cancel_requested": bool(row["cancel_requested"]),
        "progress": parse_progress(row["progress_json"]),
        "error": row["error"],
    }


def _job_view(tx: Tx, row: RowMapping) -> JobView:
    fields = _summary_fields(row)
    if row["status"] == "queued":
        ahead = tx.scalar(
            "queue_position",
            needs_gpu=bool(row["needs_gpu"]),
            priority=int(row["priority"]),
            created_at=float(row["created_at"]),
        )
        fields["position"] = int(ahead or 0)
    raw = row["result_json"]
    if raw:
        try:
            if row["kind"] == "compile":
                fields["build"] = BuildReport.model_validate_json(raw)
            else:
                fields["report"] = EvalReport.model_validate_json(raw)
        except ValueError as exc:  # a report written by another solforge version
            log.warning(
                "job %s: stored report does not parse: %s", row["id"], exc, extra={"action": "get_job"}
            )
    return JobView(**fields)


def _submission_view(row: RowMapping) -> SubmissionView:
    return SubmissionView(
        id=int(row["id"]),
        agent=row["agent"],
        problem=row["problem"],
        solution_name=row["solution_name"],
        solution_hash=row["solution_hash"],
        job_id=row["job_id"],
        score=float(row["score"]),
        speedup=None if row["speedup"] is None else float(row["speedup"]),
        passed=int(row["passed"]),
        total=int(row["total"]),
        hardware=row["hardware"],
        created_at=ts(row["created_at"]),  # type: ignore[arg-type]
    )


def _gpu_view(row: RowMapping) -> GpuView:
    return GpuView(
        id=row["id"],
        host=row["host"],
        device_index=int(row["device_index"]),
        kind=row["kind"],
        name=row["name"],
        uuid=row["uuid"],
        status=row["status"],
        status_reason=row["status_reason"],
        needs_check=bool(row["needs_check"]),
        worker_id=row["worker_id"],
        registered_at=ts(row["registered_at"]),  # type: ignore[arg-type]
        checked_at=ts(row["checked_at"]),
    )


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default method)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class LedgerPart:
    """Base of the Ledger's parts (:mod:`.results`, ...): what :class:`~solforge.planner.ledger.Ledger`
    itself supplies to them."""

    if TYPE_CHECKING:
        changes: ChangeSignal

        def _run(self, fn: Callable[[Tx], T], *, write: bool = True) -> T: ...

        def now(self) -> float: ...
