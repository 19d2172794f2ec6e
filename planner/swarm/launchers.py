"""Launchers: the command line, environment and files that start one agent on one assignment.

Every agent gets its own workspace folder, its own ledger identity (an agent name and a bearer
token) and its own log file. Its prompt (``prompt.md`` in the workspace) is PROTOCOL.md followed by
its assignment. The token never goes into a file: it is passed in the environment as
``SOLFORGE_TOKEN``, and the MCP configuration files refer to that variable.

claude
    Claude Code headless (``claude -p``), with an MCP configuration of its own
    (``solforge-mcp.json``: the server's HTTP URL, ``Authorization: Bearer ${SOLFORGE_TOKEN}``) used
    alone (``--strict-mcp-config``), the solforge tools and file tools allowed, stream-json output::

        claude -p PROMPT --mcp-config WS/solforge-mcp.json --strict-mcp-config
               --allowedTools mcp__solforge__list_problems ... Read Write Edit
               --permission-mode acceptEdits --output-format stream-json --verbose
               [--max-turns N] [--model M] --append-system-prompt "You are agent ..."

cursor
    Cursor's agent CLI (``cursor-agent -p``; newer installs call it ``agent``: pass ``binary``), with
    ``.cursor/mcp.json`` and ``.cursor/cli.json`` (permissions) written into the workspace, which
    it opens with ``--workspace``::

        cursor-agent -p --force --approve-mcps --trust --workspace WS --output-format stream-json
                     [--model M] PROMPT

command
    Any program. The template is split like a shell line (``shlex``) and each word is filled in
    with Python ``str.format`` placeholders:

    ==============  ============================================================
    {url}           the MCP endpoint, ``http://127.0.0.1:PORT/mcp``
    {token}         the agent's bearer token (prefer $SOLFORGE_TOKEN: argv is visible to ``ps``)
    {problem}       the assigned problem's name
    {workspace}     the agent's workspace folder
    {prompt_file}   ``WS/prompt.md``: PROTOCOL.md plus the assignment
    {agent}         the agent's name
    {index}         the agent's index in the run (0, 1, ...)
    {best_score}    the problem's best score so far ('' when none)
    {target_score}  the score at which the problem counts as done
    {python}        the planner's Python interpreter (this solforge's environment)
    ==============  ============================================================

    The program runs in the agent's workspace; a relative program path is taken from the planner's
    folder.

    The same values are in the environment: SOLFORGE_URL, SOLFORGE_TOKEN, SOLFORGE_PROBLEM,
    SOLFORGE_WORKSPACE, SOLFORGE_PROMPT_FILE, SOLFORGE_AGENT, SOLFORGE_AGENT_INDEX,
    SOLFORGE_BEST_SCORE, SOLFORGE_TARGET_SCORE. For example the scripted agents::

        solforge swarm run --launcher command \\
            --command '{python} -m solforge.planner.swarm.scripted --behaviour good'
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .config import LauncherConfig

__all__ = [
    "MCP_SERVER_NAME",
    "SOLFORGE_TOOLS",
    "AgentLaunch",
    "Assignment",
    "build_launch",
    "build_prompt",
    "check_launcher",
    "protocol_text",
]

MCP_SERVER_NAME = "solforge"
SOLFORGE_TOOLS = (
    "list_problems",
    "read_docs",
    "get_problem",
    "compile_kernel",
    "run_benchmark",
    "profile_kernel",
    "wait_job",
    "cancel_job",
    "get_sol_score",
    "submit_solution",
    "get_leaderboard",
)
"""The server's tools (a test checks this list against solforge.tools.registry)."""
FILE_TOOLS = ("Read", "Write", "Edit", "Glob", "Grep")
"""Claude Code's own tools an agent needs to keep solution files in its workspace."""
TOOL_TIMEOUT_MS = 180_000
"""Claude Code's per-call limit for solforge tools; they answer within about 55 s (job handles)."""
STARTUP_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Assignment:
    """What one agent is asked to do, and how it reaches the server."""

    agent: str
    index: int
    token: str
    url: str
    """The MCP endpoint, ending in /mcp."""
    problem: str
    workspace: Path
    best_score: float | None = None
    target_score: float = 0.9
    previous: tuple[str, ...] = ()
    """Problems this agent worked on before in this run."""


