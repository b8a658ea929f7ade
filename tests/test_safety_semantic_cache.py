"""The semantic layer's on-disk cache of the example bank's embeddings (issue 26): a process's first screen reads
the bank's vectors instead of embedding ~2,400 sentences, a changed bank or a damaged file is never used, and a cache
that cannot be written costs time, not the screen."""
from __future__ import annotations

import os

import numpy as np
import pytest

from eval_backend.safety import bank, semantic, semantic_cache

TEXTS = ["I'm so sorry about your dog.", "You are a worthless idiot.", "I will find you after school."]
DIM = 768              # all-mpnet-base-v2's embedding size


class Counting:
    """The real embedder, counting the texts it was asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.embed = semantic._embed

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return self.embed(texts)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_SAFETY_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_second_read_embeds_nothing_and_gives_the_same_vectors(cache_dir):
    first, second = Counting(), Counting()
    vectors = semantic_cache.bank_vectors(TEXTS, first)
    again = semantic_cache.bank_vectors(TEXTS, second)
    assert first.texts == TEXTS and second.texts == []
    assert np.array_equal(vectors, again) and again.dtype == np.float32
    assert semantic_cache.path_for(TEXTS).parent == cache_dir


def test_a_changed_bank_or_model_version_is_a_different_file(monkeypatch):
    assert semantic_cache.path_for(TEXTS) != semantic_cache.path_for(TEXTS[:2] + ["I will find you after work."])
    assert semantic_cache.path_for(TEXTS) != semantic_cache.path_for(list(reversed(TEXTS)))
    before = semantic_cache.path_for(TEXTS)
    monkeypatch.setattr(semantic_cache, "_model_version", lambda: "9.9.9")
    assert semantic_cache.path_for(TEXTS) != before


@pytest.mark.parametrize("damage", ["garbage", "wrong_shape", "not_finite", "pickled"])
def test_a_damaged_file_is_ignored_and_replaced(cache_dir, damage):
    path = semantic_cache.path_for(TEXTS)
    path.parent.mkdir(parents=True)
    if damage == "garbage":
        path.write_bytes(b"\x93NUMPY not really")
    elif damage == "wrong_shape":
        np.save(path, np.ones((2, DIM), dtype=np.float32))
    elif damage == "not_finite":
        np.save(path, np.full((3, DIM), np.nan, dtype=np.float32))
    else:
        np.save(path, np.array([{"a": 1}] * 3, dtype=object), allow_pickle=True)
    counting = Counting()
    vectors = semantic_cache.bank_vectors(TEXTS, counting)
    assert counting.texts == TEXTS
    assert np.isfinite(vectors).all() and vectors.shape == (3, DIM)
    assert np.array_equal(np.load(path, allow_pickle=False), vectors)      # the file was rewritten


def test_callers_that_find_no_file_take_turns_and_only_the_first_embeds(cache_dir):
    """A Space's workers or a test run's processes starting on an empty cache: each used to embed the whole bank at
    once (minutes of CPU each for bank-14). Now the first embeds while the others wait on the lock file, then read
    its vectors."""
    import threading
    import time
    calls: list[str] = []

    def slow(texts):
        calls.append(threading.current_thread().name)
        time.sleep(0.5)                        # long enough for the others to arrive while it embeds
        return np.ones((len(texts), DIM), dtype=np.float32)
    results: dict[str, np.ndarray] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, semantic_cache.bank_vectors(TEXTS, slow)),
                                name=f"caller-{n}") for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(calls) == 1, calls
    assert len(results) == 4
    assert all(np.array_equal(v, np.ones((3, DIM), dtype=np.float32)) for v in results.values())


def test_a_lock_held_too_long_is_waited_out_not_forever(cache_dir, monkeypatch):
    """A holder that never lets go (stuck, or another local user's process on a shared cache folder) delays the
    bank by TURN_WAIT_S, then the caller embeds on its own."""
    import fcntl
    import time
    monkeypatch.setattr(semantic_cache, "TURN_WAIT_S", 0.6)
    lock = semantic_cache.path_for(TEXTS).with_suffix(".lock")
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        counting, start = Counting(), time.monotonic()
        assert semantic_cache.bank_vectors(TEXTS, counting).shape == (3, DIM)
        assert counting.texts == TEXTS and 0.5 < time.monotonic() - start < 30
    finally:
        os.close(fd)


def test_a_cache_that_cannot_be_written_still_screens(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("EMPATHY_ARENA_SAFETY_CACHE", str(blocker / "cache"))    # mkdir fails under a file
    counting = Counting()
    assert semantic_cache.bank_vectors(TEXTS, counting).shape == (3, DIM)
    assert counting.texts == TEXTS and not (blocker / "cache").exists()


def test_the_shipped_layer_reads_the_bank_from_the_cache(cache_dir, monkeypatch):
    """Building the layer a second time embeds none of the bank (the first build fills the cache) and reads as the
    first. The shipped code path on a bank cut to 25 sentences a label: the whole bank takes minutes to embed."""
    monkeypatch.setattr(bank, "BANK", {label: texts[:25] for label, texts in bank.BANK.items()})
    first = semantic.Layer()                                   # fills cache_dir (embeds the bank once)
    texts = [t for label in (*semantic.CLASSES, "benign") for t in bank.BANK[label]]
    assert semantic_cache.path_for(texts).is_file()
    counting = Counting()
    monkeypatch.setattr(semantic, "_embed", counting)
    fitted = semantic.Layer()
    assert counting.texts == []
    text = "I gave my cat to my neighbour, I will not be needing her"
    assert np.allclose(fitted.probabilities([text]), first.probabilities([text]))
    assert os.listdir(cache_dir) == [semantic_cache.path_for(texts).name]     # no temporary file left behind
