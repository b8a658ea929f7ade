"""The semantic layer's on-disk cache of the example bank's embeddings (issue 26) and of the regressions fitted on them
(issue 25): a process's first screen reads the bank's vectors instead of embedding ~5,500 sentences and its fit
instead of fitting again, a changed bank, fitting code or a damaged file is never used, and a cache that cannot be
written costs time, not the screen."""
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
    assert np.array_equal(fitted.probabilities([text]), first.probabilities([text]))
    names = sorted(os.listdir(cache_dir))                   # the bank's vectors and its fit; no temporary file
    assert len(names) == 2 and names[0].startswith("bank-") and names[1].startswith("fit-") and names[1].endswith(".npz")


def test_the_shipped_layer_reads_its_fit_from_the_cache_and_reads_as_scikit_learn(cache_dir, monkeypatch):
    """Each process that screened fitted the layer's four regressions again (~5 CPU-s for bank-14, issue 25): a
    second build fits nothing, and the regressions read bit for bit as scikit-learn's own predict_proba."""
    from sklearn.linear_model import LogisticRegression
    monkeypatch.setattr(bank, "BANK", {label: texts[:25] for label, texts in bank.BANK.items()})
    first = semantic.Layer()
    fits: list[int] = []
    real_fit = semantic._fit
    monkeypatch.setattr(semantic, "_fit", lambda *a: fits.append(1) or real_fit(*a))
    again = semantic.Layer()
    assert fits == []
    texts = ["I gave my cat away, I will not be needing her", "You are a worthless idiot.", "So sorry for your loss."]
    assert np.array_equal(again.probabilities(texts), first.probabilities(texts))
    feats = np.hstack([first.bank, np.array([semantic.pronoun_features(t) for t in
                                             [t for label in (*semantic.CLASSES, "benign") for t in bank.BANK[label]]],
                                            dtype=np.float32)])
    asked = np.hstack([first.embed(texts), np.array([semantic.pronoun_features(t) for t in texts], dtype=np.float32)])
    for name, target in first.targets.items():
        sk = LogisticRegression(C=semantic.C, class_weight="balanced", max_iter=3000).fit(semantic._view(feats, name), target)
        assert np.array_equal(again._regression(name, asked), sk.predict_proba(semantic._view(asked, name))[:, 1])
    monkeypatch.setattr(semantic, "_fit_fingerprint", lambda: "another scikit-learn")
    semantic.Layer()
    assert fits == [1]                          # other fitting code or libraries: fitted again, into another file
    # a sentence moved from one label to the next keeps the texts (and the bank's vectors) in the same order, but
    # not the fit: fitted again
    cut = {label: list(texts) for label, texts in bank.BANK.items()}
    cut["abuse"].insert(0, cut["crisis"].pop())
    monkeypatch.setattr(bank, "BANK", cut)
    semantic.Layer()
    assert fits == [1, 1]


SHAPES = {"w.coef": (1, 3), "w.intercept": (1,)}
GOOD = {"w.coef": np.array([[0.5, -1.0, 2.0]], dtype=np.float32), "w.intercept": np.array([0.25], dtype=np.float32)}


class CountingFit:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, np.ndarray]:
        self.calls += 1
        return {name: array.copy() for name, array in GOOD.items()}


def _fit_file(cache_dir):
    names = [n for n in os.listdir(cache_dir) if n.startswith("fit-")]
    assert len(names) == 1, names
    return cache_dir / names[0]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing_array", "extra_array", "wrong_shape",
                                    "not_finite", "integers", "pickled"])
def test_a_damaged_fit_file_is_ignored_and_replaced(cache_dir, damage):
    fit = CountingFit()
    semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    path = _fit_file(cache_dir)
    arrays = dict(GOOD)
    if damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        if damage == "missing_array":
            del arrays["w.intercept"]
        elif damage == "extra_array":
            arrays["w.extra"] = np.ones(2, dtype=np.float32)
        elif damage == "wrong_shape":
            arrays["w.coef"] = np.ones((1, 4), dtype=np.float32)
        elif damage == "not_finite":
            arrays["w.coef"] = np.array([[np.inf, 0, 0]], dtype=np.float32)
        elif damage == "integers":
            arrays["w.coef"] = np.array([[1, 2, 3]])
        else:
            arrays["w.coef"] = np.array([[{"a": 1}, 2, 3]], dtype=object)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    weights = semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    assert fit.calls == 2
    assert all(np.array_equal(weights[n], GOOD[n]) for n in GOOD) and sorted(weights) == sorted(GOOD)
    assert semantic_cache.fitted(TEXTS, "code", fit, SHAPES).keys() == GOOD.keys() and fit.calls == 2   # rewritten


def test_a_fit_is_keyed_by_the_bank_and_the_fitting_code(cache_dir, monkeypatch):
    fit = CountingFit()
    semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    assert fit.calls == 1
    semantic_cache.fitted(TEXTS, "other code", fit, SHAPES)
    semantic_cache.fitted(list(reversed(TEXTS)), "code", fit, SHAPES)
    monkeypatch.setattr(semantic_cache, "_model_version", lambda: "9.9.9")
    semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    assert fit.calls == 4


def test_a_fit_cache_that_cannot_be_written_still_fits(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("EMPATHY_ARENA_SAFETY_CACHE", str(blocker / "cache"))
    fit = CountingFit()
    assert np.array_equal(semantic_cache.fitted(TEXTS, "code", fit, SHAPES)["w.coef"], GOOD["w.coef"])
    semantic_cache.fitted(TEXTS, "code", fit, SHAPES)
    assert fit.calls == 2
