"""The kept JIT caches: what one solution compiled goes back to its next process, and a restore never
rewrites a file the running process already has (a spare's Triton driver helper, mapped)."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from solforge.sandbox import jit_cache


def _home_with(files: dict[str, bytes], root: Path) -> Path:
    for relative, data in files.items():
        path = root / "jit-cache" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_a_saved_cache_comes_back_to_the_next_process_of_the_same_build(tmp_path: Path) -> None:
    first = _home_with({"triton/abc/kernel.cubin": b"cubin", "inductor/x.py": b"code"}, tmp_path / "first")
    (first / "jit-cache" / "triton" / "link").symlink_to("/etc/passwd")
    assert jit_cache.save(first, tmp_path / "cache", "build-1")

    second = tmp_path / "second"
    assert jit_cache.restore(tmp_path / "cache", "build-1", second)
    assert (second / "jit-cache" / "triton" / "abc" / "kernel.cubin").read_bytes() == b"cubin"
    assert (second / "jit-cache" / "inductor" / "x.py").read_bytes() == b"code"
    assert not os.path.lexists(second / "jit-cache" / "triton" / "link")  # links are never kept
    assert not jit_cache.restore(tmp_path / "cache", "build-2", tmp_path / "third")  # another build: nothing


def test_a_restore_leaves_a_file_the_process_has_mapped_untouched(tmp_path: Path) -> None:
    # What crashed Triton candidates on the H200: the spare had built and mapped Triton's driver helper
    # (cuda_utils.so) into its cache; the restore rewrote that file in place under the mapping.
    helper = "triton/hash1/cuda_utils.so"
    kept = _home_with({helper: b"A" * 4096, "triton/hash2/kernel.cubin": b"kernel"}, tmp_path / "earlier")
    assert jit_cache.save(kept, tmp_path / "cache", "build")

    home = _home_with({helper: b"B" * 4096}, tmp_path / "spare")
    path = home / "jit-cache" / helper
    inode = path.stat().st_ino
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert jit_cache.restore(tmp_path / "cache", "build", home)
        assert mapped[:4] == b"BBBB"  # the mapped bytes did not change under the process
    assert path.stat().st_ino == inode and path.read_bytes() == b"B" * 4096
    assert (home / "jit-cache" / "triton" / "hash2" / "kernel.cubin").read_bytes() == b"kernel"
    assert not list(home.rglob("*.part"))  # files are written beside their name and renamed into place


def test_a_trusted_process_keeps_its_cache_under_a_name_no_candidate_can_have() -> None:
    key = "ab" * 32
    assert jit_cache.kept_key(key, trusted=False) == key
    trusted = jit_cache.kept_key(key, trusted=True)
    assert trusted.startswith(jit_cache.TRUSTED_PREFIX) and trusted != key
    assert not set(trusted) <= set("0123456789abcdef")  # a build key is hex: never a trusted name
    assert jit_cache.kept_key("", trusted=True) == ""  # no build key: nothing is kept
