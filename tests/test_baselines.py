"""The baseline server as a subprocess on loopback: real espeak-ng audio, real Whisper, real HTTP."""
from __future__ import annotations

import asyncio
import base64
import os
import subprocess

import httpx
import jiwer
import pytest

from eval_backend.audio.features import extract
from eval_backend.audio.io import decode_wav_bytes
from eval_backend.baselines import cues as cue_mod
from eval_backend.baselines.replies import parse_prompt
from eval_backend.benchmark.model import AudioRef
from eval_backend.clients.openai_chat import call
from eval_backend.config import ModelSpec
from tests.support.baselines import ROOT, BaselineServer, free_port  # noqa: F401
from eval_backend.tasks import SYSTEM_ASR, SYSTEM_CONVERSATION, SYSTEM_MCQ, SYSTEM_SELECTION, Request

SENTENCE = "I went to the market this morning and bought some apples for the weekend."
REPLY_WORDS = "I am here for you, and we can talk about it whenever you want."


def espeak(text: str, *args: str) -> bytes:
    return subprocess.run(["espeak-ng", "--stdout", *args, text], capture_output=True, check=True).stdout


def sad_voice(text: str) -> bytes:
    """Slow, low, soft espeak-ng speech, muffled by a 1.8 kHz low-pass: a sad delivery."""
    import numpy as np
    from scipy import signal

    from eval_backend.audio.io import encode_wav
    x, sr = decode_wav_bytes(espeak(text, "-s", "115", "-p", "28", "-a", "65"))
    y = signal.sosfilt(signal.butter(2, 1800, fs=sr, output="sos"), x)
    return encode_wav(y * np.sqrt(np.mean(x ** 2) / np.mean(y ** 2)), sr)


@pytest.fixture(scope="module")
def server():
    with BaselineServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    return {
        "neutral": espeak(SENTENCE),
        "sad": sad_voice(SENTENCE),
        "reply_plain": espeak(REPLY_WORDS),
        "reply_gentle": espeak(REPLY_WORDS, "-s", "130", "-p", "36", "-a", "55"),
    }


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def chat(srv: BaselineServer, model: str, system: str, text: str, wavs: list[bytes], audio: bool = False,
         **extra) -> httpx.Response:
    parts = [{"type": "input_audio", "input_audio": {"data": b64(w), "format": "wav"}} for w in wavs]
    if text:
        parts.append({"type": "text", "text": text})
    body = {"model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": parts}],
            **extra}
    if audio:
        body.update(modalities=["text", "audio"], audio={"voice": "default", "format": "wav"})
    return httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=60)


