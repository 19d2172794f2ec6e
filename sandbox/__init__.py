"""solforge.sandbox: the only code that builds and runs candidate code.

Which process runs what, and what each may trust::

    caller (CLI, worker, tests)      evaluate.py, warm.py, build/builder.py, api.py
      |  no torch; sends an EvalRequest, reads EvalEvents; trusts the judge's JSON events
      v
    judge process (trusted)          judge/ (state, evaluation), processes.py, baseline.py, correctness.py, jit_cache.py,
      |                              defences/static.py, sol/ (counting, peaks and the score)
      |  holds the seed, the reference and its outputs; warm (--serve) or one evaluation;
      |  never unpickles or imports anything the candidate wrote
      v
    candidate process (hostile)      candidate.py, timing.py, channel.py, defences/guards.py,
                                     defences/confinement.py, build/artifacts.py (load_entry)
         the only process that imports a solution; confined (Landlock, seccomp, rlimits, no
         network), answers in JSON; started ahead as a spare, used for one solution only

    build child (hostile input)      build/worker.py: compilers, and a CuTe DSL import, confined

Every child above is started by isolation.py (its own session, limits, no network, the whole tree killed
on a timeout) with what child_env.py gives it (an environment without secrets, a scratch folder).

:mod:`solforge.sandbox.sol` is the speed of light in one place: FLOP and byte counting, GPU specs and
NVML, calibration, peaks and every score formula; the tools, the ledger and the report call it.

Start with :func:`solforge.sandbox.evaluate.evaluate` and :mod:`solforge.sandbox.api` (the typed
contract); :class:`solforge.sandbox.warm.WarmJudge` is the long-lived judge a worker keeps per GPU.
"""
