"""Reply screening's failure paths and readers (issue 14): what cannot be screened is held, never played.

Real SQLite/PostgreSQL store (EMPATHY_ARENA_TEST_DB), the real offline screen; Whisper is not needed here (an
unreadable clip fails before it, and a fixed transcriber stands in where a test is about the words).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from eval_backend.moderation import ledger
from eval_backend.moderation.replies import parse_subject, screen_replies, subject_of
from eval_backend.store import Reply, Store

ROOT = Path(__file__).resolve().parents[1]


def put(store: Store, model: str, rid: str, wav: bytes, text: str = "I am sorry, that sounds hard.") -> Reply:
    rel = store.save_reply_audio(model, wav)
    reply = Reply(model=model, benchmark_hash="h1", request_id=f"conversation/{rid}/target", task="conversation",
                  item_id=rid, variant="target", status="ok", text=text, transcript=text, audio_path=rel)
    store.put_reply(reply)
    return store.reply(model, "h1", reply.request_id)


def test_an_unreadable_clip_is_held_as_not_screened_and_a_rerun_screens_only_what_is_new(tmp_path):
    store = Store(tmp_path / "d")
    bad = put(store, "m", "s0", b"RIFF....WAVEfmt this is not a wav")
    good = put(store, "m", "s1", b"RIFF-pretend-wav-2")
    heard = {good.audio_path: "I am sorry, that sounds hard."}

    def transcribe(store_, reply):
        if reply.audio_path not in heard:
            raise ValueError("cannot decode")       # what read_wav raises for a broken clip (BadAudio)
        return heard[reply.audio_path]
    summary = screen_replies(store, "h1", transcribe=transcribe)
    assert (summary.screened, summary.held) == (2, 1)
    rec = ledger.latest(store, "reply", subject_of(bad))
    assert rec.result.status == "not_screened" and rec.result.flagged and "transcription failed" in rec.result.reason
    assert not ledger.state(store, "reply", subject_of(bad)).cleared
    assert ledger.state(store, "reply", subject_of(good)).cleared
    again = screen_replies(store, "h1", transcribe=transcribe)
    assert (again.screened, again.already) == (0, 2)
    assert parse_subject(subject_of(good)) == ("m", "h1", good.request_id, good.audio_path)
    assert parse_subject("not json") is None and parse_subject('["a","b"]') is None


def test_kind_text_does_not_clear_abusive_words_in_the_audio(tmp_path):
    store = Store(tmp_path / "d")
    reply = put(store, "m", "s0", b"RIFF-pretend-wav-3", text="I hear you, that must be hard.")
    screen_replies(store, "h1", transcribe=lambda s, r: "Shut up, you stupid worthless idiot.")
    rec = ledger.latest(store, "reply", subject_of(reply))
    assert rec.result.flagged and rec.result.categories["abuse"] >= 0.85
    assert "heard: Shut up" in rec.text and "model's words: I hear you" in rec.text


def test_a_new_audio_file_for_the_same_request_is_a_new_subject(tmp_path):
    store = Store(tmp_path / "d")
    first = put(store, "m", "s0", b"RIFF-one")
    screen_replies(store, "h1", transcribe=lambda s, r: "I am sorry, that sounds hard.")
    second = put(store, "m", "s0", b"RIFF-two")          # the same key, other audio
    assert subject_of(first) != subject_of(second)
    assert not ledger.state(store, "reply", subject_of(second)).decided     # unscreened: not played yet


def test_model_page_samples_leave_out_replies_not_screened_clean(tmp_path):
    from leaderboard.model_page import sample_replies

    store = Store(tmp_path / "d")
    a = put(store, "m", "s0", b"RIFF-a")
    put(store, "m", "s1", b"RIFF-b")
    shown = lambda r: r.request_id == a.request_id   # noqa: E731
    assert [s["request_id"] for s in sample_replies(store, "m", "h1", shown=shown)] == [a.request_id]


def test_the_screen_replies_command(tmp_path):
    from tests.support.arena_fixtures import build_benchmark
    data = tmp_path / "data"
    build_benchmark(data / "benchmarks" / "demo", n_scripts=1)
    out = subprocess.run([sys.executable, "-m", "eval_backend", "screen-replies", "--benchmark", "demo",
                          "--data-dir", str(data), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"screened": 0, "held": 0, "already": 0,
                                                               "seconds": json.loads(out.stdout)["seconds"]}
    bad = subprocess.run([sys.executable, "-m", "eval_backend", "screen-replies", "--benchmark", str(tmp_path / "no"),
                          "--data-dir", str(data)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "cannot be loaded" in bad.stdout


def test_a_flagged_model_name_is_refused_held_for_the_operator_and_passes_once_released(tmp_path):
    """Submitted names and organisations are screened before queueing (a flagged one is never shown)."""
    from eval_backend.moderation.texts import NAME, name_text, text_subject
    from eval_backend.submissions import SubmissionForm, SubmissionService, SubmissionSettings, Submitter
    from tests.support.fault_server import FaultServer, make_benchmark
    from eval_backend.benchmark.dataset import save_benchmark

    folder = save_benchmark(make_benchmark(tmp_path / "src", ["I lost my job."], name="names"), tmp_path / "bench")
    store = Store(tmp_path / "d")
    with FaultServer() as srv:
        svc = SubmissionService(store, SubmissionSettings(allow=(f"127.0.0.1:{srv.port}",), benchmark=str(folder),
                                                          preflight=False))

        def form(name, org=""):
            return SubmissionForm(name=name, organisation=org, base_url=srv.base_url, model_id="fault",
                                  audio_output=True, voice="v", licence="apache-2.0", open_weights=True)
        rude = svc.submit(form("Worthless Idiot Bot", "Shut up you morons"), Submitter("alice"), dry_run=True)
        assert not rude.accepted and "held by the safety screen" in rude.errors["name"]
        held = ledger.held(store, NAME)
        assert len(held) == 1 and "Worthless Idiot Bot" in held[0].text and "morons" in held[0].text
        assert svc.submit(form("Warm Listener", "Acme Labs"), Submitter("alice"), dry_run=True).accepted
        assert not svc.queue.list()                       # nothing was queued by a dry run, nothing flagged ever
        ledger.act(store, NAME, text_subject(name_text("Worthless Idiot Bot", "Shut up you morons")), "release",
                   "op", "a band name")
        assert svc.submit(form("Worthless Idiot Bot", "Shut up you morons"), Submitter("alice"), dry_run=True).accepted


def test_replies_are_screened_request_by_request_so_the_first_pair_is_playable_after_two(tmp_path):
    """A fresh Space's first battle needs two decided replies to one request: screening one model's replies
    before the next model's kept every pair unplayable until a whole model was done (issue 22's first battle)."""
    store = Store(tmp_path / "d")
    for model in ("m1", "m2", "m3"):
        for rid in ("s0", "s1", "s2"):
            put(store, model, rid, f"RIFF-{model}-{rid}".encode())
    order = []

    def transcribe(store_, reply):
        order.append((reply.request_id.split("/")[1], reply.model))
        return "I am sorry, that sounds hard."
    screen_replies(store, "h1", transcribe=transcribe)
    assert order[:2] == [("s0", "m1"), ("s0", "m2")] and len(order) == 9
    assert [rid for rid, _ in order] == sorted(rid for rid, _ in order)       # request by request
