"""CheckpointStore: atomic saves, the newest wins, the last K are kept, damage falls back."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

import pytest

from dlsched.job import CheckpointError, CheckpointStore
from dlsched.job.checkpoint import STALE_TEMP_SECONDS, TEMP_PREFIX


def test_empty_or_missing_directory_has_no_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "not-yet")
    assert store.latest() is None and store.load_bytes() is None and store.load_object() is None


def test_round_trip_and_newest_by_step_not_by_name_or_time(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=5)
    for step in (100, 9, 20):  # saved out of order: the highest step is the latest
        store.save_object(step, {"step": step, "weights": [step] * 3})
    assert store.latest().step == 100  # type: ignore[union-attr]
    assert store.load_object() == (100, {"step": 100, "weights": [100, 100, 100]})
    assert store.path_for(9).name == "ckpt-000000000009.pkl"


@pytest.mark.parametrize(("keep", "saves", "left"), [
    pytest.param(1, [1, 2, 3], [3], id="keep-1"),
    pytest.param(3, [10, 20, 30, 40, 50], [30, 40, 50], id="keep-3"),
    pytest.param(3, [10, 20], [10, 20], id="fewer-than-k"),
])
def test_keeps_the_last_k(tmp_path: Path, keep: int, saves: list[int], left: list[int]) -> None:
    store = CheckpointStore(tmp_path, keep=keep)
    for step in saves:
        store.save_bytes(step, b"x" * step)
    assert [c.step for c in store.checkpoints()] == left
    assert sorted(os.listdir(tmp_path)) == [store.path_for(s).name for s in left]


def test_a_writer_that_fails_half_way_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save_bytes(1, b"good")

    def crash_half_way(file: BinaryIO) -> None:
        file.write(b"half of a checkpoint")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.save(2, crash_half_way)
    assert store.load_bytes() == (1, b"good")
    assert os.listdir(tmp_path) == [store.path_for(1).name]  # no temp file, no step 2


def test_the_final_name_appears_only_when_complete(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    seen_during_write = []

    def write(file: BinaryIO) -> None:
        file.write(b"a" * 1000)
        seen_during_write.append((store.latest(), sorted(os.listdir(tmp_path))))

    store.save(7, write)
    latest, names = seen_during_write[0]
    assert latest is None  # a reader during the write sees no checkpoint yet...
    assert len(names) == 1 and names[0].startswith(TEMP_PREFIX)  # ...only the temp file
    assert store.load_bytes() == (7, b"a" * 1000)


def test_overwriting_a_step_is_atomic_too(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save_bytes(5, b"first")
    store.save_bytes(5, b"second")
    assert store.load_bytes() == (5, b"second") and len(store.checkpoints()) == 1


def test_damaged_newest_falls_back_to_the_previous(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save_object(1, "one")
    store.save_object(2, "two")
    store.path_for(2).write_bytes(b"not a pickle")
    assert store.load_object() == (1, "one")


def test_all_damaged_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save_object(1, "one")
    store.path_for(1).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="none of 1 checkpoints"):
        store.load_object()


def test_temp_files_of_dead_writers_are_cleaned_only_when_stale(tmp_path: Path) -> None:
    stale, fresh = tmp_path / f"{TEMP_PREFIX}old.pkl", tmp_path / f"{TEMP_PREFIX}new.pkl"
    for path in (stale, fresh):
        path.write_bytes(b"partial")
    old = time.time() - STALE_TEMP_SECONDS - 10
    os.utime(stale, (old, old))
    store = CheckpointStore(tmp_path)
    store.save_bytes(1, b"ok")
    assert not stale.exists() and fresh.exists()  # fresh may belong to a live writer
    assert [c.step for c in store.checkpoints()] == [1]


@pytest.mark.parametrize("bad", [
    pytest.param(lambda d: CheckpointStore(d, keep=0), id="keep-0"),
    pytest.param(lambda d: CheckpointStore(d).save_bytes(-1, b""), id="negative-step"),
])
def test_bad_arguments(tmp_path: Path, bad: object) -> None:
    with pytest.raises((ValueError, CheckpointError)):
        bad(tmp_path)  # type: ignore[operator]


def test_other_files_in_the_directory_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "ckpt-12.pt").write_bytes(b"other suffix")
    (tmp_path / "notes.txt").write_text("hi")
    store = CheckpointStore(tmp_path, keep=1)
    store.save_bytes(3, b"mine")
    assert store.load_bytes() == (3, b"mine")
    assert (tmp_path / "ckpt-12.pt").exists() and (tmp_path / "notes.txt").exists()
