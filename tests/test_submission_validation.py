"""Submission checks: plain-words field errors, upload checks (traversal, symlinks, bombs, corrupt audio),
duplicates and quota against current data, and ≥ 200 generated bad submissions of which none crashes
and none is queued."""
from __future__ import annotations

import io
import json
import stat
import threading
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from eval_backend.audio.io import encode_wav
from eval_backend.benchmark.dataset import save_benchmark
from eval_backend.store import Store
from eval_backend.submissions import SubmissionForm, SubmissionService, SubmissionSettings, Submitter, validate_form
from eval_backend.submissions.uploads import UploadError, check_upload
from eval_backend.submissions.validation import LICENCES, normalise_base_url, url_syntax
from tests.support.fault_server import make_benchmark, tone_pcm

PUBLIC = "https://93.184.216.34/v1"     # a public literal: passes the address policy without DNS
WAV = encode_wav(tone_pcm(0.3), 24000)
IDS = {"context/g0000/c0", "context/g0001/c0"}


def good_form(**kw) -> SubmissionForm:
    return SubmissionForm(**{**dict(name="Good Model", organisation="Lab", link="https://example.org/m",
                                    licence="mit", open_weights=True, base_url=PUBLIC, model_id="org/model-1",
                                    audio_output=True, voice="alloy"), **kw})


# --- fields ----------------------------------------------------------------------------------

def test_a_good_form_has_no_errors_and_each_bad_field_names_itself():
    assert validate_form(good_form()) == {}
    cases = {
        "name": [good_form(name=""), good_form(name="x"), good_form(name="a" * 80), good_form(name="bad\x00name"),
                 good_form(name="<script>"), good_form(name="tie")],
        "base_url": [good_form(base_url=""), good_form(base_url="ftp://h/v1"), good_form(base_url="file:///etc"),
                     good_form(base_url="https://u:p@h.com/v1"), good_form(base_url="https://h.com/v1#x"),
                     good_form(base_url="https://h.com/v1/chat/completions"), good_form(base_url="http://h .com"),
                     good_form(base_url="javascript:alert(1)"), good_form(base_url="https://h.com:99999/")],
        "model_id": [good_form(model_id=""), good_form(model_id="has space"), good_form(model_id="-x")],
        "licence": [good_form(licence="whatever")],
        "open_weights": [good_form(open_weights=True, licence="proprietary")],
        "voice": [good_form(voice="a voice!")],
        "link": [good_form(link="ftp://x")],
        "predictions": [good_form(predictions_path="/tmp/x.zip"),
                        good_form(kind="predictions", base_url="", predictions_path="x.tar")],
        "kind": [good_form(kind="other")],
    }
    for fld, forms in cases.items():
        for f in forms:
            errors = validate_form(f)
            assert fld in errors, (fld, f)
            assert errors[fld].endswith(".") and errors[fld][0].isupper()     # a sentence in plain words


def test_the_api_key_is_never_echoed():
    key = "sk-visible\nsecret-" + "k" * 30
    errors = validate_form(good_form(api_key=key))
    assert "api_key" in errors and "secret-" not in json.dumps(errors)
    assert "sk-" not in json.dumps(good_form(api_key="sk-abc").public())


def test_duplicate_urls_compare_normalised():
    assert normalise_base_url("HTTPS://API.Example.com:443/v1/") == normalise_base_url("https://api.example.com/v1")
    assert normalise_base_url("http://h:8080/v1") != normalise_base_url("http://h/v1")


# --- uploads ---------------------------------------------------------------------------------

