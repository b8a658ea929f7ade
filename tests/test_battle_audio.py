"""What a voter hears in a battle (issue 22, arena/services/battle_audio.py): one format, one loudness, no metadata.

Real parts: espeak-ng speech, soundfile writing wav, flac and float wav with metadata chunks, the arena's media
route on FastAPI's test client, pyloudnorm measuring what the route sends.
"""
from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from fastapi import FastAPI
from fastapi.testclient import TestClient

from arena.services import battle_audio as ba
from arena.web.media import mount_media
from arena.services.service import ArenaService
from eval_backend.store import Reply, Store
from tests.support.arena_fixtures import build_benchmark, espeak_wav, spoken_request_ids


def chunks(data: bytes) -> list[str]:
    """The chunk ids of a RIFF/WAVE file, in order."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    out, pos = [], 12
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4].decode("latin-1"), struct.unpack("<I", data[pos + 4:pos + 8])[0]
        out.append(cid)
        pos += 8 + size + (size & 1)
    return out


def with_info_chunk(wav: bytes, text: bytes) -> bytes:
    """The wav with a LIST/INFO chunk naming its maker appended (what a provider's encoder may leave in)."""
    body = b"INFO" + b"ISFT" + struct.pack("<I", len(text)) + text
    extra = b"LIST" + struct.pack("<I", len(body)) + body
    out = wav + extra
    return out[:4] + struct.pack("<I", len(out) - 8) + out[8:]


def lufs(data: bytes) -> float:
    x, sr = sf.read(io.BytesIO(data), dtype="float64")
    return pyloudnorm.Meter(sr).integrated_loudness(x)


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> np.ndarray:
    path = espeak_wav("I am so sorry, that sounds really hard. Tell me what happened.",
                      tmp_path_factory.mktemp("speech") / "s.wav")
    x, sr = sf.read(path, dtype="float32")
    assert sr == 22050
    return x


def encoded(samples: np.ndarray, sr: int, fmt: str, subtype: str, channels: int = 1) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, np.stack([samples] * channels, axis=1) if channels > 1 else samples, sr, format=fmt,
             subtype=subtype)
    return buf.getvalue()


def test_normalise_reaches_the_target_under_the_peak_ceiling(speech):
    from scipy.signal import resample_poly
    for gain in (0.02, 0.3, 1.0, 4.0):                     # -45 LUFS up to clipped and loud
        x = np.clip(speech * gain, -1, 1)
        heard, stats = ba.normalise(x, 22050)
        assert abs(stats["lufs"] - ba.TARGET_LUFS) < 0.3, (gain, stats)
        assert stats["peak_dbtp"] <= ba.PEAK_DBTP + 0.05
        assert stats["source_lufs"] == pytest.approx(ba.loudness(resample_poly(x.astype(np.float64), 160, 147),
                                                                 ba.RATE), abs=0.01)
        assert len(heard) == pytest.approx(len(x) * ba.RATE / 22050, abs=2)
    silent, stats = ba.normalise(np.zeros(8000, dtype=np.float32), 16000)
    assert not np.any(silent) and stats["lufs"] is None and stats["source_lufs"] is None    # no gain on silence
    short, stats = ba.normalise(speech[:4000] * 0.1, 22050)      # shorter than BS.1770's 400 ms block
    assert abs(stats["lufs"] - ba.TARGET_LUFS) < 0.5


def test_a_clip_at_the_target_with_clicks_over_the_ceiling_is_limited_not_turned_down(speech):
    """A check clip cut into shuffled pieces is at the target loudness already but its cuts click over the peak
    ceiling: it must come out at the target (the CI failure of stop 31: -16.9 LUFS, trimmed whole by 0.9 dB)."""
    heard, _ = ba.normalise(speech, 22050)
    clicky = heard.copy()
    clicky[2000::6000], clicky[2001::6000] = 0.99, -0.99              # sharp cuts: true peaks over -1 dBTP
    clicky *= 10 ** ((ba.TARGET_LUFS - ba.loudness(clicky, ba.RATE)) / 20)
    assert ba.loudness(clicky, ba.RATE) == pytest.approx(ba.TARGET_LUFS, abs=0.01)
    assert ba.true_peak_dbtp(clicky) > ba.PEAK_DBTP + 0.5
    out, stats = ba.normalise(clicky, ba.RATE)
    assert stats["lufs"] == pytest.approx(ba.TARGET_LUFS, abs=0.1) and stats["peak_dbtp"] <= ba.PEAK_DBTP + 0.05
    assert ba.loudness(out, ba.RATE) == pytest.approx(ba.TARGET_LUFS, abs=0.1)


def test_heard_wav_has_no_metadata_chunk(speech):
    source = with_info_chunk(encoded(speech, 22050, "WAV", "FLOAT"), b"vendor-tts 2.1")
    assert "LIST" in chunks(source)
    heard, facts = ba.make_heard(source)
    assert chunks(heard) == ["fmt ", "data"] and b"vendor" not in heard
    info = sf.info(io.BytesIO(heard))
    assert (info.samplerate, info.channels, info.subtype) == (ba.RATE, 1, "PCM_16")
    assert facts["seconds"] == pytest.approx(info.frames / ba.RATE)


