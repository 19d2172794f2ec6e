"""Bearer-token authentication for the HTTP transport, and what counts as a loopback host.

Each token names one agent; the agent is the identity its jobs and submissions carry. Tokens come
from ``solforge serve --token`` (one token for the agent named by ``--agent``) and from the ledger's
registered agents (``Ledger.register_agent``), looked up by hash.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable

from mcp.server.auth.provider import AccessToken, TokenVerifier

log = logging.getLogger("solforge.server")

SCOPE = "solforge"
"""The one scope every solforge token carries."""

LedgerLookup = Callable[[str], Awaitable[str | None]]
"""Maps a presented token to its agent's name, or None."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'; False for anything reachable from another machine."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class SolforgeTokenVerifier(TokenVerifier):
    """Accepts the static tokens given at start-up, then any token the ledger knows.

    Parameters
    ----------
    static
        token -> agent name.
    ledger_lookup
        Async lookup in the ledger, or None.
    """

    def __init__(self, static: dict[str, str], ledger_lookup: LedgerLookup | None = None) -> None:
        self._static = dict(static)
        self._lookup = ledger_lookup

    async def verify_token(self, token: str) -> AccessToken | None:
        agent: str | None = None
        for known, name in self._static.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                agent = name
        if agent is None and self._lookup is not None:
            try:
                agent = await self._lookup(token)
            except Exception as exc:  # the ledger being down must read as "not authenticated", not a 500
                log.warning("token lookup in the ledger failed: %s", exc)
                agent = None
        if agent is None:
            return None
        return AccessToken(token=token, client_id=agent, scopes=[SCOPE])