def make_zip(entries: list[tuple], path: Path) -> Path:
    """entries: (name, bytes) or (ZipInfo, bytes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return path


def lines(*objs) -> bytes:
    return "\n".join(json.dumps(o) for o in objs).encode()


UP = SubmissionSettings(max_upload_bytes=2 * 2**20, max_unpacked_bytes=4 * 2**20, max_files=20)


def test_a_good_upload_is_unpacked_and_hashed_independently_of_compression(tmp_path):
    entries = [("p.jsonl", lines({"id": "context/g0000/c0", "text": "hi", "audio": "a/0.wav"},
                                 {"id": "context/zzz/c0", "text": "unknown"})), ("a/0.wav", WAV)]
    one = check_upload(make_zip(entries, tmp_path / "1.zip"), tmp_path / "u1", UP, IDS)
    with zipfile.ZipFile(tmp_path / "2.zip", "w", zipfile.ZIP_STORED) as z:
        for name, data in reversed(entries):
            z.writestr(name, data)
    two = check_upload(tmp_path / "2.zip", tmp_path / "u2", UP, IDS)
    assert one.content_hash == two.content_hash and one.matched == 1 and one.unknown_ids == ["context/zzz/c0"]
    assert (tmp_path / "u1" / "a" / "0.wav").read_bytes() == WAV


def _symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


BAD_UPLOADS = {
    "traversal": [("../evil.wav", WAV), ("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))],
    "absolute": [("/etc/evil.wav", WAV), ("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))],
    "backslash": [("..\\evil.wav", WAV), ("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))],
    "symlink": [(_symlink_info("link.wav"), b"/etc/passwd"),
                ("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))],
    "audio path escapes": [("p.jsonl", lines({"id": "context/g0000/c0", "audio": "../../etc/hostname"}))],
    "audio path absolute": [("p.jsonl", lines({"id": "context/g0000/c0", "audio": "/etc/hostname"}))],
    "audio missing": [("p.jsonl", lines({"id": "context/g0000/c0", "audio": "nope.wav"}))],
    "corrupt wav": [("p.jsonl", lines({"id": "context/g0000/c0", "audio": "a.wav"})), ("a.wav", b"RIFF" + b"\0" * 60)],
    "truncated wav": [("p.jsonl", lines({"id": "context/g0000/c0", "audio": "a.wav"})), ("a.wav", WAV[:2000])],
    "two jsonl": [("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"})), ("q.jsonl", b"")],
    "no jsonl": [("a.wav", WAV)],
    "other file": [("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"})), ("run.sh", b"rm -rf /")],
    "bad jsonl": [("p.jsonl", b"{not json\n")],
    "not utf-8": [("p.jsonl", b"\xff\xfe\x00bad")],
    "no matching id": [("p.jsonl", lines({"id": "context/other/c0", "text": "x"}))],
    "duplicate entry": [("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"})), ("A.wav", WAV), ("a.wav", WAV)],
    "bomb": [("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"})), ("z.wav", b"\0" * (5 * 2**20))],
    "too many files": [("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))] + [(f"{i}.wav", WAV)
                                                                                         for i in range(25)],
}


@pytest.mark.parametrize("case", sorted(BAD_UPLOADS))
def test_bad_uploads_are_refused_and_leave_nothing(tmp_path, case):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # zipfile warns about the duplicate entry case
        path = make_zip(BAD_UPLOADS[case], tmp_path / "bad.zip")
    with pytest.raises(UploadError) as err:
        check_upload(path, tmp_path / "out", UP, IDS)
    assert str(err.value) and not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "evil.wav").exists()


def test_one_entry_over_its_own_cap_is_refused(tmp_path):
    big = encode_wav(tone_pcm(30.0), 24000)                      # 1.4 MB of audio
    path = make_zip([("p.jsonl", lines({"id": "context/g0000/c0", "audio": "a.wav"})), ("a.wav", big)],
                    tmp_path / "big.zip")
    with pytest.raises(UploadError, match="larger than 1 MB"):
        check_upload(path, tmp_path / "out", UP.__class__(**{**UP.__dict__, "max_audio_bytes": 2**20}), IDS)
    assert check_upload(path, tmp_path / "ok", UP, IDS).matched == 1


def test_corrupt_and_oversized_files_are_refused(tmp_path):
    (tmp_path / "junk.zip").write_bytes(b"PK\x03\x04" + b"\x00garbage" * 100)
    (tmp_path / "big.zip").write_bytes(b"\0" * (UP.max_upload_bytes + 1))
    good = make_zip([("p.jsonl", lines({"id": "context/g0000/c0", "text": "x"}))], tmp_path / "g.zip")
    (tmp_path / "cut.zip").write_bytes(good.read_bytes()[:-30])
    for name in ("junk.zip", "big.zip", "cut.zip", "missing.zip"):
        with pytest.raises(UploadError):
            check_upload(tmp_path / name, tmp_path / f"out-{name}", UP, IDS)


# --- service: duplicates, quota, races -------------------------------------------------------

@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bench")
    return save_benchmark(make_benchmark(tmp / "src", ["I lost my keys.", "It rains."], name="val"), tmp / "b")


def svc_for(data: Path, bench_dir: Path, clock=None, **kw) -> SubmissionService:
    s = SubmissionSettings(benchmark=str(bench_dir), preflight=False, preflight_timeout_s=2, **kw)
    return SubmissionService(Store(data), s, **({"clock": clock} if clock else {}))


def test_duplicates_are_checked_against_current_data(tmp_path, bench_dir):
    app1, app2 = svc_for(tmp_path / "d", bench_dir), svc_for(tmp_path / "d", bench_dir)   # two app processes
    first = app1.submit(good_form(), Submitter("ann"))
    assert first.accepted
    dup = app2.submit(good_form(name="Other Name", base_url="HTTPS://93.184.216.34:443/v1/"), Submitter("ben"))
    assert not dup.accepted and "#1" in dup.errors["duplicate"]
    taken = app2.submit(good_form(model_id="another"), Submitter("ben"))
    assert not taken.accepted and "taken" in taken.errors["name"]
    app1.cancel(first.job_id, Submitter("ann"))                 # the submitter cancels while PENDING
    assert app2.submit(good_form(name="Other Name"), Submitter("ben")).accepted   # seen at once: no stale list


def test_quota_per_submitter_and_none_for_the_operator(tmp_path, bench_dir):
    now = [1_000_000.0]
    svc = svc_for(tmp_path / "d", bench_dir, clock=lambda: now[0])
    for i in range(3):
        assert svc.submit(good_form(name=f"Model {i}", model_id=f"m{i}"), Submitter("eve")).accepted
    over = svc.submit(good_form(name="Model 3", model_id="m3"), Submitter("eve"))
    assert not over.accepted and "3 submissions in the last 7 days" in over.errors["quota"]
    assert svc.submit(good_form(name="Model 4", model_id="m4"), Submitter("fay")).accepted
    assert svc.submit(good_form(name="Model 5", model_id="m5"), Submitter("root", is_operator=True)).accepted
    now[0] += 7 * 86400 + 1
    assert svc.submit(good_form(name="Model 3", model_id="m3"), Submitter("eve")).accepted


def test_racing_identical_submissions_queue_one(tmp_path, bench_dir):
    Store(tmp_path / "d")
    results = []
    barrier = threading.Barrier(4)

    def go(i):
        svc = svc_for(tmp_path / "d", bench_dir)
        barrier.wait()
        results.append(svc.submit(good_form(), Submitter(f"user{i}")))
    threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.accepted for r in results) == 1
    assert Store(tmp_path / "d").query("SELECT COUNT(*) FROM submissions")[0][0] == 1


def test_a_submission_committed_between_the_checks_reads_is_reported_whole(tmp_path, bench_dir):
    """The loser of a race is told everything that refuses it, read at one moment: a winner committing between
    the duplicate read and the name read once left it with only "name taken" (a CI run on PostgreSQL)."""
    loser, winner = svc_for(tmp_path / "d", bench_dir), svc_for(tmp_path / "d", bench_dir)
    read_duplicate, raced = loser.queue.active_duplicate, []

    def duplicate_then_the_winner_commits(conn, key):
        found = read_duplicate(conn, key)
        if not raced:
            raced.append(winner.submit(good_form(), Submitter("ann")))
        return found
    loser.queue.active_duplicate = duplicate_then_the_winner_commits
    out = loser.submit(good_form(), Submitter("ben"))
    assert raced[0].accepted and not out.accepted
    assert "#1" in out.errors["duplicate"] and "taken" in out.errors["name"], out.errors


def test_internal_endpoints_are_refused_by_the_form(tmp_path, bench_dir):
    svc = svc_for(tmp_path / "d", bench_dir)
    for url in ("http://127.0.0.1:8765/v1", "http://[::ffff:169.254.169.254]/v1", "http://0x7f000001/v1"):
        out = svc.submit(good_form(base_url=url), Submitter("x"))
        assert not out.accepted and "cannot be used" in out.errors["base_url"]
    assert svc.list_jobs() == []


# --- generated bad submissions ---------------------------------------------------------------

INTERNAL_HOSTS = ["127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::1]", "[::ffff:127.0.0.1]",
                  "10.0.0.1", "192.168.0.1", "169.254.169.254", "[fd00:ec2::254]", "metadata.google.internal",
                  "localhost", "LOCALHOST.", "0", "[::]", "224.0.0.1", "100.64.0.1", "127.0.0.1.", "0xA9FEA9FE"]
text = st.text(st.characters(codec="utf-8"), max_size=80)
bad_names = st.one_of(st.just(""), st.text(max_size=2), st.text(min_size=65, max_size=90),
                      text.map(lambda s: "\x00" + s), text.map(lambda s: s + "\u202e"), st.just("<img src=x>"),
                      st.just("../../etc"), st.just("both_bad"))
bad_urls = st.one_of(
    st.sampled_from(INTERNAL_HOSTS).flatmap(lambda h: st.sampled_from(["http", "https", "HTTP"]).map(
        lambda s: f"{s}://{h}/v1")),
    st.sampled_from(["ftp", "file", "gopher", "javascript", "data", "ws", ""]).map(lambda s: f"{s}://93.184.216.34/"),
    text.filter(lambda s: not s.lower().startswith("http")),
    st.just("https://user:pass@93.184.216.34/v1"), st.just("https://93.184.216.34/v1#frag"),
    st.just("https://%31%32%37.0.0.1/v1"), st.just("https://93.184.216.34/v1/chat/completions"),
    st.integers(65536, 10**6).map(lambda p: f"https://93.184.216.34:{p}/"),
)


def traversal_zip(name: str, audio: str, method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr(name, WAV)
        z.writestr("p.jsonl", lines({"id": "context/g0000/c0", "audio": audio}))
    return buf.getvalue()


def splice(data: bytes, pos: int, junk: bytes) -> bytes:
    """Overwrite bytes inside the first entry's compressed data (never a no-op: at least one byte is inverted)."""
    junk = bytes([junk[0] ^ data[pos] ^ 0xFF]) + junk[1:]
    return data[:pos] + junk + data[pos + len(junk):]


