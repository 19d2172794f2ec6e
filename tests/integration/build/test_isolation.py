"""solforge.sandbox.isolation: limits, tree kills, scrubbed environments, network namespaces."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import psutil
import pytest

from solforge.sandbox.child_env import (
    SCRATCH_PREFIX,
    make_scratch_dir,
    remove_tree,
    scratch_dir,
    scrubbed_env,
    sweep_stale_scratch,
)
from solforge.sandbox.isolation import kill_tree, run_isolated, run_isolated_async, spawn_isolated


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return make_scratch_dir(tmp_path)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _gone(pid: int) -> bool:
    """No longer running: vanished, or a zombie waiting for init (it executes nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _read_pids(path: Path, count: int, timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(p) for p in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"the child did not write {count} pids to {path}")


# A child that starts a grandchild in its own group, and a grandchild that escapes to a new session
# and starts a great-grandchild; every pid goes to a file, then everyone sleeps.
_TREE = """
import os, subprocess, sys, time
pids_file = sys.argv[1]
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
a = subprocess.Popen(sleeper)
escape = (
    "import subprocess, sys, time\\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\n"
    "open(sys.argv[1], 'a').write(f' {c.pid}')\\n"
    "time.sleep(600)\\n"
)
b = subprocess.Popen([sys.executable, "-c", escape, pids_file], start_new_session=True)
with open(pids_file, "a") as f:
    f.write(f" {os.getpid()} {a.pid} {b.pid}")
time.sleep(600)
"""


def test_output_and_stdin(scratch: Path) -> None:
    result = run_isolated(
        _python(
            "import sys; data = sys.stdin.buffer.read(); print(len(data)); print('err', file=sys.stderr)"
        ),
        cwd=scratch,
        env=scrubbed_env(scratch_dir=scratch),
        timeout_s=30,
        stdin_bytes=b"x" * 3_000_000,  # far beyond a pipe buffer: must be written while reading
    )
    assert result.ok and not result.timed_out
    assert result.stdout.strip() == "3000000"
    assert result.stderr.strip() == "err"
    assert result.killed_by_signal is None


def test_output_is_capped_to_its_tail(scratch: Path) -> None:
    result = run_isolated(
        _python("import sys; sys.stdout.write('a' * 1_000_000 + 'END')"),
        cwd=scratch,
        env=scrubbed_env(scratch_dir=scratch),
        timeout_s=30,
        output_limit_bytes=1000,
    )
    assert len(result.stdout) == 1000 and result.stdout.endswith("END")
    assert result.stdout_dropped_bytes == 1_000_003 - 1000


def test_timeout_kills_the_whole_tree(scratch: Path) -> None:
    pids_file = scratch / "pids"
    started = time.monotonic()
    result = run_isolated(
        [sys.executable, "-c", _TREE, str(pids_file)],
        cwd=scratch,
        env=scrubbed_env(scratch_dir=scratch),
        timeout_s=4,
    )
    assert result.timed_out
    assert result.killed_by_signal == 9
    assert time.monotonic() - started < 15
    pids = _read_pids(pids_file, 4)
    assert len(set(pids)) == 4
    assert all(_gone(pid) for pid in pids), [(p, psutil.Process(p).cmdline()) for p in pids if not _gone(p)]


def test_leftovers_are_killed_after_a_normal_exit(scratch: Path) -> None:
    pids_file = scratch / "pids"
    code = f"""
    import subprocess, sys
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open({str(pids_file)!r}, "w").write(str(p.pid))
    """
    result = run_isolated(_python(code), cwd=scratch, env=scrubbed_env(scratch_dir=scratch), timeout_s=30)
    assert result.ok
    (pid,) = _read_pids(pids_file, 1)
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_memory_limit_is_a_failure_not_a_hang(scratch: Path) -> None:
    result = run_isolated(
        _python("x = bytearray(4 * 1024**3); print('allocated')"),
        cwd=scratch,
        env=scrubbed_env(scratch_dir=scratch),
        timeout_s=60,
        memory_limit_bytes=512 * 1024**2,
    )
    assert not result.ok and not result.timed_out
    assert "MemoryError" in result.stderr
    assert "allocated" not in result.stdout
    assert result.seconds < 30


def test_core_dumps_and_files_are_limited(scratch: Path) -> None:
    code = "import resource; print(resource.getrlimit(resource.RLIMIT_CORE), resource.getrlimit(resource.RLIMIT_NOFILE))"
    result = run_isolated(
        _python(code), cwd=scratch, env=scrubbed_env(scratch_dir=scratch), timeout_s=30, max_open_files=256
    )
    assert result.stdout.strip() == "(0, 0) (256, 256)"


def test_scrubbed_env_drops_secrets(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "GITHUB_TOKEN": "ghp_secret",
        "ANTHROPIC_API_KEY": "sk-secret",
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
        "DATABASE_URL": "postgresql://user:pw@db/solforge",
        "SOLFORGE_DB_PASSWORD": "pw",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    env = scrubbed_env({"PYTHONPATH": "/opt/x"}, 3, scratch_dir=scratch)
    assert not set(secrets) & set(env)
    assert env["HOME"] == str(scratch)
    assert env["TMPDIR"].startswith(str(scratch))
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    assert env["PYTHONPATH"] == "/opt/x"
    assert env["TRITON_CACHE_DIR"].startswith(str(scratch))
    assert scrubbed_env(scratch_dir=scratch)["CUDA_VISIBLE_DEVICES"] == ""

    result = run_isolated(
        _python("import os; print(sorted(os.environ.items()))"), cwd=scratch, env=env, timeout_s=30
    )
    assert result.ok
    for value in secrets.values():
        assert value not in result.stdout

    with pytest.raises(ValueError, match="look like secrets"):
        scrubbed_env({"HF_TOKEN": "x"}, None, scratch_dir=scratch)


def test_network_namespace_blocks_loopback(scratch: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        code = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
            print("connected")
        except OSError as exc:
            print("blocked", exc)
        """
        env = scrubbed_env(scratch_dir=scratch)
        isolated = run_isolated(_python(code), cwd=scratch, env=env, timeout_s=30)
        control = run_isolated(_python(code), cwd=scratch, env=env, timeout_s=30, isolate_network=False)
    assert control.stdout.startswith("connected") and not control.network_isolated
    if not isolated.network_isolated:
        pytest.skip("this kernel does not permit a new network namespace here (not root, no user namespaces)")
    assert isolated.stdout.startswith("blocked"), isolated.stdout


def test_kill_tree_on_a_spawned_process(scratch: Path) -> None:
    pids_file = scratch / "pids"
    proc = spawn_isolated(
        [sys.executable, "-c", _TREE, str(pids_file)], cwd=scratch, env=scrubbed_env(scratch_dir=scratch)
    )
    pids = _read_pids(pids_file, 4)
    kill_tree(proc.pid)
    assert proc.popen.wait(timeout=10) == -9
    assert all(_gone(pid) for pid in pids)


def test_kill_tree_leaves_a_reused_pid_alone(scratch: Path) -> None:
    from solforge.sandbox import isolation

    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    try:
        # Pretend spawn_isolated once started a process under this pid, long ago (now reaped).
        isolation._SPAWNED[bystander.pid] = 1.0
        kill_tree(bystander.pid)
        time.sleep(0.2)
        assert bystander.poll() is None, "an unrelated process with a recycled pid was killed"
    finally:
        isolation._SPAWNED.pop(bystander.pid, None)
        bystander.kill()
        bystander.wait()


def test_caller_redirected_output(scratch: Path) -> None:
    log = scratch / "out.log"
    with log.open("wb") as handle:
        proc = spawn_isolated(
            _python("print('to the file')"),
            cwd=scratch,
            env=scrubbed_env(scratch_dir=scratch),
            stdout=handle,
            stdin=subprocess.DEVNULL,
        )
        result = proc.communicate(timeout_s=30)
    assert result.ok and result.stdout == ""
    assert log.read_text() == "to the file\n"


def test_async_cancellation_kills_the_tree(scratch: Path) -> None:
    pids_file = scratch / "pids"

    async def main() -> None:
        with anyio.move_on_after(30):
            async with anyio.create_task_group() as tg:

                async def victim() -> None:
                    await run_isolated_async(
                        [sys.executable, "-c", _TREE, str(pids_file)],
                        cwd=scratch,
                        env=scrubbed_env(scratch_dir=scratch),
                        timeout_s=300,
                    )

                tg.start_soon(victim)
                while len(pids_file.read_text().split() if pids_file.exists() else []) < 4:
                    await anyio.sleep(0.05)
                tg.cancel_scope.cancel()

    anyio.run(main)
    pids = _read_pids(pids_file, 4)
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in pids)


def test_scratch_dirs_are_removed(tmp_path: Path) -> None:
    with scratch_dir(tmp_path) as folder:
        assert folder.name.startswith(SCRATCH_PREFIX)
        locked = folder / "ro" / "deep"
        locked.mkdir(parents=True)
        (locked / "f").write_text("x")
        os.chmod(locked, 0o500)
        os.chmod(folder / "ro", 0o500)
    assert not folder.exists()

    stale = make_scratch_dir(tmp_path)
    fresh = make_scratch_dir(tmp_path)
    old = time.time() - 7 * 3600
    os.utime(stale, (old, old))
    assert sweep_stale_scratch(tmp_path) == 1
    assert not stale.exists() and fresh.exists()
    remove_tree(fresh)
    remove_tree(fresh)  # twice is fine
    assert not fresh.exists()
