"""A swarm run's records before and after its planner loop: creating a run and its agents, checking and
claiming one to resume, and leaving a run whose planner died consistent.

Separate from :mod:`.runner`, which is the loop itself: ``solforge swarm status`` and ``stop`` need
:func:`planner_alive` and :func:`cleanup_dead_run` without a planner, and what a run may start or
resume with is checked here, before any process is started.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

from ..errors import LedgerError
from ..ledger import Ledger
from .config import SwarmConfig
from .launchers import check_launcher
from .processes import kill_group, pid_alive
from .store import SwarmRunView, SwarmStore

__all__ = ["SwarmError", "cancel_jobs", "cleanup_dead_run", "create_run", "planner_alive", "reclaim_run"]

STALE_AFTER_S = 60.0
"""A running run whose heartbeat is older than this (plus three ticks) has lost its planner."""


class SwarmError(LedgerError):
    """A swarm run cannot start, resume or stop as asked; the message says why and what to do."""


def planner_alive(run: SwarmRunView, *, tick_s: float = 2.0) -> bool:
    """Whether the run's planner process is still there (same host: its pid; else: a fresh heartbeat)."""
    if not run.live:
        return False
    if run.host == socket.gethostname():
        return pid_alive(run.pid)
    return run.heartbeat_at is not None and run.now - run.heartbeat_at < STALE_AFTER_S + 3 * tick_s


def cleanup_dead_run(ledger: Ledger, run_id: str, reason: str) -> list[str]:
    """Leave a run whose planner died consistent: agents' process groups ended, jobs cancelled, run stopped.

    Returns the ids of jobs still running on some worker (they were asked to cancel).
    """
    store = SwarmStore(ledger)
    run = store.get_run(run_id)
    if run.host == socket.gethostname():
        for agent in store.agents(run_id):
            if agent.pid and pid_alive(agent.pid):
                kill_group(agent.pid, signal.SIGKILL)
    ledger.reclaim_expired()
    still = cancel_jobs(ledger, store, run_id, keep=set())
    store.finalize(run_id, "stopped", reason=reason, note="planner gone")
    return still


def cancel_jobs(ledger: Ledger, store: SwarmStore, run_id: str, *, keep: set[str]) -> list[str]:
    """Cancel the run's agents' open jobs (except ``keep``); returns those still running."""
    running = []
    for job_id, agent, _, _ in store.open_jobs(run_id):
        if job_id in keep:
            continue
        view = ledger.cancel_job(job_id, agent)
        if view.status == "running":
            running.append(job_id)
    return running


def create_run(
    ledger: Ledger, config: SwarmConfig, run_id: str
) -> tuple[SwarmConfig, dict[str, str]]:
    """Record run ``run_id`` and its agents (each a ledger agent with its own bearer token, workspace and
    log); returns the config with its run folder made absolute, and each agent's token.

    Raises SwarmError when the configuration cannot run (see :meth:`.runner.Swarm.start`).
    """
    if ledger.resolved.temporary_dir is not None:
        raise SwarmError(
            "a swarm needs a ledger the MCP server can open too; pass --db sqlite:///path or postgresql://"
        )
    _check_launcher(config)
    run_dir = Path(config.run_dir).resolve()
    config = config.model_copy(update={"run_dir": str(run_dir)})
    store = SwarmStore(ledger)
    store.create_run(run_id, config.model_dump(mode="json"), pid=os.getpid(), host=socket.gethostname())
    tokens: dict[str, str] = {}
    for i in range(config.agents):
        name = f"{config.agent_prefix}-{run_id}-{i:02d}"
        creds = ledger.register_agent(name)
        tokens[name] = creds.token  # type: ignore[union-attr]
        workspace = run_dir / "agents" / name
        workspace.mkdir(parents=True, exist_ok=True)
        store.add_agent(
            run_id, name, i, workspace=str(workspace), log_path=str(run_dir / "logs" / f"{name}.log")
        )
    return config, tokens


def reclaim_run(
    ledger: Ledger, run_id: str, config: SwarmConfig | None
) -> tuple[SwarmConfig, dict[str, str]]:
    """Claim a stopped or crashed run for this process, with new tokens for its agents; returns the
    config it runs with (``config``, else the run's own) and each agent's token.

    Raises SwarmError when it cannot resume (see :meth:`.runner.Swarm.resume`).
    """
    store = SwarmStore(ledger)
    try:
        run = store.get_run(run_id)
    except LedgerError as exc:
        raise SwarmError(str(exc)) from exc
    if planner_alive(run):
        raise SwarmError(
            f"swarm run {run_id} is still running (pid {run.pid} on {run.host}); "
            f"`solforge swarm stop {run_id}` first"
        )
    config = config or SwarmConfig.model_validate(run.config)
    _check_launcher(config)
    limit_s = config.limits.time_s
    if limit_s is not None and run.active_s >= limit_s:
        raise SwarmError(
            f"run {run_id} reached its {limit_s:.0f} s limit ({run.active_s / 60:.1f} active minutes); "
            f"pass --time-limit-minutes M to give it more (M is the whole run's limit, so more than "
            f"{run.active_s / 60:.1f})"
        )
    if run.live:
        cleanup_dead_run(ledger, run_id, "its planner died; resumed")
    store.claim_run(run_id, config.model_dump(mode="json"), pid=os.getpid(), host=socket.gethostname())
    tokens = {}
    for agent in store.agents(run_id):
        tokens[agent.name] = ledger.rotate_token(agent.name).token
        ledger.set_agent_disabled(agent.name, False)
        agent.state, agent.pid, agent.note = "idle", None, None
        store.save_agent(agent)
    return config, tokens


def _check_launcher(config: SwarmConfig) -> None:
    try:
        check_launcher(config.launcher)
    except ValueError as exc:
        raise SwarmError(str(exc)) from None
