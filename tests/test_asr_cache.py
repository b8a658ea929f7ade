"""Whisper's on-disk transcripts (eval_backend/audio/asr.py, EMPATHY_ARENA_ASR_CACHE): what the test suite's second
database pass reads instead of decoding the demo clips again. Real parts: espeak-ng speech, Whisper tiny.en, two
processes sharing one folder.

The key is the samples' own hash and the decoder's: a caller's name for a clip (its `digest`) decides nothing, so a
stale or reused name can never return another clip's words.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import soundfile as sf

from eval_backend.audio.asr import ASR_CACHE_ENV, Transcriber
from tests.support.arena_fixtures import espeak_wav
from tests.support.baselines import ROOT

CHILD = """
import sys, soundfile as sf
from eval_backend.audio.asr import Transcriber
t = Transcriber()
t.model = None                      # a decode in this process would fail: every transcript must come from disk
x, sr = sf.read(sys.argv[1], dtype="float32")
print(t.transcribe("any name", x, sr))
"""


def test_another_process_reads_the_words_and_a_changed_clip_is_decoded_again(tmp_path, monkeypatch):
    monkeypatch.setenv(ASR_CACHE_ENV, str(tmp_path / "asr"))
    path = espeak_wav("The train was late again this morning.", tmp_path / "a.wav")
    x, sr = sf.read(path, dtype="float32")
    first = Transcriber()
    words = first.transcribe("a", x, sr)
    assert "train" in words.lower() and first.misses == 1
    assert len(list((tmp_path / "asr").rglob("*.txt"))) == 1

    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"HF_HUB_OFFLINE": "1", ASR_CACHE_ENV: str(tmp_path / "asr"),
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == words

    other = espeak_wav("My sister called me yesterday.", tmp_path / "b.wav")
    y, sr_y = sf.read(other, dtype="float32")
    again = Transcriber()
    heard = again.transcribe("a", y, sr_y)                 # the same name, other samples: decoded, not looked up
    assert "sister" in heard.lower() and heard != words
    nudged = x.copy()
    nudged[len(nudged) // 2] += np.float32(1 / 32768)     # one sample one step off: another clip
    before = len(list((tmp_path / "asr").rglob("*.txt")))
    again.transcribe("c", nudged, sr)
    assert len(list((tmp_path / "asr").rglob("*.txt"))) == before + 1


def test_without_the_setting_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(ASR_CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    path = espeak_wav("Nothing is kept.", tmp_path / "a.wav")
    x, sr = sf.read(path, dtype="float32")
    Transcriber().transcribe("a", x, sr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]