def damaged(data: bytes) -> bool:
    """A splice can land on bits deflate ignores (about 3 in 7,000 did): the zip is then intact, not bad."""
    try:
        return zipfile.ZipFile(io.BytesIO(data)).testzip() is not None
    except Exception:
        return True


def flip(data: bytes, pos: int, n: int) -> bytes:
    """Invert 1-4 bytes of the first entry's stored data: a burst CRC-32 always detects."""
    return data[:pos] + bytes(b ^ 0xFF for b in data[pos:pos + n]) + data[pos + n:]


bad_zips = st.one_of(
    st.binary(max_size=2000),                                                      # corrupt
    st.binary(max_size=200).map(lambda b: b"PK\x03\x04" + b),
    st.tuples(st.sampled_from(["../", "/", "a/../../", "..\\", "C:/", "./../"]), st.text("abc", min_size=1, max_size=5))
      .map(lambda t: traversal_zip(t[0] + t[1] + ".wav", t[0] + t[1] + ".wav")),
    st.sampled_from(["/etc/passwd", "../../../etc/hostname", "~/x.wav", "a/../../b.wav"]).map(
        lambda a: traversal_zip("ok.wav", a)),
    st.tuples(st.integers(0, len(WAV) - 4), st.integers(1, 4)).map(lambda t: flip(traversal_zip("ok.wav", "ok.wav"),
                                                                                   30 + len("ok.wav") + t[0], t[1])),
    st.tuples(st.integers(40, 400), st.binary(min_size=1, max_size=8)).map(              # corrupt deflate stream
        lambda t: splice(traversal_zip("ok.wav", "ok.wav", zipfile.ZIP_DEFLATED), t[0], t[1])).filter(damaged),
    st.sampled_from([zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]).map(lambda m: traversal_zip("ok.wav", "ok.wav", m)),
    st.integers(1, 3).map(lambda k: b"\0" * (UP.max_upload_bytes + k)),                # huge
)


