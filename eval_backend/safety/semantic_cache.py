"""The example bank's sentence embeddings (all-mpnet-base-v2 since semantic-11) and the layer's regressions fitted on
them, kept on disk so a process's first screen neither embeds the whole bank (issue 26: the first call took tens of
seconds on a loaded CPU) nor fits it again (~5 CPU-s a process; issue 25).

One .npy file per (bank sentences in order, model and the sha256 of its weights): the key changes with any sentence
or model, so an edited bank never reads stale vectors; one .npz of regressions per (that key, the labelled bank's digest, the fitting
code's sha256, scikit-learn's and numpy's versions). The same folder holds the extracted model (scoring/mpnet.py).
The folder is EMPATHY_ARENA_SAFETY_CACHE, else $XDG_CACHE_HOME (or
~/.cache)/empathy-arena/safety — the user's own cache, not a shared temporary folder another local user could plant a
file in. A file is loaded without pickle and used only when its shapes match the bank and every value is finite;
anything else (missing, unreadable, wrong shape, a read-only disk) falls back to embedding the bank (or fitting),
and a failed write is not an error. Nothing is downloaded.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
import zipfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from .. import user_cache
from ..scoring import mpnet

TURN_WAIT_S = 600.0       # an embedding of the whole bank takes ~3 CPU-minutes


def folder() -> Path:
    return user_cache.folder("safety", "EMPATHY_ARENA_SAFETY_CACHE")


def _model_version() -> str:
    return mpnet.model_version()


def key(texts: list[str]) -> str:
    """What the vectors depend on: the texts in order and the model (its weights' sha256)."""
    h = hashlib.sha256(f"{_model_version()}\n".encode())
    for text in texts:
        h.update(text.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


def path_for(texts: list[str]) -> Path:
    return folder() / f"bank-{key(texts)}.npy"


def _load(path: Path, n: int) -> np.ndarray | None:
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape[0] != n or vectors.dtype != np.float32 or not np.isfinite(vectors).all():
        return None
    return vectors


def _save(path: Path, write: Callable[[BinaryIO], None]) -> bool:
    """`write` into a temporary file beside `path`, then renamed over it: a reader never sees half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
        return True
    except OSError:
        return False   # a read-only or full disk: the next process embeds (or fits) again


def bank_vectors(texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """`embed(texts)` for the bank's sentences, read from the cache file when it holds them. Processes that find no
    file take turns (an exclusive lock beside it): the first embeds the bank (minutes of CPU for ~5,500 sentences),
    the others then read its file instead of embedding the same bank at once — a Space's workers, a test run's."""
    path = path_for(texts)
    cached = _load(path, len(texts))
    if cached is not None:
        return cached
    with _turn(path):
        cached = _load(path, len(texts))          # written by the process we waited for
        if cached is not None:
            return cached
        vectors = np.asarray(embed(texts), dtype=np.float32)
        if _save(path, lambda fh: np.save(fh, vectors, allow_pickle=False)):
            # safe to remove while held: from now on a newcomer finds the file and takes no lock, and a waiter
            # re-reads the file once it has its turn
            with suppress(OSError):
                path.with_suffix(".lock").unlink()
        return vectors


def fitted(texts: list[str], fingerprint: str, fit: Callable[[], dict[str, np.ndarray]],
           shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """`fit()` — the layer's regressions on the bank `texts`, named arrays — read from `fit-<key>.npz` when it holds
    exactly `shapes` with finite values: each process that screens used to fit them again (~5 CPU-s for bank-14).
    The key is the bank's (sentences and model) and `fingerprint` (the labels, the fitting code and libraries). No lock: a fit
    is seconds, and two processes fitting at once write the same file."""
    h = hashlib.sha256(f"{key(texts)}\n{fingerprint}".encode())
    path = folder() / f"fit-{h.hexdigest()[:32]}.npz"
    cached = _load_arrays(path, shapes)
    if cached is not None:
        return cached
    weights = fit()
    _save(path, lambda fh: np.savez(fh, **weights))
    return weights


def _load_arrays(path: Path, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    if sorted(arrays) != sorted(shapes):
        return None
    for name, array in arrays.items():
        if array.shape != shapes[name] or array.dtype.kind != "f" or not np.isfinite(array).all():
            return None
    return arrays


@contextmanager
def _turn(path: Path):
    """Hold an exclusive lock on `path`'s lock file; without one (no folder, a read-only disk) go on unlocked. The
    kernel drops the lock when its holder exits, so a killed process never leaves the others waiting; a lock held
    longer than TURN_WAIT_S (a stuck holder, or another local user's process when the cache folder is shared) is
    waited out, never forever."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + TURN_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:       # held far longer than an embedding takes: go on unlocked
                    break
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)
