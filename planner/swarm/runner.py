"""The swarm planner: starts the MCP server, the workers and the agents, then plans and supervises.

One :class:`Swarm` object drives one run from one process::

    swarm = Swarm.start(ledger, config)        # or Swarm.resume(ledger, run_id)
    exit_code = swarm.run()                     # until stopped, a limit, or every problem done

Every ``tick_s`` the planner

1. stamps the run's heartbeat and reads the stop flag (``solforge swarm stop`` sets it);
2. checks the limits (active time, slot-hours, jobs);
3. supervises the agents: an agent that exited 0 finished its assignment; one that exited non-zero
   (a crash), or that was silent for ``silent_s`` (no MCP call, no log output), is restarted on the
   same assignment after an exponential back-off, up to ``max_restarts`` crashes in a row;
4. asks the policy (:func:`solforge.planner.swarm.policy.decide`) what to do and does it, writing
   every decision to the ledger's event log with its reason. An agent that is moved or stopped
   first has its best benchmarked solution submitted for it, when that beats its last submission.

Stopping (SIGINT, SIGTERM, the stop flag) submits the agents' best solutions, ends every agent's
process group, cancels the run's other jobs, waits (bounded) for those submissions, stops the
workers (their leases are released and their jobs requeued, then cancelled), stops the server, and
marks the run, its agents and their assignments stopped, in that order.

This module is that loop and the state it keeps in memory; a run's records before and after it
(creating, resuming, cleaning up a dead run) are :mod:`.runs`, the MCP server's process
:mod:`.mcp_server`, and the best scores and the submissions made on agents' behalf :mod:`.submissions`.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LedgerError, LedgerIntegrityError
from ..ledger import Ledger
from .config import SwarmConfig
from .facts import JobOutcome, OutcomeCache, agent_facts, problem_facts
from .launchers import Assignment, build_launch, launch_env
from .mcp_server import HEALTH_WAIT_S, start_server, wait_healthy
from .policy import Assign, Hold, Release, Snapshot, decide, is_done
from .processes import ChildProcess, last_tool_call
from .runs import cancel_jobs, create_run, reclaim_run
from .store import AssignmentView, SwarmAgentView, SwarmStore
from .submissions import best_scores, submit_best, wait_for_submissions

__all__ = ["Swarm"]

log = logging.getLogger("solforge.planner.swarm")


@dataclass
class _Agent:
    """The planner's in-memory side of one agent."""

    view: SwarmAgentView
    token: str
    proc: ChildProcess | None = None
    assignment: AssignmentView | None = None
    crashes: int = 0
    """Consecutive crashes on the current assignment."""
    restart_at: float = 0.0
    """Monotonic time of the next restart (state backoff)."""
    held_reason: str | None = None
    previous: list[str] = field(default_factory=list)