@st.composite
def bad_submission(draw):
    kind = draw(st.sampled_from(["name", "url", "model_id", "zip", "both", "licence"]))
    if kind == "zip":
        return good_form(kind="predictions", base_url="", name="Zip Model"), \
            draw(bad_zips)
    form = good_form()
    if kind == "name":
        form.name = draw(bad_names)
    elif kind == "url":
        form.base_url = draw(bad_urls)
    elif kind == "model_id":
        # bad once trimmed, as the form trims it ("\xa0V" is the valid id "V")
        form.model_id = draw(st.one_of(st.just(""), text.filter(lambda s: " " in s.strip() or not s.strip().isascii())))
    elif kind == "licence":
        # any text but a listed licence (Hypothesis also tries real ones, like "bsd-3-clause", which pass)
        form.licence = draw(text.filter(lambda s: s.strip().lower() not in LICENCES))
    else:
        form.predictions_path = "x.zip"
    if draw(st.booleans()):      # "sk-": a key that cannot be a word of our own messages ("operato" was)
        form.api_key = "sk-" + draw(text)
    return form, None


@pytest.fixture(scope="module")
def fuzz_svc(tmp_path_factory, bench_dir):
    tmp = tmp_path_factory.mktemp("fuzz")
    return svc_for(tmp / "d", bench_dir, max_upload_bytes=UP.max_upload_bytes, max_unpacked_bytes=UP.max_unpacked_bytes,
                   max_files=UP.max_files), tmp


