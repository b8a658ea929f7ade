"""The chat client against a real loopback server that misbehaves: every fault lands in its failure class."""
from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import logging
import subprocess
import time

import numpy as np
import pytest

from eval_backend.audio.io import BadAudio, decode_wav_bytes, encode_wav, read_wav
from eval_backend.clients.failures import parse_retry_after, redact
from eval_backend.clients.openai_chat import StreamAssembler, check_wav_complete, decode_chunks, extract, strip_audio
from eval_backend.config import ModelSpec
from eval_backend.runner import RetryPolicy, run_model
from eval_backend.store import Store
from tests.support.fault_server import REPLY_RATE, FaultServer, make_benchmark

FAULTS = {  # marker -> (status, error class, attempts with max_attempts=3)
    "": ("ok", None, 1),
    "[fault:hang]": ("failed", "timeout", 3),
    "[fault:500]": ("failed", "http_5xx", 3),
    "[fault:500:1]": ("ok", None, 2),
    "[fault:429]": ("failed", "rate_limited", 3),
    "[fault:400]": ("failed", "http_4xx", 1),
    "[fault:garbage]": ("failed", "malformed_body", 1),
    "[fault:nochoices]": ("failed", "malformed_body", 1),
    "[fault:nocontent]": ("failed", "malformed_body", 1),
    "[fault:badb64]": ("failed", "bad_audio", 1),
    "[fault:truncwav]": ("failed", "bad_audio", 1),
    "[fault:omni]": ("ok", None, 1),
    "[fault:parts]": ("ok", None, 1),
}
FAST = RetryPolicy(max_attempts=3, base_s=0.02, cap_s=0.5)


@pytest.fixture(scope="module")
def user_wav(tmp_path_factory):
    path = tmp_path_factory.mktemp("voice") / "user.wav"
    subprocess.run(["espeak-ng", "-w", str(path), "I lost my keys again and I am late."], check=True)
    return path


@pytest.fixture(scope="module")
def server():
    with FaultServer(retry_after=0.3, hang_s=20) as srv:
        yield srv


def spec_for(srv: FaultServer, **kw) -> ModelSpec:
    base = dict(name="m", base_url=srv.base_url, model="fault", audio_output=True, voice="verse", timeout_s=1.5)
    return ModelSpec(**{**base, **kw})


def run(spec, bench, store, **kw):
    return asyncio.run(run_model(spec, bench, store, kw.pop("concurrency", 8), progress=False, **kw))


def test_every_fault_gets_its_class_and_the_run_finishes(tmp_path, server, user_wav):
    contexts = list(FAULTS)
    bench = make_benchmark(tmp_path / "b", contexts, name="classes", audio=user_wav, flagged=1)
    store = Store(tmp_path / "data")
    summary = run(spec_for(server), bench, store, policy=FAST)
    rows = {r.request_id: r for r in store.replies(model="m")}
    assert summary.unusable == 1 and "context/bad0/c0" not in rows
    assert len(rows) == len(FAULTS)
    for i, (marker, (status, cls, attempts)) in enumerate(FAULTS.items()):
        r = rows[f"context/g{i:04d}/c0"]
        assert (r.status, r.error_class, r.attempts) == (status, cls, attempts), marker
        assert server.counts[r.request_id] == attempts, marker
        if status == "failed":
            assert r.error_message and not r.text and not r.audio_path
        else:
            assert r.text and r.text.startswith("I hear you (context/") and r.latency_s > 0
            samples, sr = read_wav(store.abspath(r.audio_path))
            assert sr == REPLY_RATE and len(samples) == int(0.4 * REPLY_RATE)
            assert 0 < r.ttfab_s <= r.latency_s + 1e-9
            raw = json.loads(r.raw)
            assert "removed" in json.dumps(raw) and server.wav_b64 not in r.raw   # audio stripped from raw
    assert summary.ok == 4 and summary.failed == len(FAULTS) - 4
    assert summary.failures == {"timeout": 1, "http_5xx": 1, "rate_limited": 1, "http_4xx": 1,
                                "malformed_body": 3, "bad_audio": 2}
    # vLLM-Omni: text from choice 0, audio from choice 1, no transcript invented
    omni = rows[f"context/g{contexts.index('[fault:omni]'):04d}/c0"]
    assert omni.transcript is None and omni.audio_path
    parts = rows[f"context/g{contexts.index('[fault:parts]'):04d}/c0"]
    assert parts.text == f"I hear you ({parts.request_id})."


