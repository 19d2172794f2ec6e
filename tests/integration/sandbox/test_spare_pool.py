"""The spare pool's pause: a spare still starting up is frozen during a timed loop and goes on after."""

from __future__ import annotations

import time
from pathlib import Path

from solforge.sandbox.processes import ProcessProfile, SparePool


def _state(pid: int) -> str:
    """The scheduler state letter of ``pid`` (``T`` when stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_starting_spare_is_frozen_inside_the_block_and_warms_up_after(tmp_path: Path) -> None:
    profile = ProcessProfile(device="cpu", defences=False, memory_limit_bytes=None)
    pool = SparePool(tmp_path, depth=1)
    try:
        pool.fill(profile)
        (spare,) = pool._spares[profile]
        assert not spare.warm  # a fresh process imports torch for seconds before it is warm
        with pool.starting_ones_paused() as paused:
            assert paused == 1
            time.sleep(0.2)
            assert _state(spare.proc.pid) == "T"
        assert _state(spare.proc.pid) != "T"
        deadline = time.monotonic() + 120
        while not spare.warm and time.monotonic() < deadline:
            time.sleep(0.1)
        assert spare.warm and spare.alive
        with pool.starting_ones_paused() as paused:
            assert paused == 0  # a warm spare waits on its socket: nothing to freeze
            assert _state(spare.proc.pid) != "T"
        assert pool.take(profile) is spare
        spare.discard()
    finally:
        pool.close()


def test_a_spare_taken_inside_the_pause_runs(tmp_path: Path) -> None:
    """A baseline process is opened inside the pause: the spare it takes must not stay frozen."""
    profile = ProcessProfile(device="cpu", defences=False, memory_limit_bytes=None)
    pool = SparePool(tmp_path, depth=2)
    try:
        pool.fill(profile)
        first, second = pool._spares[profile]
        with pool.starting_ones_paused() as paused:
            assert paused == 2
            taken = pool.take(profile)
            time.sleep(0.2)
            assert _state(taken.proc.pid) != "T"
            other = second if taken is first else first
            assert _state(other.proc.pid) == "T"  # the one left in the pool stays frozen
        taken.discard()
    finally:
        pool.close()


def test_a_frozen_spare_can_still_be_killed(tmp_path: Path) -> None:
    profile = ProcessProfile(device="cpu", defences=False, memory_limit_bytes=None)
    pool = SparePool(tmp_path, depth=1)
    pool.fill(profile)
    (spare,) = pool._spares[profile]
    with pool.starting_ones_paused():
        pool.close()  # cancelled mid-timing: closing must not wait on a stopped process
    assert not spare.alive


def test_a_pool_that_knows_the_language_tells_its_processes(tmp_path: Path) -> None:
    """A one-shot judge knows the solution's language before its process starts: the process is told,
    so that it imports that language's packages only; a pool told nothing starts processes for any."""
    profile = ProcessProfile(device="cpu", defences=False, memory_limit_bytes=None)
    told, untold = SparePool(tmp_path / "a", depth=1, language="triton"), SparePool(tmp_path / "b", depth=1)
    try:
        told.fill(profile)
        untold.fill(profile)
        mine, generic = told.take(profile), untold.take(profile)
        try:
            argv = Path(f"/proc/{mine.proc.pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--language") + 1] == b"triton"
            assert b"--language" not in Path(f"/proc/{generic.proc.pid}/cmdline").read_bytes()
        finally:
            mine.discard()
            generic.discard()
    finally:
        told.close()
        untold.close()


def test_a_warm_pool_follows_the_languages_of_recent_requests(tmp_path: Path) -> None:
    """A warm judge's later spares skip the CuTe DSL's import while no recent request was CuTe DSL."""
    profile = ProcessProfile(device="cpu", defences=False, memory_limit_bytes=None)
    pool = SparePool(tmp_path, depth=1)
    try:
        pool.follow([])
        assert pool.language is None  # nothing seen yet: ready for any language
        pool.follow(["triton", "pytorch"])
        assert pool.language == "pytorch"
        pool.fill(profile)
        spare = pool.take(profile)
        try:
            argv = Path(f"/proc/{spare.proc.pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--language") + 1] == b"pytorch"
        finally:
            spare.discard()
        pool.follow(["cute_dsl", "pytorch"])
        assert pool.language is None
    finally:
        pool.close()


def test_only_a_cute_dsl_solution_brings_the_dsl_into_a_process_started_for_another_language() -> None:
    """What the judge sends names the languages, and loading imports the CuTe DSL for those that use it."""
    import json
    import subprocess
    import sys

    from solforge.problems import Solution
    from solforge.sandbox.candidate import languages_of

    root = Path(__file__).resolve().parents[3] / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm"
    sent = {lang: Solution.model_validate(json.loads((root / f"{lang}.json").read_text())).model_dump(mode="json")
            for lang in ("pytorch", "cute_dsl")}
    assert languages_of(sent["pytorch"]) == ["pytorch"] and languages_of(sent["cute_dsl"]) == ["cute_dsl"]
    probe = ("import sys\n"
             "from solforge.sandbox.candidate import _import_language_packages as bring\n"
             "bring('cuda:0', ['pytorch']); print('cutlass' in sys.modules)\n"
             "bring('cuda:0', ['cute_dsl']); print('cutlass' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr[-2000:]
