"""The committed Whisper transcripts (tests/support/whisper_seed.py) are Whisper's own words for those clips.

A sample of the clips the seed covers, decoded afresh here with no transcript folder, must give exactly the seed's
words under the key this machine computes; on a machine whose decoder the seed does not hold, nothing is seeded.
A seed that holds this machine's decoder but misses a sampled clip is stale: the failure says how to refresh it.
"""
from __future__ import annotations

import json

import pytest

from eval_backend.audio.asr import ASR_CACHE_ENV, DiskTranscripts, Transcriber
from eval_backend.audio.io import decode_wav_bytes
from eval_backend.baselines.real_voices import recordings
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.tasks import build_requests
from tests.support import whisper_seed

REFRESH = "stale seed: run the suite, then `python -m tests.support.whisper_seed --harvest <its transcript folder>`"


@pytest.fixture(scope="module")
def fresh():
    """A transcriber that reads and writes no transcript folder: every clip is decoded."""
    with pytest.MonkeyPatch.context() as env:
        env.delenv(ASR_CACHE_ENV, raising=False)
        asr = Transcriber()
    assert asr._disk is None
    return asr


@pytest.fixture(scope="module")
def seeded():
    return whisper_seed.for_this_machine()


def _check(asr, seeded, clips) -> int:
    decoder, entries = seeded
    keys = DiskTranscripts(whisper_seed.SEED.parent, decoder)
    for name, samples, sr in clips:
        words = asr.transcribe(name, samples, sr)
        key = keys.path(samples, sr).stem
        if entries:
            assert key in entries, (name, REFRESH)
            assert entries[key] == words, (name, entries[key], words)
    return len(clips)


def test_real_recordings_the_seed_holds_are_decoded_to_the_same_words(fresh, seeded):
    rows = recordings("validation")[::37]                    # 8 of the 294, from every package in turn
    assert _check(fresh, seeded, [(r.id, *r.load()) for r in rows]) == 8


@pytest.mark.store_incidental("Whisper's words for the demo's clips: the demo run only made them")
def test_demo_clips_the_seed_holds_are_decoded_to_the_same_words(fresh, seeded, demo_run):
    bench = load_benchmark("demo", demo_run.data)
    refs = sorted({a.sha256: a for r in build_requests(bench) for a in r.audios if a.path}.values(), key=lambda a: a.sha256)
    sample = refs[:: max(1, len(refs) // 6)][:6]
    clips = [(a.sha256, *decode_wav_bytes(open(a.path, "rb").read())) for a in sample]   # as the baseline server
    assert _check(fresh, seeded, clips) == 6


def test_seed_round_trip_keeps_words_and_writes_only_this_decoders_entries(tmp_path):
    made = tmp_path / "made"
    DiskTranscripts.write(made / "ab" / "abc.txt", "hello there")
    DiskTranscripts.write(made / "cd" / "cde.txt", "a second clip, with a comma")
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"another machine's decoder": {"ef0": "not for us"}}))
    assert whisper_seed.harvest(made, seed) == (2, 2)
    assert whisper_seed.harvest(made, seed) == (0, 2)         # a second harvest adds nothing
    into = tmp_path / "into"
    assert whisper_seed.seed_into(into, seed) == 2
    assert sorted(p.relative_to(into).as_posix() for p in into.rglob("*.txt")) == ["ab/abc.txt", "cd/cde.txt"]
    assert (into / "cd" / "cde.txt").read_text() == "a second clip, with a comma"
    assert whisper_seed.seed_into(into, seed) == 0            # present files are left as they are
    assert set(json.loads(seed.read_text())) == {"another machine's decoder", whisper_seed.for_this_machine()[0]}