class Swarm:
    """One swarm run driven by this process (see the module docstring)."""

    def __init__(self, ledger: Ledger, config: SwarmConfig, run_id: str, tokens: dict[str, str]) -> None:
        self.ledger = ledger
        self.config = config
        self.run_id = run_id
        self.store = SwarmStore(ledger)
        self.run_dir = Path(config.run_dir)
        self.outcomes = OutcomeCache(self.store, run_id)
        self.agents: dict[str, _Agent] = {
            a.name: _Agent(a, tokens[a.name]) for a in self.store.agents(run_id)
        }
        self.server: ChildProcess | None = None
        self.url = ""
        self.worker: Any = None
        self._stop_reason: str | None = None
        self._stop_status = "stopped"
        self._hurry = threading.Event()
        self._active_base = self.store.get_run(run_id).active_s
        self._started_mono = time.monotonic()
        self._on_behalf: set[str] = set()
        self.view_callback: Any = None
        """Called after each tick (the live terminal view)."""

    # -- creation ----------------------------------------------------------------------------------

    @classmethod
    def start(cls, ledger: Ledger, config: SwarmConfig, *, run_id: str | None = None) -> Swarm:
        """Record a new run and its agents (each a ledger agent with its own bearer token).

        Raises
        ------
        SwarmError
            The configuration cannot run (a throwaway ledger the server cannot share, an agent
            executable that is not installed).
        """
        run_id = run_id or uuid.uuid4().hex[:12]
        config, tokens = create_run(ledger, config, run_id)
        return cls(ledger, config, run_id, tokens)

    @classmethod
    def resume(cls, ledger: Ledger, run_id: str, *, config: SwarmConfig | None = None) -> Swarm:
        """Continue a stopped or crashed run with the same agent identities (new tokens for them).

        Raises
        ------
        SwarmError
            The run's planner is still alive (stop it first), the run does not exist, it already used
            its whole time limit (``config`` may raise it), or its agent executable is missing.
        """
        config, tokens = reclaim_run(ledger, run_id, config)
        return cls(ledger, config, run_id, tokens)

    # -- the loop ----------------------------------------------------------------------------------

    def request_stop(self, reason: str, status: str = "stopped", *, signalled: bool = False) -> None:
        """Stop at the next tick. A signal while stopping already (a second Ctrl-C) stops waiting for
        the submissions made on agents' behalf."""
        if self._stop_reason is not None:
            if signalled:
                self._hurry.set()
            return
        self._stop_reason = reason
        self._stop_status = status

    def _install_signals(self) -> dict[int, Any]:
        previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return previous
        for signum in (signal.SIGINT, signal.SIGTERM):
            name = signal.Signals(signum).name
            previous[signum] = signal.signal(
                signum, lambda *_, n=name: self.request_stop(f"{n} received", signalled=True)
            )
        return previous

    def run(self) -> int:
        """Run until stopped, a limit, or every problem is done.

        Returns
        -------
        int
            0 when the run stopped or finished, 1 when it failed (every agent failed, a planner error).
        """
        previous = self._install_signals()
        status = "failed"
        try:
            self._start_server()
            self._start_worker()
            while self._stop_reason is None:
                started = time.monotonic()
                self.tick()
                if self.view_callback is not None:
                    self.view_callback(self)
                time.sleep(max(0.0, self.config.tick_s - (time.monotonic() - started)))
            status = self._stop_status
            return 1 if status == "failed" else 0
        except Exception as exc:
            log.exception("swarm %s failed", self.run_id)
            self._stop_reason = self._stop_reason or f"planner error: {type(exc).__name__}: {exc}"
            return 1
        finally:
            self._shutdown(status, self._requested_reason() or self._stop_reason or "stopped")
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _requested_reason(self) -> str | None:
        """The reason `solforge swarm stop` gave, when that is what stopped us (it also sends SIGTERM)."""
        try:
            run = self.store.get_run(self.run_id)
        except LedgerError:
            return None
        return f"stop requested: {run.stop_reason or 'swarm stop'}" if run.stop_requested else None

    @property
    def active_s(self) -> float:
        return self._active_base + (time.monotonic() - self._started_mono)

    def tick(self) -> None:
        """One planning and supervision round (the loop calls it every ``tick_s``)."""
        stop, why = self.store.heartbeat(self.run_id, self.active_s, server_url=self.url or None)
        if stop:
            self.request_stop(f"stop requested: {why or 'swarm stop'}")
            return
        if self._limit_reached():
            return
        if self.server is not None and self.server.poll() is not None:
            self.store.log_event("swarm.server_restarted", run_id=self.run_id, exit_code=self.server.poll())
            self._start_server()
        now = self.ledger.now()
        views = {v.name: v for v in self.store.agents(self.run_id)}
        outcomes = self.outcomes.refresh()
        for agent in self.agents.values():
            agent.view.last_seen_at = views[agent.view.name].last_seen_at
            self._supervise(agent, now, outcomes)
        self._plan(now, outcomes)

    def _limit_reached(self) -> bool:
        limits = self.config.limits
        if limits.time_s is not None and self.active_s >= limits.time_s:
            self.request_stop(f"time limit of {limits.time_s:.0f} s reached", "finished")
            return True
        if limits.gpu_hours is not None or limits.max_jobs is not None:
            slot_s, jobs = self.store.usage(self.run_id)
            if limits.gpu_hours is not None and slot_s / 3600.0 >= limits.gpu_hours:
                self.request_stop(f"GPU budget of {limits.gpu_hours} slot-hours reached", "finished")
                return True
            if limits.max_jobs is not None and jobs >= limits.max_jobs:
                self.request_stop(f"job budget of {limits.max_jobs} jobs reached", "finished")
                return True
        return False

    # -- server and workers ------------------------------------------------------------------------

    def _start_server(self) -> None:
        """Start the MCP server (a restart keeps the address the agents know) and wait until it answers."""
        self.server, base = start_server(
            self.ledger, self.config, self.run_id, url=self.url if self.server is not None else ""
        )
        wait_healthy(f"{base}/health", self.server, HEALTH_WAIT_S)
        self.url = f"{base}/mcp"
        self.store.heartbeat(self.run_id, self.active_s, server_url=self.url)
        log.info("swarm %s: MCP server at %s", self.run_id, self.url)

    def _start_worker(self) -> None:
        if self.config.workers != "local":
            return
        from ..workers.worker import Worker

        self.worker = Worker(
            self.ledger,
            gpus=self.config.gpus,
            cpu_slots=self.config.cpu_slots,
            compile_slots=self.config.compile_slots,
        )
        self.worker.start()

    # -- agents ------------------------------------------------------------------------------------

    def _supervise(self, agent: _Agent, now: float, outcomes: list[JobOutcome]) -> None:
        sup = self.config.supervision
        view = agent.view
        if view.state == "backoff" and time.monotonic() >= agent.restart_at and agent.assignment is not None:
            view.restarts += 1
            self._launch(agent, event_kind="swarm.agent_restarted", crashes=agent.crashes)
            return
        proc = agent.proc
        if proc is None or view.state != "working":
            return
        code = proc.poll()
        phase = last_tool_call(proc.log_path)
        seen = (
            view.last_seen_at
            if view.last_seen_at is not None and view.last_seen_at >= (view.started_at or 0)
            else None
        )
        activity_wall = proc.log_mtime()
        if seen is not None:
            activity_wall = max(activity_wall, time.time() - max(0.0, now - seen))
        changed = phase != view.phase or abs((view.activity_at or 0) - activity_wall) > 5
        view.phase, view.activity_at = phase, activity_wall
        if code == 0:
            proc.stop(sup.kill_grace_s)
            agent.proc, agent.crashes = None, 0
            problem = view.problem
            self._end_assignment(agent, "finished", "the agent exited 0: it ended its assignment")
            view.state, view.pid = "idle", None
            self.store.save_agent(view, event_kind="swarm.agent_exited", exit_code=0, problem=problem)
            return
        if code is not None:
            proc.stop(sup.kill_grace_s)
            self._crashed(agent, f"exited with code {code}")
            return
        if time.time() - activity_wall > sup.silent_s:
            proc.stop(sup.kill_grace_s)
            self._crashed(
                agent, f"silent for {time.time() - activity_wall:.0f} s (silent_s {sup.silent_s:.0f})"
            )
            return
        if time.monotonic() - proc.started_mono > self.config.launcher.agent_timeout_s:
            self._submit_best(agent, "agent timeout")
            proc.stop(sup.kill_grace_s)
            agent.proc = None
            self._end_assignment(
                agent, "timeout", f"ran past agent_timeout_s {self.config.launcher.agent_timeout_s:.0f}"
            )
            view.state, view.pid = "idle", None
            self.store.save_agent(view)
            return
        if changed:
            self.store.save_agent(view)

    def _crashed(self, agent: _Agent, why: str) -> None:
        sup = self.config.supervision
        view = agent.view
        agent.proc = None
        agent.crashes += 1
        view.pid = None
        if agent.crashes > sup.max_restarts:
            self._submit_best(agent, "agent failed")
            self._end_assignment(agent, "crashed", why)
            view.state, view.note = "failed", f"{why}; {agent.crashes} crashes in a row"
            self.store.save_agent(
                view, event_kind="swarm.agent_failed", reason=view.note, problem=view.problem
            )
            return
        delay = min(sup.backoff_max_s, sup.backoff_s * 2 ** (agent.crashes - 1))
        agent.restart_at = time.monotonic() + delay
        view.state, view.note = "backoff", f"{why}; restart in {delay:.0f} s"
        self.store.save_agent(
            view, event_kind="swarm.agent_crashed", reason=why, restart_in_s=delay, crashes=agent.crashes
        )

    def _launch(self, agent: _Agent, *, event_kind: str, **detail: Any) -> None:
        assert agent.assignment is not None
        best = best_scores(self.ledger, self.config.problems).get(agent.assignment.problem)
        spec = Assignment(
            agent=agent.view.name,
            index=agent.view.idx,
            token=agent.token,
            url=self.url,
            problem=agent.assignment.problem,
            workspace=Path(agent.view.workspace),
            best_score=best,
            target_score=self.config.policy.solved_score,
            previous=tuple(agent.previous),
        )
        view = agent.view
        try:
            launch = build_launch(spec, self.config.launcher)
            proc = ChildProcess(launch.argv, launch_env(launch), launch.cwd, Path(view.log_path))
            pid = proc.start(f"{view.name} on {spec.problem} ({self.config.launcher.kind})")
        except (OSError, ValueError) as exc:
            # on the planner's log too: the agent's own log is not where a user looks first
            log.error(
                "swarm %s: agent %s cannot start: %s (log %s)", self.run_id, view.name, exc, view.log_path
            )
            self._crashed(agent, f"cannot start: {exc}")
            return
        agent.proc = proc
        view.state, view.pid, view.note, view.phase = "working", pid, None, None
        view.started_at = self.ledger.now()
        view.activity_at = proc.started_wall
        view.problem = spec.problem
        self.store.save_agent(view, event_kind=event_kind, pid=pid, problem=spec.problem, **detail)

    def _end_assignment(self, agent: _Agent, end_reason: str, detail: str) -> None:
        if agent.assignment is None:
            return
        self.store.close_assignment(self.run_id, agent.view.name, end_reason, detail=detail)
        agent.previous.append(agent.assignment.problem)
        agent.assignment = None
        agent.view.problem = None

    # -- planning ----------------------------------------------------------------------------------

    def _plan(self, now: float, outcomes: list[JobOutcome]) -> None:
        assignments = self.store.assignments(self.run_id)
        best = best_scores(self.ledger, self.config.problems)
        queued, slots = self.store.slot_queue()
        snapshot = Snapshot(
            problems=tuple(problem_facts(self.config.problems, outcomes, assignments, best, now=now)),
            agents=tuple(
                agent_facts(
                    a.view.name,
                    a.view.state,
                    a.assignment,
                    outcomes,
                    assignments,
                    self.config.policy,
                    now=now,
                )
                for a in self.agents.values()
            ),
            queued_slot_jobs=queued,
            slots=slots,
        )
        for decision in decide(snapshot, self.config.policy):
            agent = self.agents[decision.agent]
            if isinstance(decision, Release):
                self._submit_best(agent, f"moved off: {decision.why}")
                if agent.proc is not None:
                    agent.proc.stop(self.config.supervision.kill_grace_s)
                    agent.proc = None
                self._end_assignment(agent, decision.why, decision.reason)
                agent.crashes = 0
                agent.view.state, agent.view.pid = "idle", None
                self.store.save_agent(agent.view)
            elif isinstance(decision, Assign):
                try:
                    agent.assignment = self.store.open_assignment(
                        self.run_id,
                        agent.view.name,
                        decision.problem,
                        share=decision.share,
                        reason=decision.reason,
                        value=decision.value,
                    )
                except LedgerIntegrityError as exc:  # the database kept the invariant; say so and go on
                    self.store.log_event(
                        "swarm.assign_refused",
                        agent=agent.view.name,
                        problem=decision.problem,
                        reason=str(exc),
                    )
                    continue
                agent.held_reason = None
                agent.crashes = 0
                self._launch(agent, event_kind="swarm.agent_started", reason=decision.reason)
            elif isinstance(decision, Hold) and agent.held_reason != decision.reason:
                agent.held_reason = decision.reason
                agent.view.state, agent.view.note = "held", decision.reason
                self.store.save_agent(agent.view, event_kind="swarm.held", reason=decision.reason)
        if all(is_done(p, self.config.policy) for p in snapshot.problems) and not any(
            a.view.state in ("working", "backoff") for a in self.agents.values()
        ):
            self.request_stop("every problem is done", "finished")
        elif all(a.view.state == "failed" for a in self.agents.values()):
            self.request_stop("every agent failed", "failed")

    # -- submissions on an agent's behalf ----------------------------------------------------------

    def _submit_best(self, agent: _Agent, why: str) -> None:
        """Submit the agent's best benchmarked solution of its problem if it beats its last submission."""
        if agent.assignment is not None:
            submit_best(
                self.ledger,
                self.store,
                self.outcomes,
                self._on_behalf,
                run_id=self.run_id,
                agent=agent.view.name,
                problem=agent.assignment.problem,
                why=why,
            )

    # -- stopping ----------------------------------------------------------------------------------

    def _shutdown(self, status: str, reason: str) -> None:
        log.info("swarm %s stopping: %s", self.run_id, reason)
        try:
            self.store.set_status(self.run_id, "stopping", reason=reason)
        except LedgerError as exc:
            log.error("cannot mark swarm %s stopping: %s", self.run_id, exc)
        grace = self.config.supervision.kill_grace_s
        for agent in self.agents.values():
            if agent.view.state in ("working", "backoff"):
                self._submit_best(agent, f"run stopping: {reason}")
            if agent.proc is not None:
                agent.proc.stop(grace)
                agent.proc = None
        cancel_jobs(self.ledger, self.store, self.run_id, keep=self._on_behalf)
        wait_for_submissions(self.store, self.run_id, self._on_behalf, self.config.submit_wait_s, self._hurry)
        if self.worker is not None:
            try:
                self.worker.stop(timeout_s=60)
            except Exception as exc:
                log.error("the swarm's worker did not stop cleanly: %s", exc)
            self.worker = None
        running = cancel_jobs(self.ledger, self.store, self.run_id, keep=set())
        if running:
            time.sleep(min(10.0, self.config.tick_s * 3))
            running = cancel_jobs(self.ledger, self.store, self.run_id, keep=set())
        if self.server is not None:
            self.server.stop(grace)
            self.server = None
        for agent in self.agents.values():
            if agent.view.state != "failed":
                agent.view.state, agent.view.pid = "stopped", None
        note = f"{len(running)} jobs still running on outside workers: {running[:5]}" if running else None
        self.store.finalize(self.run_id, status, reason=reason, note=note)
        log.info("swarm %s %s: %s", self.run_id, status, reason)