def test_payload_asks_for_audio_only_when_both_sides_want_it(tmp_path, server, user_wav):
    bench = make_benchmark(tmp_path / "b", ["plain"], name="payload", audio=user_wav)
    store = Store(tmp_path / "data")
    run(spec_for(server, name="speaker"), bench, store, policy=FAST)
    sent = server.payloads["context/g0000/c0"]
    assert sent["modalities"] == ["text", "audio"] and sent["audio"] == {"format": "wav", "voice": "verse"}
    assert sent["model"] == "fault" and sent["messages"][0]["role"] == "system"
    parts = sent["messages"][1]["content"]
    assert parts[0]["type"] == "input_audio" and parts[0]["input_audio"]["format"] == "wav"
    assert parts[0]["input_audio"]["data"] == len(base64.b64encode(user_wav.read_bytes()))  # no data: prefix
    assert parts[1] == {"type": "text", "text": "Context: plain"}
    # a text-only model: no modalities, and the reply is text only
    run(spec_for(server, name="texter", audio_output=False), bench, Store(tmp_path / "data2"), policy=FAST)
    sent = server.payloads["context/g0000/c0"]
    assert "modalities" not in sent and "audio" not in sent
    (r,) = Store(tmp_path / "data2").replies(model="texter")
    assert r.status == "ok" and r.audio_path is None and r.ttfab_s is None


def test_429_then_ok_waits_out_retry_after(tmp_path, user_wav):
    with FaultServer(retry_after=0.6) as srv:
        bench = make_benchmark(tmp_path / "b", ["[fault:429:2]"], name="retry", audio=user_wav)
        store = Store(tmp_path / "data")
        policy = RetryPolicy(max_attempts=4, base_s=0.01, cap_s=5)
        summary = run(spec_for(srv), bench, store, policy=policy)
        (r,) = store.replies()
        assert r.status == "ok" and r.attempts == 3 and summary.attempts == 3
        times = srv.times["context/g0000/c0"]
        gaps = np.diff(times)
        assert len(times) == 3 and all(g >= 0.6 for g in gaps), gaps   # the server's wait was honoured
        assert all(g < 2.0 for g in gaps), gaps                          # and not much longer


def test_retry_after_is_capped(tmp_path, user_wav):
    with FaultServer(retry_after=3600) as srv:
        bench = make_benchmark(tmp_path / "b", ["[fault:429:1]"], name="cap", audio=user_wav)
        t0 = time.monotonic()
        run(spec_for(srv), bench, Store(tmp_path / "data"), policy=RetryPolicy(max_attempts=2, base_s=0.01, cap_s=0.3))
        assert time.monotonic() - t0 < 3
        (r,) = Store(tmp_path / "data").replies()
        assert r.status == "ok" and r.attempts == 2


def test_streaming_only_provider(tmp_path, user_wav):
    with FaultServer(stream_only=True) as srv:
        bench = make_benchmark(tmp_path / "b", ["plain", "[fault:streamwav]", "[fault:badb64]", "[fault:500]", "[fault:weird]"],
                               name="stream", audio=user_wav)
        # without stream=True the provider refuses: a 4xx, not retried
        run(spec_for(srv, name="nostream"), bench, Store(tmp_path / "d1"), policy=FAST, tasks=["context"], limit=1)
        (r,) = Store(tmp_path / "d1").replies()
        assert r.error_class == "http_4xx" and "stream" in r.error_message
        store = Store(tmp_path / "d2")
        run(spec_for(srv, name="streamer", stream=True), bench, store, policy=FAST)
        rows = {r.request_id: r for r in store.replies()}
        for rid in ("context/g0000/c0", "context/g0001/c0"):
            r = rows[rid]
            assert r.status == "ok" and r.text == f"I hear you ({rid}). " and r.transcript == f"I hear you ({rid})."
            samples, sr = read_wav(store.abspath(r.audio_path))
            assert sr == REPLY_RATE and abs(len(samples) - int(0.4 * REPLY_RATE)) <= 1
            assert np.corrcoef(samples, srv_tone(len(samples)))[0, 1] > 0.99   # the bytes sent, reassembled
            assert 0 < r.ttfab_s <= r.latency_s
            assert srv.payloads[rid]["stream"] is True
        assert rows["context/g0002/c0"].error_class == "bad_audio"
        assert rows["context/g0003/c0"].error_class == "http_5xx" and rows["context/g0003/c0"].attempts == 3
        assert rows["context/g0004/c0"].error_class == "malformed_body" and "shape" in rows["context/g0004/c0"].error_message


