"""The features kept on disk (eval_backend/audio/feature_cache.py): off by default; on, the same samples are measured
once, and anything that changes what would be measured (the samples, their rate, the analysis code) measures again;
a bad file or a read-only folder measures again and loses nothing."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from eval_backend.audio import feature_cache, features
from eval_backend.audio.feature_cache import FEATURE_CACHE_ENV, measure

SR = 16_000


def _tone(hz: float = 180.0, seconds: float = 1.2) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)           # a syllable-like swell, so rate and pitch are set
    return (0.3 * envelope * np.sin(2 * np.pi * hz * t)).astype(np.float32)


@pytest.fixture
def counted(monkeypatch):
    """features.extract, counting its calls."""
    calls = []
    real = features.extract

    def extract(samples, sr):
        calls.append(sr)
        return real(samples, sr)
    monkeypatch.setattr(features, "extract", extract)
    return calls


def test_off_by_default_measures_every_time_and_writes_nothing(monkeypatch, tmp_path, counted):
    monkeypatch.delenv(FEATURE_CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    x = _tone()
    assert measure(x, SR) == measure(x, SR) == features.extract(x, SR)
    assert len(counted) == 3 and not any(tmp_path.iterdir())


def test_the_same_samples_are_measured_once_and_read_back_equal(monkeypatch, tmp_path, counted):
    monkeypatch.setenv(FEATURE_CACHE_ENV, str(tmp_path))
    x = _tone()
    first = measure(x, SR)
    assert len(counted) == 1 and first == features.Features(**dataclasses.asdict(first))
    assert measure(x.copy(), SR) == first and len(counted) == 1              # read from disk: not measured
    assert len(list(tmp_path.rglob("*.json"))) == 1
    # anything that changes the measurement measures again: other samples, another rate, another analysis code
    measure(_tone(220.0), SR)
    measure(x, 22_050)
    assert len(counted) == 3
    monkeypatch.setattr(feature_cache, "analysis_fingerprint", lambda: "features.py edited")
    assert measure(x, SR) == first and len(counted) == 4


def test_a_bad_file_is_measured_again_and_rewritten(monkeypatch, tmp_path, counted):
    monkeypatch.setenv(FEATURE_CACHE_ENV, str(tmp_path))
    x = _tone()
    good = measure(x, SR)
    path = feature_cache.path_for(tmp_path, x, SR)
    for bad in ("{not json", "[1, 2]", json.dumps({"duration_s": 1.0}), ""):
        path.write_text(bad)
        assert measure(x, SR) == good
        assert features.Features(**json.loads(path.read_text())) == good
    assert len(counted) == 5


def test_unusable_audio_still_raises_and_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setenv(FEATURE_CACHE_ENV, str(tmp_path))
    for bad in (np.zeros(0, np.float32), np.array([0.1, np.nan], np.float32)):
        with pytest.raises(ValueError):
            measure(bad, SR)
    assert not list(tmp_path.rglob("*.json"))


def test_a_folder_that_cannot_be_written_measures_and_answers(monkeypatch, tmp_path, counted):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(FEATURE_CACHE_ENV, str(blocker / "features"))
    x = _tone()
    assert measure(x, SR) == measure(x, SR) == features.extract(x, SR)
    assert len(counted) == 3
