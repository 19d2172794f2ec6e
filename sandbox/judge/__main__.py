"""``python -m solforge.sandbox.judge [--serve]``: the judge process's entry (one evaluation, or warm)."""

from __future__ import annotations

import argparse
import collections
import contextlib
import shutil
import sys
from pathlib import Path

from solforge.problems import (
    config,
)

from .. import defences
from ..api import EvalEvent, EvalOptions, EvalReport, EvalRequest
from ..processes import ProcessProfile, SparePool
from .evaluation import Judge
from .state import RECENT_LANGUAGES, JudgeState, emit, guess_device, private_stdout, profile_for


def evaluate_in(state: JudgeState, request: EvalRequest, scratch: Path) -> EvalReport | None:
    """One evaluation in ``state``: its events go to stdout; None when it failed (an error event)."""
    scratch.mkdir(parents=True, exist_ok=True)
    judge: Judge | None = None
    try:
        refused = state.serves(request.options)
        if refused:
            raise RuntimeError(refused)
        judge = Judge(request, state, scratch)
        return judge.run()
    except Exception as exc:
        import traceback

        emit(EvalEvent(kind="error", message=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()[-3000:]))
        return None
    finally:
        if judge is not None:
            judge.clean_up()
        shutil.rmtree(scratch, ignore_errors=True)


def serve(device: str, root: Path) -> int:
    """The warm judge: a ``ready`` event, then one request per stdin line until stdin closes."""
    state = JudgeState(device, root, warm=True)
    spare_profile = ProcessProfile(str(state.device), defences.defences_enabled(submission=False),
                                   None if state.device.type == "cuda" else int(EvalOptions().memory_limit_gb * 2**30))
    state.spares.fill(spare_profile)
    recent: collections.deque[str] = collections.deque(maxlen=RECENT_LANGUAGES)
    emit(EvalEvent(kind="ready", message=f"{state.env.hardware} ({state.device})"))
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                request = EvalRequest.model_validate_json(line)
            except ValueError as exc:
                emit(EvalEvent(kind="error", message=f"a request that does not parse: {exc}"))
                continue
            state.evaluations += 1
            evaluate_in(state, request, root / f"eval-{state.evaluations}")
            broken = state.healthy()
            if broken:
                emit(EvalEvent(kind="error", message=f"the GPU no longer answers ({broken}); this judge exits"))
                return 2
            # The next evaluation's process, started now that this one's timing is over, for the
            # languages the recent requests used.
            recent.append(request.solution.spec.language.value)
            state.spares.follow(list(recent))
            profile = state.profile(request.options)
            state.spares.keep_only(profile)
            state.spares.fill(profile, count=spares_wanted(state.spares.depth, state.baseline_processes,
                                                           config.spares_ahead()))
    finally:
        state.close()
        shutil.rmtree(root, ignore_errors=True)  # this judge's own folder, also when its caller died
    return 0


def spares_wanted(depth: int, baseline_processes: int, ahead: int) -> int:
    """How many started processes a warm judge keeps after an evaluation that took ``1 + baseline_processes``:
    enough for the next such evaluation, and for ``ahead`` more (SOLFORGE_SPARES_AHEAD), so that evaluations
    back to back each find processes that finished starting while the one before ran."""
    return max(depth, (1 + ahead) * (1 + baseline_processes))


def _not_dumpable() -> None:
    """Keep other processes of this user out of this one's /proc files (environ, maps, mem) and
    core dumps: a candidate is such a process. Root with CAP_SYS_PTRACE is not stopped by it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="solforge judge process (started by solforge.sandbox.evaluate)")
    parser.add_argument("--serve", action="store_true", help="stay warm: one request per stdin line")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    args = parser.parse_args(argv)
    _not_dumpable()
    private_stdout()
    root = config.scratch_dir() or Path.cwd()
    if args.serve:
        return serve(args.device, root)
    try:
        request = EvalRequest.model_validate_json(sys.stdin.read())
        # The candidate's process starts before this one imports torch: both start up in parallel.
        spares = SparePool(root, depth=1, language=request.solution.spec.language.value)
        spares.fill(profile_for(request.options, guess_device(request.options)))
        state = JudgeState(request.options.device, root, spares=spares)
    except Exception as exc:
        import traceback

        emit(EvalEvent(kind="error", message=f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()[-3000:]))
        return 1
    try:
        return 0 if evaluate_in(state, request, root / "eval") is not None else 1
    finally:
        state.close()


if __name__ == "__main__":
    sys.exit(main())