@dataclass(frozen=True)
class AgentLaunch:
    """A ready-to-start agent process."""

    argv: list[str]
    env: dict[str, str]
    """Variables to add to the planner's environment."""
    cwd: Path
    files: list[Path] = field(default_factory=list)
    """Files written into the workspace for it."""


def protocol_text() -> str:
    """PROTOCOL.md (from the repository root beside the package), or a pointer to read_docs."""
    root = Path(__file__).resolve().parents[2]
    for candidate in (root / "PROTOCOL.md", root / "tools" / "docs" / "PROTOCOL.md"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    return "# The solforge protocol\n\nCall read_docs(topic='protocol') first and follow it.\n"


def build_prompt(a: Assignment, protocol: str | None = None) -> str:
    """The agent's prompt: the protocol, then its assignment."""
    best = (
        f"The best accepted score so far is {a.best_score:.3f}; beat it."
        if a.best_score is not None
        else "Nobody has an accepted submission for it yet: a correct solution is the first goal."
    )
    before = f" You worked on {', '.join(a.previous)} before in this run." if a.previous else ""
    return (
        f"{protocol if protocol is not None else protocol_text()}\n\n"
        "# Your assignment\n\n"
        f"You are agent `{a.agent}` of a solforge swarm. Work on problem **{a.problem}** only, through the "
        f"`{MCP_SERVER_NAME}` MCP tools.{before}\n\n"
        f"- {best} The problem counts as done at score {a.target_score:.2f} (near the speed of light).\n"
        f"- Keep your files in your workspace, `{a.workspace}`.\n"
        "- Follow the workflow of section 1: get_problem, write solution.json, compile_kernel, run_benchmark, "
        "get_sol_score, iterate, then submit_solution with your best version.\n"
        "- The planner may stop you at any time; it then submits your best benchmarked solution for you.\n"
        "- When you have submitted your best version and have no better idea, say so and stop.\n"
    )


def _mcp_entry_claude(url: str) -> dict[str, object]:
    return {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer ${SOLFORGE_TOKEN}"},
        "timeout": TOOL_TIMEOUT_MS,
    }


def _write_json(path: Path, data: Mapping[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def _env(a: Assignment, prompt_file: Path) -> dict[str, str]:
    return {
        "SOLFORGE_URL": a.url,
        "SOLFORGE_TOKEN": a.token,
        "SOLFORGE_PROBLEM": a.problem,
        "SOLFORGE_WORKSPACE": str(a.workspace),
        "SOLFORGE_PROMPT_FILE": str(prompt_file),
        "SOLFORGE_AGENT": a.agent,
        "SOLFORGE_AGENT_INDEX": str(a.index),
        "SOLFORGE_BEST_SCORE": "" if a.best_score is None else f"{a.best_score:.6f}",
        "SOLFORGE_TARGET_SCORE": f"{a.target_score:.6f}",
    }


def _claude(a: Assignment, cfg: LauncherConfig, prompt: str, prompt_file: Path) -> AgentLaunch:
    mcp_file = _write_json(
        a.workspace / "solforge-mcp.json", {"mcpServers": {MCP_SERVER_NAME: _mcp_entry_claude(a.url)}}
    )
    allowed = [f"mcp__{MCP_SERVER_NAME}__{tool}" for tool in SOLFORGE_TOOLS] + list(FILE_TOOLS)
    argv = [
        cfg.binary or "claude",
        "-p",
        prompt,
        "--mcp-config",
        str(mcp_file),
        "--strict-mcp-config",
        "--allowedTools",
        *allowed,
        "--permission-mode",
        cfg.permission_mode,
        "--output-format",
        "stream-json",
        "--verbose",  # stream-json in print mode requires it
    ]
    if cfg.max_turns:
        argv += ["--max-turns", str(cfg.max_turns)]
    if cfg.model:
        argv += ["--model", cfg.model]
    argv += [
        "--append-system-prompt",
        f"You are solforge swarm agent {a.agent}, assigned problem {a.problem}. Use only the solforge MCP tools "
        "for problems, builds, benchmarks and submissions.",
        *cfg.extra_args,
    ]
    env = {
        **_env(a, prompt_file),
        "MCP_TOOL_TIMEOUT": str(TOOL_TIMEOUT_MS),
        "MCP_TIMEOUT": str(STARTUP_TIMEOUT_MS),
    }
    return AgentLaunch(argv, env, a.workspace, [prompt_file, mcp_file])


def _cursor(a: Assignment, cfg: LauncherConfig, prompt: str, prompt_file: Path) -> AgentLaunch:
    mcp_file = _write_json(
        a.workspace / ".cursor" / "mcp.json",
        {
            "mcpServers": {
                MCP_SERVER_NAME: {"url": a.url, "headers": {"Authorization": "Bearer ${env:SOLFORGE_TOKEN}"}}
            }
        },
    )
    cli_file = _write_json(
        a.workspace / ".cursor" / "cli.json",
        {"permissions": {"allow": [f"Mcp({MCP_SERVER_NAME}, *)", "Read(**)", "Write(**)"], "deny": []}},
    )
    argv = [
        cfg.binary or "cursor-agent",
        "-p",
        "--force",
        "--approve-mcps",
        "--trust",
        "--workspace",
        str(a.workspace),
        "--output-format",
        "stream-json",
    ]
    if cfg.model:
        argv += ["--model", cfg.model]
    argv += [*cfg.extra_args, prompt]
    return AgentLaunch(argv, _env(a, prompt_file), a.workspace, [prompt_file, mcp_file, cli_file])


def _command(a: Assignment, cfg: LauncherConfig, prompt_file: Path) -> AgentLaunch:
    values = {
        "url": a.url,
        "token": a.token,
        "problem": a.problem,
        "workspace": str(a.workspace),
        "prompt_file": str(prompt_file),
        "agent": a.agent,
        "index": str(a.index),
        "best_score": "" if a.best_score is None else f"{a.best_score:.6f}",
        "target_score": f"{a.target_score:.6f}",
        "python": sys.executable,
    }
    try:
        argv = [word.format(**values) for word in shlex.split(cfg.command or "")]
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"command template {cfg.command!r}: {exc!r}; placeholders are "
            + ", ".join("{" + k + "}" for k in values)
            + " (double braces {{ }} for literal ones)"
        ) from exc
    if not argv:
        raise ValueError("the command template is empty")
    if "/" in argv[0] and not Path(argv[0]).is_absolute() and Path(argv[0]).exists():
        argv[0] = str(
            Path(argv[0]).absolute()
        )  # it runs in its workspace (absolute(): a venv's symlink must stay)
    return AgentLaunch([*argv, *cfg.extra_args], _env(a, prompt_file), a.workspace, [prompt_file])


_INSTALL_HINTS = {
    "claude": "install Claude Code",
    "cursor": "install Cursor's agent CLI (newer installs call it `agent`)",
}
_DEFAULT_BINARIES = {"claude": "claude", "cursor": "cursor-agent"}


def check_launcher(cfg: LauncherConfig) -> None:
    """Fail before a run starts when the claude or cursor executable cannot be found.

    Otherwise every agent would crash at once, be restarted and fail, and the run would idle until its
    limit with the reason only in the agents' logs.

    Raises
    ------
    ValueError
        The executable is not on PATH (or not at the given path); the message says what to do.
    """
    default = _DEFAULT_BINARIES.get(cfg.kind)
    if default is None:
        return  # command: the template's program is the user's, and may need its placeholders filled
    binary = cfg.binary or default
    if shutil.which(binary) is None:
        where = "not found on PATH" if os.sep not in binary else "not found or not executable"
        raise ValueError(
            f"--launcher {cfg.kind}: {binary} {where}; {_INSTALL_HINTS[cfg.kind]} or pass --binary PATH"
        )


def build_launch(a: Assignment, cfg: LauncherConfig, *, protocol: str | None = None) -> AgentLaunch:
    """Write the agent's files into its workspace and return how to start it.

    Raises
    ------
    ValueError
        A command template that does not expand (the message lists the placeholders).
    """
    a.workspace.mkdir(parents=True, exist_ok=True)
    prompt = build_prompt(a, protocol)
    prompt_file = a.workspace / "prompt.md"
    prompt_file.write_text(prompt, encoding="utf-8")
    if cfg.kind == "claude":
        return _claude(a, cfg, prompt, prompt_file)
    if cfg.kind == "cursor":
        return _cursor(a, cfg, prompt, prompt_file)
    return _command(a, cfg, prompt_file)


def launch_env(launch: AgentLaunch, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment of the agent process: ``base`` (default: this process's) plus the launch's."""
    env = dict(os.environ if base is None else base)
    for key in ("SOLFORGE_TOKENS",):  # the planner's own secrets are not the agent's business
        env.pop(key, None)
    env.update(launch.env)
    return env
