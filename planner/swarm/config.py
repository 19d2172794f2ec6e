"""A swarm run's configuration: what ``solforge swarm run`` was asked, stored with the run for resume."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .policy import PolicyConfig

__all__ = ["LauncherConfig", "Limits", "ProblemFilter", "SupervisionConfig", "SwarmConfig"]


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class ProblemFilter(_Model):
    """Which problems a run works on; every given filter must match (names alone select exactly)."""

    names: list[str] = Field(default_factory=list)
    """Exact problem names."""
    categories: list[str] = Field(default_factory=list)
    """llm, diffusion, vision, audio, video, multimodal."""
    models: list[str] = Field(default_factory=list)
    """Substrings of the source model (hf_id), case-insensitive."""
    op_types: list[str] = Field(default_factory=list)
    problem_dirs: list[str] = Field(default_factory=list)
    """Folders of problem folders searched before the bundled catalogue (also given to the server)."""
    only_problem_dirs: bool = False
    """Leave the bundled catalogue out."""


class Limits(_Model):
    """When a run ends on its own (None: no limit). The run also ends when every problem is done."""

    time_s: float | None = Field(default=None, gt=0)
    """Active seconds (over every planner process of the run, so a resumed run keeps counting)."""
    gpu_hours: float | None = Field(default=None, gt=0)
    """Slot-hours under lease by the run's jobs."""
    max_jobs: int | None = Field(default=None, gt=0)
    """Benchmark and submit jobs queued by the run's agents."""


class LauncherConfig(_Model):
    """How agents are started (see :mod:`solforge.planner.swarm.launchers`)."""

    kind: Literal["claude", "cursor", "command"]
    command: str | None = None
    """For ``command``: the command-line template ({url} {token} {problem} {workspace} {prompt_file} ...)."""
    binary: str | None = None
    """The claude or cursor-agent executable (default: ``claude``, ``cursor-agent``)."""
    model: str | None = None
    max_turns: int | None = Field(default=None, gt=0)
    """claude: --max-turns."""
    permission_mode: str = "acceptEdits"
    """claude: --permission-mode."""
    extra_args: list[str] = Field(default_factory=list)
    """Appended to the agent's command line."""
    agent_timeout_s: float = Field(default=3600.0, gt=0)
    """An agent process running this long on one assignment is stopped and the assignment ends."""

    @model_validator(mode="after")
    def _validate_command(self) -> LauncherConfig:
        if self.kind == "command" and not (self.command and self.command.strip()):
            raise ValueError("the command launcher needs a command template (--command '...')")
        return self


class SupervisionConfig(_Model):
    """How agent processes are watched."""

    silent_s: float = Field(default=900.0, gt=0)
    """An agent with no MCP call and no log output for this long is restarted."""
    backoff_s: float = Field(default=5.0, ge=0)
    """First restart delay after a crash; doubles with each consecutive crash."""
    backoff_max_s: float = Field(default=300.0, ge=0)
    max_restarts: int = Field(default=5, ge=0)
    """Consecutive crashes on one assignment before the agent is marked failed."""
    kill_grace_s: float = Field(default=10.0, ge=0)
    """Between SIGTERM and SIGKILL of an agent's process group."""


class SwarmConfig(_Model):
    """Everything a run needs; stored in the ledger with the run."""

    problems: list[str]
    """The problem names the run works on (resolved from the filter at start)."""
    problem_refs: dict[str, str] = Field(default_factory=dict)
    """What a job request names for each problem: the catalogue name, or the folder's path."""
    problem_filter: ProblemFilter = Field(default_factory=ProblemFilter)
    agents: int = Field(ge=1, le=1024)
    launcher: LauncherConfig
    limits: Limits = Field(default_factory=Limits)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    supervision: SupervisionConfig = Field(default_factory=SupervisionConfig)
    db: str | None = None
    """The ledger URL (None: the default SQLite file)."""
    http: str = "127.0.0.1:0"
    """Where the MCP server listens (port 0: a free port)."""
    run_dir: str
    """The run's folder: agents' workspaces, logs, the server's log."""
    workers: Literal["local", "none"] = "local"
    """local: a worker in the planner's process; none: jobs wait for `solforge worker` processes."""
    gpus: list[int] | None = None
    cpu_slots: int | None = None
    compile_slots: int | None = None
    tick_s: float = Field(default=2.0, gt=0)
    """How often the planner looks at the ledger and its agents."""
    submit_wait_s: float = Field(default=300.0, ge=0)
    """How long stopping waits for the submissions it makes on agents' behalf."""
    agent_prefix: str = "swarm"
    """Agents are named ``<prefix>-<run>-<index>``."""
