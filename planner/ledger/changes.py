"""A process-local signal that the ledger changed, so waiters in the same process wake at once.

Workers and waiting tools poll the database; when they share a process with the writer (``solforge
serve`` runs its worker in-process) polling alone adds up to a poll interval at each hand-off: the
job queued, then its result written. Writers :meth:`ChangeSignal.notify`; waiters pass the
generation they last saw to :meth:`ChangeSignal.wait`, which returns at the next change or at the
timeout, whichever comes first. Changes made by other processes are still found by polling.
"""

from __future__ import annotations

import threading

__all__ = ["ChangeSignal"]


class ChangeSignal:
    """A generation counter with a condition variable."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0

    @property
    def generation(self) -> int:
        return self._generation

    def notify(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def wait(self, seen: int, timeout_s: float) -> int:
        """Wait until the generation differs from ``seen`` or ``timeout_s`` passed; return it."""
        with self._cond:
            self._cond.wait_for(lambda: self._generation != seen, timeout=max(0.0, timeout_s))
            return self._generation
