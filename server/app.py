"""The solforge MCP server: build it, and run it on stdio or streamable HTTP.

``create_server`` assembles an :class:`MCPServer` from the tools in :mod:`solforge.tools`, the
resources and the prompts. ``run_server`` is what ``solforge serve`` calls.

Start-up stays fast (the first ``tools/list`` answers in about a second): torch, triton and CUTLASS
are never imported on this path, and the ledger (SQLAlchemy, migrations) opens in the background
while the first requests are already being served.

In stdio mode nothing but protocol goes to stdout: logs go to stderr.
"""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from mcp.server import MCPServer

from solforge.problems import config
from solforge.problems.config import agent_name_error
from solforge.tools.base import ToolServices, ToolSettings
from solforge.tools.registry import ToolSpec, all_tools

from .adapter import AgentResolver, build_tools, default_agent_resolver
from .auth import SolforgeTokenVerifier, is_loopback
from .ledger_host import LedgerHost
from .resources import INSTRUCTIONS, register_prompts, register_resources

log = logging.getLogger("solforge.server")

DEFAULT_AGENT = "local"
"""The identity of a stdio caller that did not pass --agent."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("solforge")
    except Exception:  # not installed (a source checkout on sys.path)
        return "0"


def configure_logging(level: str | None = None) -> None:
    """Log to stderr, once (unless the caller, such as the command line, configured logging already).

    stdout belongs to the protocol in stdio mode. ``$SOLFORGE_LOG_LEVEL`` overrides the level.
    """
    root = logging.getLogger()
    override = level or config.log_level()
    if root.handlers:
        if override:
            root.setLevel(override)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(override or "INFO")


def create_server(
    services: ToolServices,
    *,
    agent: str = DEFAULT_AGENT,
    resolve_agent: AgentResolver | None = None,
    tools: list[ToolSpec] | None = None,
    host: LedgerHost | None = None,
    token_verifier: SolforgeTokenVerifier | None = None,
    public_url: str | None = None,
) -> MCPServer:
    """Assemble the MCP server.

    Parameters
    ----------
    services
        Settings, problem index, docs and ledger shared by the tools.
    agent
        The caller's identity when no bearer token names one (stdio, in-memory, open HTTP).
    resolve_agent
        Override of how the caller's identity is found (tests).
    tools
        The tools to serve; default every tool in :func:`solforge.tools.registry.all_tools`.
    host
        The ledger's host, started and stopped with the server (opens the ledger, runs workers).
    token_verifier
        Bearer-token verifier; required for HTTP beyond loopback.
    public_url
        Base URL of the HTTP server (``http://host:port``); required with a token verifier.
    """
    configure_logging()
    resolver = resolve_agent or default_agent_resolver(agent)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        if host is None:
            yield {}
            return
        async with host.running():
            yield {}

    auth_kwargs: dict[str, Any] = {}
    if token_verifier is not None:
        from mcp.server.auth.settings import AuthSettings
        from pydantic import AnyHttpUrl

        from .auth import SCOPE

        base = (public_url or "http://127.0.0.1").rstrip("/")
        auth_kwargs = {
            "token_verifier": token_verifier,
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(base),
                resource_server_url=AnyHttpUrl(base + "/mcp"),
                required_scopes=[SCOPE],
                # The tokens are this server's own (SOLFORGE_TOKENS / --token), known only to its
                # verifier, which reports no RFC 8707 resource: True would refuse every one of them.
                validate_token_resource=False,
            ),
        }
    mcp: MCPServer = MCPServer(
        "solforge",
        title="solforge",
        description="Optimise GPU kernels for real problems from production models (SOL-ExecBench compatible).",
        instructions=INSTRUCTIONS,
        version=_version(),
        tools=build_tools(tools if tools is not None else all_tools(), services, resolver),
        lifespan=lifespan,
        **auth_kwargs,
    )
    register_resources(mcp, services)
    register_prompts(mcp, services)

    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    @mcp.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok", "server": "solforge", "version": _version()})

    return mcp


def parse_http(spec: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000``, ``:8000`` for 127.0.0.1) -> (host, port).

    Raises
    ------
    ValueError
        With the expected form, when ``spec`` is not one.
    """
    spec = spec.strip()
    if spec.startswith("["):
        host, _, rest = spec[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, sep, port_text = spec.rpartition(":")
        if not sep:
            host, port_text = spec, ""
    host = host or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--http {spec!r}: expected HOST:PORT, for example 127.0.0.1:8765") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--http {spec!r}: port {port} is not in 0..65535")
    return host, port


def _check_agent(agent: str) -> str:
    problem = agent_name_error(agent)
    if problem:
        raise ValueError(f"--agent: {problem}")
    return agent


def run_server(
    *, http: str | None, db: str | None, agent: str | None, token: str | None, workers: bool
) -> int:
    """Serve MCP until the client disconnects (stdio) or the process is interrupted (HTTP).

    Parameters
    ----------
    http
        ``HOST:PORT`` to serve streamable HTTP at ``/mcp``; None serves stdio.
    db
        Ledger URL (``sqlite:///path`` or ``postgresql://...``); None: $SOLFORGE_DB or the default
        SQLite file.
    agent
        Identity of the caller on stdio (and of ``token`` on HTTP); default ``local``.
    token
        A bearer token accepted on HTTP for ``agent``; the ledger's registered agents' tokens are
        accepted too. Required (here or in the ledger) when ``http`` is not a loopback address.
    workers
        Run a worker in this process that executes queued jobs (compile, benchmark, submit).

    Returns
    -------
    int
        The process exit code: 0 after a clean shutdown, 2 for bad arguments or a refused start.
    """
    configure_logging()
    try:
        name = _check_agent(agent or config.agent_name() or DEFAULT_AGENT)
        address = parse_http(http) if http else None
    except ValueError as exc:
        print(f"solforge serve: {exc}", file=sys.stderr)
        return 2
    db_url = db or config.db_url()
    host = LedgerHost(db_url, workers=workers, agents=(name,))
    if address is None:
        services = ToolServices(ToolSettings.from_env(allow_local_paths=True), ledger=host.get)
        mcp = create_server(services, agent=name, host=host)
        log.info("solforge serving MCP on stdio as agent %r", name)
        with suppress(KeyboardInterrupt):
            mcp.run()
        return 0
    return _run_http(address, host, name, token)


def static_tokens(token: str | None, agent: str) -> dict[str, str]:
    """token -> agent from ``--token`` (for ``agent``), ``$SOLFORGE_TOKEN`` (for ``agent``) and
    ``$SOLFORGE_TOKENS`` (comma-separated ``agent:token`` pairs, or bare tokens for ``agent``).

    Raises
    ------
    ValueError
        For an agent name that breaks the rule of :mod:`solforge.problems.config` (1-64 letters, digits and - _ . @ :).
    """
    tokens: dict[str, str] = {}
    for raw in (token, config.token()):
        if raw:
            tokens[raw] = agent
    for item in config.token_pairs():
        name, sep, value = item.partition(":")
        if sep and value:
            tokens[value] = _check_agent(name)
        else:
            tokens[item] = agent
    return tokens


def _bind_error(bind: str, port: int) -> str | None:
    """Why ``bind:port`` cannot be listened on (in use, not this machine's address), or None.

    Checked before anything is logged so a busy port is not announced as served; uvicorn binds
    the same way (SO_REUSEADDR), so a port free here is free for it barring a race.
    """
    import socket

    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((bind, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} is in use"
            return exc.strerror or str(exc)
    return None


def _run_http(address: tuple[str, int], host: LedgerHost, agent: str, token: str | None) -> int:
    import anyio
    import uvicorn

    bind, port = address
    loopback = is_loopback(bind)
    try:
        static = static_tokens(token, agent)
    except ValueError as exc:
        print(f"solforge serve: SOLFORGE_TOKENS: {exc}", file=sys.stderr)
        return 2
    host.agents = tuple(dict.fromkeys((*host.agents, *static.values())))
    ledger_has_tokens = host.has_agent_tokens()
    if not loopback and not static and not ledger_has_tokens:
        print(
            f"solforge serve: refusing to listen on {bind} (reachable beyond this machine) without authentication; "
            "pass --token TOKEN (or set SOLFORGE_TOKEN), or register agents with tokens in the ledger, "
            "or listen on 127.0.0.1",
            file=sys.stderr,
        )
        return 2
    busy = _bind_error(bind, port)
    if busy is not None:
        print(f"solforge serve: cannot listen on {bind}:{port}: {busy}; "
              "pass --http HOST:PORT with a free port", file=sys.stderr)
        return 2
    verifier = SolforgeTokenVerifier(static, host.agent_for_token) if (static or ledger_has_tokens) else None
    url_host = f"[{bind}]" if ":" in bind else bind
    public_url = f"http://{url_host}:{port}"
    settings = ToolSettings.from_env(allow_local_paths=loopback)
    services = ToolServices(settings, ledger=host.get)
    mcp = create_server(services, agent=agent, host=host, token_verifier=verifier, public_url=public_url)
    app = mcp.streamable_http_app(host=bind)
    log.info(
        "solforge serving MCP at %s/mcp (%s)",
        public_url,
        "bearer tokens required" if verifier else f"no authentication: every caller is agent {agent!r}",
    )
    config = uvicorn.Config(app, host=bind, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    with suppress(KeyboardInterrupt):
        anyio.run(server.serve)
    return 0
