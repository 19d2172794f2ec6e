"""write_text_atomic: writers of one file on one host never fail each other, and a reader sees a whole file."""

from __future__ import annotations

import threading
from pathlib import Path

from solforge.problems.files import write_text_atomic


def test_concurrent_writers_of_one_file_all_succeed_and_leave_one_whole_version(tmp_path: Path) -> None:
    """Two processes counting the same problem once raced on a fixed ``.tmp`` name: the second rename found
    the file gone (FileNotFoundError). Each writer now has a temporary file of its own."""
    path = tmp_path / "cache" / "counts.json"
    versions = [f"{i}:" + "x" * 50_000 for i in range(16)]
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            for _ in range(20):
                write_text_atomic(path, text)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_text() in versions
    assert [p.name for p in path.parent.iterdir()] == ["counts.json"]  # no temporary file left behind


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "a.json", "old")
    try:
        write_text_atomic(path, "\ud800")  # a lone surrogate cannot be encoded: the write fails midway
    except UnicodeEncodeError:
        pass
    else:
        raise AssertionError("the write should have failed")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]