COUNT = {"n": 0}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(case=bad_submission())
def test_generated_bad_submissions_never_crash_and_never_queue(fuzz_svc, case):
    svc, tmp = fuzz_svc
    form, zip_bytes = case
    if zip_bytes is not None:
        COUNT["n"] += 1
        path = tmp / f"up{COUNT['n']}.zip"
        path.write_bytes(zip_bytes)
        form.predictions_path = str(path)
    out = svc.submit(form, Submitter("fuzzer"))
    assert not out.accepted and out.errors, form.public()
    assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in out.errors.items())
    assert not (form.api_key and len(form.api_key) > 6 and form.api_key in json.dumps(out.errors))
    assert svc.store.query("SELECT COUNT(*) FROM submissions")[0][0] == 0
    uploads = svc.store.root / "submissions" / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())        # a refused upload leaves nothing


def test_demo_allowlist_is_only_the_loopback_baselines(tmp_path, monkeypatch):
    monkeypatch.delenv("EMPATHY_ARENA_BASELINE_PORT", raising=False)     # conftest's baseline_port sets one
    from eval_backend.submissions.settings import demo_allowlist, settings_from_env
    models = tmp_path / "models.yaml"
    models.write_text("models:\n"
                      "  - {name: b1, base_url: 'http://127.0.0.1:9001/v1', model: b1, baseline: true}\n"
                      "  - {name: b2, base_url: 'http://[::1]:9002/v1', model: b2, baseline: true}\n"
                      "  - {name: ext, base_url: 'http://127.0.0.1:9003/v1', model: e}\n"
                      "  - {name: far, base_url: 'https://api.example.com/v1', model: f, baseline: true}\n")
    assert demo_allowlist(str(models)) == ("127.0.0.1:9001", "[::1]:9002")
    # never all of 127.0.0.1 (the app listens there too): the baselines' ports, or the port bootstrap chose
    assert "127.0.0.1" not in settings_from_env(demo=True).allow
    assert settings_from_env(demo=True, models_file=str(models)).allow[-2:] == ("127.0.0.1:9001", "[::1]:9002")
    assert settings_from_env(demo=True, baseline_port=9555).allow[-1] == "127.0.0.1:9555"
    assert settings_from_env(demo=False, baseline_port=9555).allow == ()
    s = settings_from_env(demo=True, models_file=str(models), demo_ports_only=True)
    from eval_backend.submissions.netguard import AddressPolicy
    policy = AddressPolicy.from_strings(s.allow)
    assert policy.check_url("http://127.0.0.1:9001/v1") is None
    assert policy.check_url("http://127.0.0.1:7860/v1")                  # the app's own port stays refused