@pytest.fixture
def arena(tmp_path, speech):
    """A benchmark whose user clip is a 44.1 kHz stereo flac, one model replying with a quiet 16 kHz wav carrying a
    LIST/INFO chunk, the other with a loud 22.05 kHz float wav: different loudness, formats and rates."""
    store = Store(tmp_path / "data")
    bench = build_benchmark(tmp_path / "data" / "benchmarks" / "demo", n_scripts=1)
    quiet = with_info_chunk(encoded(np.interp(np.arange(0, len(speech), 22050 / 16000), np.arange(len(speech)),
                                              speech) * 0.03, 16000, "WAV", "PCM_16"), b"quiet-vendor")
    loud = encoded(np.clip(speech * 3.0, -1, 1), 22050, "WAV", "FLOAT")
    words = {"quiet-model": "That sounds hard.", "loud-model": "Tell me what happened."}
    for model, data in (("quiet-model", quiet), ("loud-model", loud)):
        rel = store.save_reply_audio(model, data)
        for rid, task, item, variant in spoken_request_ids(bench):
            store.put_reply(Reply(model=model, benchmark_hash=bench.hash, request_id=rid, task=task, item_id=item,
                                  variant=variant, status="ok", text=words[model], transcript=words[model],
                                  audio_path=rel))
    from eval_backend.tasks import SPOKEN_TASKS, build_requests
    user = encoded(np.interp(np.arange(0, len(speech), 22050 / 44100), np.arange(len(speech)), speech), 44100,
                   "FLAC", "PCM_24", channels=2)
    for req in build_requests(bench, SPOKEN_TASKS):      # the user's clips become stereo 44.1 kHz flac
        for ref in req.audios:
            open(ref.path, "wb").write(user)
    svc = ArenaService(store, benchmarks=[bench])
    app = FastAPI()
    mount_media(app, svc)
    return svc, TestClient(app), {"quiet": quiet, "loud": loud, "user": user}


def test_battle_clips_are_served_alike_and_the_originals_stay(arena):
    svc, client, sources = arena
    assert abs(lufs(sources["quiet"]) - lufs(sources["loud"])) > 25        # what a voter would have heard
    view = svc.serve_battle("s1", "1.2.3.4")
    served = {}
    for clip, url in (("user", view.user_audio), ("A", view.audio_a), ("B", view.audio_b)):
        r = client.get(url)
        assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
        served[clip] = r.content
        assert chunks(r.content) == ["fmt ", "data"], clip                  # no metadata, whatever the source had
        info = sf.info(io.BytesIO(r.content))
        assert (info.samplerate, info.channels, info.subtype) == (ba.RATE, 1, "PCM_16"), clip
        assert abs(lufs(r.content) - ba.TARGET_LUFS) < 0.5, clip            # measured on what was sent
        # the listening rule counts the heard clip's length
        assert view.listening["clips"][clip]["seconds"] == pytest.approx(info.frames / ba.RATE)
    assert abs(lufs(served["A"]) - lufs(served["B"])) < 0.5
    assert b"quiet-vendor" not in served["A"] + served["B"]
    for model in ("quiet-model", "loud-model"):             # scoring still reads the stored originals
        reply = svc.store.replies(model=model)[0]
        kept = svc.store.abspath(reply.audio_path).read_bytes()
        assert kept in (sources["quiet"], sources["loud"])
    made = sorted(p.name for p in (svc.store.root / ba.HEARD_DIR).rglob("*.wav"))
    assert len(made) == 3                                    # one heard file per source content, not per battle
    svc.serve_battle("s2", "1.2.3.4")
    assert sorted(p.name for p in (svc.store.root / ba.HEARD_DIR).rglob("*.wav")) == made
    covariates = svc.heard_clip(view.battle_id, "A").covariates()      # what a per-battle record reads
    assert abs(covariates["lufs"] - ba.TARGET_LUFS) < 0.5 and covariates["speaking_rate"] > 0
    assert covariates["source_lufs"] < -40 or covariates["source_lufs"] > -15


def test_live_battle_clips_are_served_as_heard(tmp_path):
    """A live battle's three clips (a 16 kHz upload, two 24 kHz replies of their own loudness) reach the voter in the
    one format at the one loudness; the originals stay in the battle's folder (a release copies them)."""
    import httpx

    from tests.support.fault_server import FaultServer
    from tests.support.live_fixtures import LiveApp, post_live, spec, wav
    tone = wav(0.05 * np.sin(np.arange(32000) / 5))
    with FaultServer(tone_hz=262.0) as a, FaultServer(tone_hz=392.0) as b, \
            LiveApp(tmp_path, [spec("alpha-voice", a.base_url), spec("beta-voice", b.base_url)], screen=None,
                    transcribe=lambda s, sr: "x") as app, httpx.Client(base_url=app.url, timeout=30) as c:
        r = post_live(c, tone)
        assert r.status_code == 200, r.text
        body = r.json()
        folder = Path(app.store.root) / "live" / body["battle_id"]
        for clip in ("user", "A", "B"):
            served = c.get(body["audio"][clip]).content
            assert chunks(served) == ["fmt ", "data"]
            info = sf.info(io.BytesIO(served))
            assert (info.samplerate, info.channels, info.subtype) == (ba.RATE, 1, "PCM_16")
            assert abs(lufs(served) - ba.TARGET_LUFS) < 0.5, clip
            assert body["listening"]["clips"][clip]["seconds"] == pytest.approx(info.frames / ba.RATE)
            assert (folder / f"{clip}.wav").read_bytes() != served
        assert (folder / "user.wav").read_bytes()[:4] == b"RIFF" and sf.info(folder / "user.wav").samplerate == 16000
