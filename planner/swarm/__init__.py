"""solforge.planner.swarm: run many agents over the ledger, plan their work, supervise them.

``solforge swarm run`` (server/cli_swarm.py) builds a :class:`SwarmConfig` and hands it to
:class:`Swarm`, which starts the MCP server over streamable HTTP, a worker, and one process per
agent, each with its own ledger identity, bearer token, workspace and log.

==================  ==============================================================================
config              SwarmConfig and its parts: problem filter, launcher, limits, supervision
policy              who works on what: pure functions over a Snapshot of ledger facts (documented)
facts               from ledger rows to the policy's Snapshot
store               the swarm's tables in the ledger (runs, agents, assignments, stop requests)
launchers           claude, cursor and command: command lines, MCP config files, prompts
processes           agent and server processes in their own process groups
runner              Swarm: the loop that plans, supervises, stops and resumes
runs                a run's records: creating, checking and claiming one to resume, cleaning up
mcp_server          the MCP server process the run starts for its agents
submissions         the best score per problem, submissions made on an agent's behalf
view                the live terminal view (rich)
scripted            scripted MCP agents (good, bad, improving, cheating, crash, silent)
==================  ==============================================================================
"""

from __future__ import annotations

from .config import LauncherConfig, Limits, ProblemFilter, SupervisionConfig, SwarmConfig
from .policy import PolicyConfig, Snapshot, decide
from .runner import Swarm
from .runs import SwarmError, cleanup_dead_run, planner_alive
from .store import SwarmStore

__all__ = [
    "LauncherConfig",
    "Limits",
    "PolicyConfig",
    "ProblemFilter",
    "Snapshot",
    "SupervisionConfig",
    "Swarm",
    "SwarmConfig",
    "SwarmError",
    "SwarmStore",
    "cleanup_dead_run",
    "decide",
    "planner_alive",
]