@pytest.mark.parametrize("url", ["http://8.8.8.8%25.rebind.test/v1", "http://1.1.1.1%zz/v1",
                                 "http://[fe80::1%25eth0]:8000/v1", "http://api_x.example.com/v1",
                                 "http://api.example.com%2f@x/v1"])
def test_hosts_with_other_characters_are_refused_at_the_form(url):
    err = url_syntax(url, "endpoint base URL")
    assert err and err.startswith("The endpoint base URL"), url
    assert "'%'" in err or "letters, digits" in err or "user name" in err, err
    form = SubmissionForm(name="Host test", licence="mit", base_url=url, model_id="m")
    assert "base_url" in validate_form(form)


def test_limits_from_the_environment_are_checked(monkeypatch):
    from eval_backend.submissions.settings import settings_from_env
    monkeypatch.setenv("EMPATHY_ARENA_MAX_REPLY_BYTES", "65536")
    monkeypatch.setenv("EMPATHY_ARENA_JOB_DEADLINE_S", "2.5")
    s = settings_from_env()
    assert (s.max_reply_bytes, s.job_deadline_s) == (65536, 2.5)
    limits = s.reply_limits()
    assert limits.max_body_bytes == 65536 and not limits.show_body
    for bad in ("0", "-1", "lots", "inf", "nan"):
        monkeypatch.setenv("EMPATHY_ARENA_JOB_DEADLINE_S", bad)
        with pytest.raises(ValueError, match="EMPATHY_ARENA_JOB_DEADLINE_S"):
            settings_from_env()


anything = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text, st.binary(max_size=20),
                     st.lists(st.integers(), max_size=3))


@settings(max_examples=300, deadline=None)
@given(values=st.fixed_dictionaries({f: anything for f in ("name", "organisation", "link", "licence", "open_weights",
                                                            "kind", "base_url", "model_id", "audio_output", "voice",
                                                            "api_key", "predictions_path")}))
def test_validate_form_takes_any_values_without_raising(values):
    errors = validate_form(SubmissionForm(**values))
    assert isinstance(errors, dict) and all(isinstance(v, str) and v for v in errors.values())
    if not (isinstance(values["name"], str) and values["name"].strip()):
        assert "name" in errors


# --- what a submitter is told when the test call fails (messages.py) --------------------------

LIBRARY_WORDS = ("ClientConnector", "Error", "ssl:default", "Errno", "_ssl.c", "Connect call failed", "Traceback",
                 "aiohttp", "WRONG_VERSION", "OSError")


def plain(sentence: str) -> bool:
    return sentence[0].isupper() and sentence.rstrip().endswith(".") and not any(w in sentence for w in LIBRARY_WORDS)


def test_every_failure_class_maps_to_a_sentence_without_the_raw_text():
    """Each class, fed a message full of library text, gives a field and a plain sentence of ours."""
    from eval_backend.store import FAILURE_CLASSES
    from eval_backend.submissions.messages import preflight_error
    raw = ("transport error, no HTTP status: cannot connect (ClientConnectorError): Cannot connect to host "
           "api.example.com:443 ssl:default [Errno 111] Connect call failed; HTTP 418 (12 bytes of body): SALT-body")
    for cls in FAILURE_CLASSES:
        fld, sentence = preflight_error(cls, raw, 30.0)
        assert fld in ("base_url", "api_key", "endpoint"), cls
        assert plain(sentence) and "SALT-body" not in sentence and "api.example.com" not in sentence, (cls, sentence)
    # connection causes, from the client's own wording of each
    cases = {
        "cannot connect (ClientConnectorDNSError): Name or service not known": "does not resolve",
        "cannot connect (ClientConnectorError): Connect call failed ('1.2.3.4', 9)": "nothing accepts connections",
        "cannot connect (ClientConnectorSSLError): [SSL: WRONG_VERSION_NUMBER] wrong version (_ssl.c:1006)": "https",
        "cannot connect (ClientConnectorCertificateError): certificate verify failed": "certificate",
        "cannot connect (ClientConnectorError): Network is unreachable": "no network route",
        "cannot connect (AddressRefused): connection refused by the address policy: private": "not allowed",
        "transport error, no HTTP status (ServerDisconnectedError)": "did not answer in HTTP",
    }
    for message, words in cases.items():
        fld, sentence = preflight_error("connection", message, 30.0)
        assert fld == "base_url" and words in sentence and plain(sentence), (message, sentence)
    assert preflight_error("timeout", "no complete reply within 30 s", 30.0)[0] == "base_url"
    assert "30 s" in preflight_error("timeout", "", 30.0)[1]
    assert preflight_error("http_4xx", "HTTP 401 (3 bytes of body)", 30.0)[0] == "api_key"
    assert preflight_error("http_4xx", "HTTP 404 (3 bytes of body)", 30.0)[0] == "base_url"
    fld, sentence = preflight_error("too_large", "the reply body is larger than the limit of 8,388,608 bytes", 30.0)
    assert fld == "endpoint" and "(too_large)" in sentence and "8,388,608 bytes" in sentence


