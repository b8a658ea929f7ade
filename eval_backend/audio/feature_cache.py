"""A clip's features kept on disk by content, for re-scoring without measuring every clip again.

`measure(samples, sr)` is `features.extract` unless EMPATHY_ARENA_FEATURE_CACHE names a folder: then the features
of the same samples are read from one small JSON file per (samples, analysis code) hash, written atomically, so a
second scoring of stored replies (a new metric, a re-run, the test suite's second database pass) measures only
what it has not measured before. The key holds the samples and their rate, the source of features.py and the
versions of the libraries it measures with (numpy, scipy, Praat's parselmouth): a change to any of them measures
again. A file that cannot be read or does not hold the fields is measured again and rewritten; a failed write is
not an error. Off by default, like the transcript cache (eval_backend/audio/asr.py, EMPATHY_ARENA_ASR_CACHE).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

from . import features
from .io import samples_key, write_text_atomically

FEATURE_CACHE_ENV = "EMPATHY_ARENA_FEATURE_CACHE"


@lru_cache(maxsize=1)
def analysis_fingerprint() -> str:
    """What decides the features of given samples: the analysis code and the libraries it calls."""
    h = hashlib.sha256(Path(features.__file__).read_bytes())
    for package in ("numpy", "scipy", "praat-parselmouth"):
        try:
            h.update(f"|{package} {metadata.version(package)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"|{package} none".encode())
    return h.hexdigest()


def path_for(folder: Path, samples: np.ndarray, sr: int) -> Path:
    key = samples_key(analysis_fingerprint(), samples, sr)
    return folder / key[:2] / f"{key}.json"


def _read(path: Path) -> features.Features | None:
    try:
        return features.Features(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _write(path: Path, found: features.Features) -> None:
    try:
        write_text_atomically(path, json.dumps(dataclasses.asdict(found)))
    except OSError:
        pass              # a read-only or full disk: the next scoring measures the clip again


def measure(samples: np.ndarray, sr: int) -> features.Features:
    """`features.extract(samples, sr)`, read from EMPATHY_ARENA_FEATURE_CACHE when it holds these samples."""
    folder = os.environ.get(FEATURE_CACHE_ENV, "").strip()
    if not folder:
        return features.extract(samples, sr)
    path = path_for(Path(folder), samples, sr)
    kept = _read(path)
    if kept is not None:
        return kept
    found = features.extract(samples, sr)    # raises on unusable audio, before anything is written
    _write(path, found)
    return found