def message(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    return resp.json()["choices"][0]["message"]


def test_models_health_and_unknown_model(server):
    ids = [m["id"] for m in httpx.get(f"{server.base_url}/models").json()["data"]]
    assert ids == ["cascade-blind", "cascade-cue", "cascade-reflect-piper", "cascade-advice-cue"]
    assert httpx.get(f"{server.root}/health").json()["kind"] == "baseline"
    resp = chat(server, "gpt-nonexistent", SYSTEM_ASR, "", [espeak("hello")])
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "model_not_found"


def test_asr_transcript_matches_the_spoken_words(server, clips):
    for model in ("cascade-blind", "cascade-cue"):
        resp = chat(server, model, SYSTEM_ASR, "Please transcribe this.", [clips["neutral"]])
        assert resp.json()["system_fingerprint"].startswith("baseline")
        hyp = message(resp)["content"]
        wer = jiwer.wer(jiwer.RemovePunctuation()(SENTENCE.lower()), jiwer.RemovePunctuation()(hyp.lower()))
        assert wer <= 0.2, hyp


def test_spoken_reply_decodes_and_is_deterministic(server, clips):
    first = message(chat(server, "cascade-blind", SYSTEM_CONVERSATION, "", [clips["neutral"]], audio=True))
    again = message(chat(server, "cascade-blind", SYSTEM_CONVERSATION, "", [clips["neutral"]], audio=True))
    assert first["content"] == again["content"] and first["audio"]["data"] == again["audio"]["data"]
    assert first["audio"]["transcript"] == first["content"]
    samples, sr = decode_wav_bytes(base64.b64decode(first["audio"]["data"]))
    assert len(samples) / sr > 1.0
    assert "food" in first["content"].lower()                  # the topic (apples, market) steers the reply


def _spoken(server, model: str, wav: bytes, text: str = "") -> tuple[str, object, dict, bytes]:
    resp = chat(server, model, SYSTEM_CONVERSATION, text, [wav], audio=True)
    msg = message(resp)
    audio = base64.b64decode(msg["audio"]["data"])
    return msg["content"], extract(*decode_wav_bytes(audio)), resp.json()["baseline"], audio


def test_cue_names_a_whisper_it_hears_and_answers_softly(server, clips):
    whispered = espeak(SENTENCE, "-v", "en+whisper")
    text, cue, detail, _ = _spoken(server, "cascade-cue", whispered)
    _, blind, _, _ = _spoken(server, "cascade-blind", whispered)
    assert detail["cues"] == ["whisper"] and detail["confidence"]["whisper"] >= 0.5
    assert "quietly" in text
    assert cue.active_level_dbfs < blind.active_level_dbfs - 3.0, (cue.active_level_dbfs, blind.active_level_dbfs)


def test_cue_abstains_on_a_voice_real_recordings_do_not_support(server, clips):
    """The synthetic 'sad' voice (soft, slow, low, muffled): the older detector said sad and the reply said "you
    sound really down" in a sad delivery; level and pitch do not tell sadness on real recordings, so it abstains."""
    text, cue, detail, _ = _spoken(server, "cascade-cue", clips["sad"])
    blind_text, blind, _, _ = _spoken(server, "cascade-blind", clips["sad"])
    assert detail["cues"] == [] and "sad" in detail["guesses"]          # the guess stays for forced choices
    assert not any(w in text.lower() for w in ("down", "crying", "you sound", "i can hear"))
    assert detail["style"] == "neutral"
    assert abs(cue.speaking_rate - blind.speaking_rate) < 0.15 * blind.speaking_rate
    assert text != blind_text                       # its own wording, even when it hears nothing
    plain = chat(server, "cascade-cue", SYSTEM_CONVERSATION, "", [clips["neutral"]], audio=True).json()
    assert plain["baseline"]["cues"] == [] and plain["baseline"]["style"] == "neutral"


def test_the_four_contestants_differ_in_words_and_voice(server, clips):
    got = {m: _spoken(server, m, clips["neutral"]) for m in
           ("cascade-blind", "cascade-cue", "cascade-reflect-piper", "cascade-advice-cue")}
    assert len({g[0] for g in got.values()}) == 4, [g[0] for g in got.values()]
    assert len({g[3] for g in got.values()}) == 4
    assert got["cascade-reflect-piper"][0].startswith("So you went to the market")   # the speaker's words, back
    assert got["cascade-advice-cue"][0].split(".")[1].strip().startswith("Keep it simple")   # advice first
    # the neural voice is a recording-like voice of its own, the advice voice a female espeak-ng variant
    pitch = {m: g[1].pitch_median_hz for m, g in got.items()}
    assert pitch["cascade-advice-cue"] > 1.4 * pitch["cascade-blind"], pitch
    neural = decode_wav_bytes(got["cascade-reflect-piper"][3])
    assert neural[1] == 22_050 and len(neural[0]) / neural[1] > 2.0
    assert got["cascade-reflect-piper"][1].hnr_db != got["cascade-blind"][1].hnr_db


def test_mcq_cue_hears_the_emotion_blind_cannot(server, clips):
    text = "How does the speaker most likely feel?\nA. happy\nB. angry\nC. sad\nD. surprised"
    cue = message(chat(server, "cascade-cue", SYSTEM_MCQ, text, [clips["sad"]]))["content"]
    blind = message(chat(server, "cascade-blind", SYSTEM_MCQ, text, [clips["sad"]]))["content"]
    assert cue.strip().endswith("The answer is: C")
    assert blind.strip().splitlines()[-1].startswith("The answer is: ")
    # words only: an option naming what was said wins for blind
    words = "What did the speaker buy?\nA. shoes\nB. apples\nC. a car\nD. bread"
    assert message(chat(server, "cascade-blind", SYSTEM_MCQ, words, [clips["sad"]]))["content"].endswith(
        "The answer is: B")


@pytest.mark.parametrize("gentle_first", [True, False])
def test_selection_cue_picks_the_fitting_delivery(server, clips, gentle_first):
    order = ["reply_gentle", "reply_plain"] if gentle_first else ["reply_plain", "reply_gentle"]
    wavs = [clips["sad"]] + [clips[k] for k in order]
    text = "Context: a friend calls late at night.\nOptions: A, B (audio, in this order)"
    want = "A" if gentle_first else "B"
    cue = message(chat(server, "cascade-cue", SYSTEM_SELECTION, text, wavs))["content"]
    assert cue.endswith(f"The answer is: {want}")
    # same words in both options: blind cannot tell them apart and takes the first
    blind = message(chat(server, "cascade-blind", SYSTEM_SELECTION, text, wavs))["content"]
    assert blind.endswith("The answer is: A")


def test_streaming_through_the_project_client(server, clips, tmp_path):
    wav = tmp_path / "sad.wav"
    wav.write_bytes(clips["sad"])
    req = Request("conversation/x/target", "conversation", "x", "target", SYSTEM_CONVERSATION, "",
                  (AudioRef(str(wav)),), True)
    spec = ModelSpec(name="cascade-cue", base_url=server.base_url, model="cascade-cue", audio_output=True,
                     stream=True, timeout_s=60)

    answer = asyncio.run(call(None, spec, req, [b64(clips["sad"])]))   # the client opens its own session
    assert answer.ttfab_s is not None and answer.transcript == answer.text
    plain = message(chat(server, "cascade-cue", SYSTEM_CONVERSATION, "", [clips["sad"]], audio=True))
    assert answer.text == plain["content"]
    assert answer.audio == base64.b64decode(plain["audio"]["data"])


def test_bad_input_gets_a_clear_400_and_the_server_keeps_serving(server, clips):
    url = f"{server.base_url}/chat/completions"
    before = server.stats()["statuses"].get("400", 0)
    cases = {
        "invalid base64": [{"type": "input_audio", "input_audio": {"data": "%%% not base64 %%%", "format": "wav"}}],
        "cannot decode": [{"type": "input_audio", "input_audio": {"data": b64(b"RIFF" + os.urandom(600)),
                                                                   "format": "wav"}}],
        "no audio": [{"type": "text", "text": "hello?"}],
    }
    for name, parts in cases.items():
        resp = httpx.post(url, json={"model": "cascade-cue", "messages": [{"role": "user", "content": parts}]})
        assert resp.status_code == 400, name
        err = resp.json()["error"]
        assert err["type"] == "invalid_request_error" and err["message"], name
    assert "base64" in httpx.post(url, json={"model": "cascade-cue", "messages": [
        {"role": "user", "content": cases["invalid base64"]}]}).json()["error"]["message"]
    resp = httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and "JSON" in resp.json()["error"]["message"]
    assert server.stats()["statuses"]["400"] == before + 5
    assert message(chat(server, "cascade-blind", SYSTEM_ASR, "", [clips["neutral"]]))["content"]


def test_stats_count_requests_and_asr_cache(server, clips):
    before = server.stats()
    chat(server, "cascade-cue", SYSTEM_ASR, "Please transcribe this.", [clips["neutral"]])
    after = server.stats()
    assert after["requests"]["cascade-cue"]["asr"] == before["requests"].get("cascade-cue", {}).get("asr", 0) + 1
    assert after["asr_cache"]["hits"] == before["asr_cache"]["hits"] + 1     # clip transcribed earlier
    assert after["asr_cache"]["misses"] == before["asr_cache"]["misses"]


# --- the pure parts, on real espeak-ng audio ---------------------------------------------------

def features_of(data: bytes):
    return extract(*decode_wav_bytes(data))


def test_detector_on_espeak_deliveries():
    import numpy as np
    neutral = cue_mod.detect(features_of(espeak(SENTENCE)))
    assert neutral.labels == () and neutral.pace == "normal" and neutral.volume == "normal"
    assert cue_mod.detect(features_of(sad_voice(SENTENCE))).primary == "sad"
    assert "shout" in cue_mod.detect(features_of(espeak(SENTENCE, "-a", "200"))).labels
    assert cue_mod.detect(features_of(espeak(SENTENCE, "-v", "en+whisper"))).primary == "whisper"
    assert cue_mod.detect(features_of(espeak(SENTENCE, "-s", "250"))).pace == "fast"
    x, sr = decode_wav_bytes(espeak(SENTENCE))
    noise = np.random.default_rng(0).normal(0, 10 ** (-32 / 20), len(x))
    assert cue_mod.detect(extract(x + noise, sr)).noisy


def test_prompt_parsing_finds_each_task():
    assert parse_prompt(SYSTEM_ASR, "Please transcribe this.", 1).task == "asr"
    mcq = parse_prompt(SYSTEM_MCQ, "Which?\nA. one\nB. two", 1)
    assert mcq.task == "mcq" and mcq.options == (("A", "one"), ("B", "two")) and mcq.question == "Which?"
    assert parse_prompt(SYSTEM_SELECTION, "Context: x\nOptions: A, B", 3).task == "selection"
    ctx = parse_prompt(SYSTEM_CONVERSATION, "Context: her dog is ill", 1)
    assert ctx.task == "context" and ctx.context == "her dog is ill"
    assert parse_prompt(SYSTEM_CONVERSATION, "", 1).task == "conversation"


def test_pcm16_output_and_audio_url_input(server, clips):
    url = f"{server.base_url}/chat/completions"
    body = {"model": "cascade-blind", "modalities": ["text", "audio"], "audio": {"voice": "x", "format": "pcm16"},
            "messages": [{"role": "user", "content": [
                {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64," + b64(clips["neutral"])}}]}]}
    msg = message(httpx.post(url, json=body, timeout=60))
    pcm = base64.b64decode(msg["audio"]["data"])
    assert pcm[:4] != b"RIFF" and len(pcm) % 2 == 0
    seconds = len(pcm) / 2 / 24_000
    wav = message(chat(server, "cascade-blind", SYSTEM_CONVERSATION, "", [clips["neutral"]], audio=True))
    samples, sr = decode_wav_bytes(base64.b64decode(wav["audio"]["data"]))
    assert abs(seconds - len(samples) / sr) < 0.05          # the same reply, resampled to 24 kHz raw PCM
    remote = {**body, "messages": [{"role": "user", "content": [
        {"type": "audio_url", "audio_url": {"url": "http://example.invalid/a.wav"}}]}]}
    resp = httpx.post(url, json=remote, timeout=10)
    assert resp.status_code == 400 and "data: URL" in resp.json()["error"]["message"]