def srv_tone(n: int) -> np.ndarray:
    from tests.support.fault_server import tone_pcm
    return tone_pcm()[:n]


def test_api_key_never_stored_nor_logged(tmp_path, user_wav, monkeypatch, caplog, capsys):
    secret = "sk-test-" + "Zq9" * 12 + "tail"
    monkeypatch.setenv("FAULT_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with FaultServer(retry_after=0.05) as srv:
        bench = make_benchmark(tmp_path / "b", ["[fault:echo-key]", "[fault:500]", "[fault:garbage]", "[fault:hang]",
                                                 "[fault:429]", "plain"], name="secret", audio=user_wav)
        store = Store(tmp_path / "data")
        run(spec_for(srv, api_key_env="FAULT_KEY", timeout_s=0.5), bench, store, policy=FAST)
        assert srv.auth_seen and all(a == f"Bearer {secret}" for a in srv.auth_seen)   # the key was really sent
    rows = store.replies()
    echoed = next(r for r in rows if r.request_id == "context/g0000/c0")
    assert echoed.error_class == "http_4xx" and "***" in echoed.error_message   # the echo was there, and redacted
    assert "context/g0000/c0 failed" in caplog.text and "Incorrect API key" in caplog.text   # failures were logged
    for fragment in (secret, secret[:8], secret[-8:]):
        for r in rows:
            assert fragment not in json.dumps(r.__dict__)
        for f in (tmp_path / "data").rglob("store.sqlite3*"):
            assert fragment.encode() not in f.read_bytes()
        if store.dialect == "postgresql":                  # every row of every table
            for (table,) in store.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"):
                assert fragment not in json.dumps([list(r) for r in store.query(f"SELECT * FROM {table}")],
                                                  default=str)
        out = capsys.readouterr()
        assert fragment not in caplog.text + out.out + out.err


# --- pure parts -----------------------------------------------------------------------------

def test_extract_merges_choices_and_rejects_empty():
    body = {"choices": [{"index": 0, "message": {"content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}},
                        {"index": 1, "message": {"content": None, "audio": {"data": "QUJD", "transcript": ""}}}]}
    assert extract(body) == ("Hi there", None, "QUJD")
    with pytest.raises(Exception, match="no choices"):
        extract({"error": {"message": "overloaded"}})
    with pytest.raises(Exception, match="no content"):
        extract({"choices": [{"message": {"content": "  "}}]})
    assert "QUJD" * 40 not in json.dumps(strip_audio({"choices": [{"message": {"audio": {"data": "QUJD" * 40}}}]}))


def test_wav_truncation_and_stream_chunks():
    wav = encode_wav(np.zeros(8000, dtype=np.float32), 16000)
    check_wav_complete(wav)
    with pytest.raises(BadAudio, match="truncated"):
        check_wav_complete(wav[:-100])
    b64 = base64.b64encode(wav).decode()
    assert decode_chunks([b64[i:i + 7] for i in range(0, len(b64), 7)]) == wav      # one string cut anywhere
    pieces = [base64.b64encode(wav[i:i + 300]).decode() for i in range(0, len(wav), 300)]
    assert decode_chunks(pieces) == wav                                              # each piece on its own
    a = StreamAssembler(pcm_rate=16000)
    pcm = (np.ones(1600) * 1000).astype("<i2").tobytes()
    a.feed({"choices": [{"index": 0, "delta": {"content": "ok"}}]})
    assert a.feed({"choices": [{"index": 0, "delta": {"audio": {"data": base64.b64encode(pcm).decode()}}}]})
    text, _, audio = extract(a.body())
    samples, sr = decode_wav_bytes(base64.b64decode(audio))
    assert text == "ok" and sr == 16000 and len(samples) == 1600
    mp3 = StreamAssembler()
    mp3.feed({"choices": [{"index": 0, "delta": {"audio": {"data": base64.b64encode(b"ID3\x04" + bytes(96)).decode()}}}]})
    with pytest.raises(Exception, match="compressed format"):
        mp3.body()


def test_retry_after_forms_and_redaction():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": future}, now=time.time()) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None
    key = "sk-abcdefgh12345678wxyz9876"
    assert redact(f"bad key {key}.", [key]) == "bad key ***."
    assert redact(f"provided: {key[:8]}****{key[-8:]}", [key]) == "provided: " + "*" * 10
    assert redact("no secret here", [None, ""]) == "no secret here"