@pytest.fixture()
def loopback_svc(tmp_path, bench_dir):
    """The real preflight (2 calls through the real client) with loopback allowed; `nx.invalid` passes the
    address check (stub resolver) so the client's own DNS lookup is the one that fails."""
    from eval_backend.submissions.netguard import AddressPolicy

    def resolve(host, port):
        return ["127.0.0.1"]
    s = SubmissionSettings(benchmark=str(bench_dir), allow=("127.0.0.1",), preflight_timeout_s=1.5,
                           check_deadline_s=10)
    return SubmissionService(Store(tmp_path / "d"), s, policy=AddressPolicy.from_strings(["127.0.0.1"], resolve))


def _silent_and_garbage_servers():
    import socket
    silent = socket.create_server(("127.0.0.1", 0))                  # accepts, never answers
    garbage = socket.create_server(("127.0.0.1", 0))                 # answers, but not in HTTP

    def serve():
        while True:
            try:
                conn, _ = garbage.accept()
            except OSError:
                return
            conn.recv(1024)
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return silent, garbage


def test_unreachable_endpoints_are_told_at_the_base_url_in_plain_words(loopback_svc):
    import socket

    from tests.support.fault_server import FaultServer
    # a port bound here and never listened on refuses connections, and no other process can take it meanwhile (a
    # port found free and let go was taken by another test's server once: the dry run then succeeded)
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    closed = held.getsockname()[1]
    silent, garbage = _silent_and_garbage_servers()
    with FaultServer() as http_only, FaultServer(fault="echo-key") as wants_key:
        cases = {
            f"http://127.0.0.1:{closed}/v1": ("base_url", "nothing accepts connections"),
            f"https://127.0.0.1:{http_only.port}/v1": ("base_url", "https"),          # TLS to a plain-HTTP server
            f"http://127.0.0.1:{silent.getsockname()[1]}/v1": ("base_url", "within 1.5 s"),
            f"http://127.0.0.1:{garbage.getsockname()[1]}/v1": ("base_url", "did not answer in HTTP"),
            f"http://nx.invalid:{closed}/v1": ("base_url", "does not resolve"),
            f"http://127.0.0.1:{http_only.port}/wrong": ("base_url", "HTTP 404"),
            wants_key.base_url: ("api_key", "not authorised"),
        }
        for url, (fld, words) in cases.items():
            out = loopback_svc.submit(good_form(base_url=url, api_key="", audio_output=False), Submitter("x"),
                                      dry_run=True)
            assert not out.accepted and list(out.errors) == [fld], (url, out.errors)
            assert words in out.errors[fld] and plain(out.errors[fld]), (url, out.errors[fld])
    silent.close()
    garbage.close()
    held.close()
    assert loopback_svc.list_jobs() == []


def test_long_values_are_refused_with_their_count_and_limit():
    errors = validate_form(good_form(name="n" * 10_000, organisation="o" * 150, model_id="m" * 300))
    assert errors["name"] == "The name is 10,000 characters long; it may have at most 64."
    assert "150 characters long" in errors["organisation"] and "at most 100" in errors["organisation"]
    assert "300 characters long" in errors["model_id"] and "at most 200" in errors["model_id"]
    assert "`" not in json.dumps(validate_form(good_form(model_id="")))     # plain words, no code marks
