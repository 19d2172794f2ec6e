"""The judge process: trusted, holds the seed, the inputs' recipe and the reference outputs.

It runs in one of two ways:

- **one evaluation** (``python -m solforge.sandbox.judge``): an :class:`EvalRequest` on stdin, one
  :class:`EvalEvent` per line on stdout, then exit (``solforge eval`` with no worker running);
- **warm** (``python -m solforge.sandbox.judge --serve``): a ``ready`` event, then one request per
  line on stdin, each answered with its events and a final ``report`` (or ``error``). torch, CUDA and
  CUPTI load once; problems, their reference modules and FLOP counts stay loaded; a spare candidate
  process is started after each evaluation, so the next one finds its process up (see
  :class:`~solforge.sandbox.processes.SparePool`). A worker keeps one per GPU (:mod:`.warm`).

For each workload the judge generates fresh inputs, runs the reference, hands the inputs (and output
buffers) to the candidate process, compares what comes back, and asks the candidate to time its
call. Reference outputs are allocated outside the memory pool that is shared with the candidate, so
no IPC handle the candidate holds reaches them; the seed of every evaluation is drawn anew.

The package's modules::

    state.py          JudgeState (what stays loaded between evaluations) and the helpers evaluations share
    evaluation.py     Judge: one evaluation, workload by workload
    profile_steps.py  the profile run's steps (a mixin of Judge)
    __main__.py       the process's entry: evaluate_in, serve (warm), main
"""

from __future__ import annotations

from .evaluation import Judge
from .state import JudgeState, held_out_uuid, held_out_workloads

__all__ = ["Judge", "JudgeState", "held_out_uuid", "held_out_workloads"]
