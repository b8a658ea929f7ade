"""Public data release: release then rebuild reproduces `ratings --json` byte for byte, and nothing private leaks."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from arena.services import release
from arena.__main__ import main
from arena.services.service import ArenaService
from arena.tables import storage_sync
from arena.tables.storage import AXES
from eval_backend.store import Store

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("warm", "flat", "kind", "curt")
SECRETS = ("sess-SECRET", "user-SECRET", "ip-hash-SECRET")


def seed_votes(data: Path, n: int = 240, seed: int = 7) -> ArenaService:
    """Live-like votes (with session ids, users and IP hashes) through the service's own recording path."""
    svc = ArenaService(Store(data))
    rng = random.Random(seed)
    with svc.store.transaction() as conn:
        for k in range(n):
            a, b = rng.sample(MODELS, 2)
            slot = rng.choice(("A", "B", "A", "B", "tie", "both_bad"))
            winner = {"A": a, "B": b}.get(slot, slot)
            dim = rng.choice((None, "speaker", "paralinguistic", "environment"))
            length = {m: 2.0 + 1.5 * i for i, m in enumerate(MODELS)}     # each model its own reply length
            svc.vote_log.record(conn, {
                "a_duration_s": length[a] * rng.uniform(0.7, 1.3), "b_duration_s": length[b] * rng.uniform(0.7, 1.3),
                "a_words": rng.randint(5, 40), "b_words": rng.randint(5, 40),
                "battle_id": f"battle-{k}", "model_a": a, "model_b": b, "winner": winner, "slot": slot,
                "said": rng.choice((None, "A", "B", "tie")), "sounded": rng.choice((None, "A", "B")),
                "reason": None, "session_id": f"{SECRETS[0]}-{k % 9}", "user": f"{SECRETS[1]}-{k % 5}",
                "ip_hash": f"{SECRETS[2]}-{k % 3}", "first_heard": "A", "attribute": None, "dimension": dim,
                "benchmark_hash": "bh", "request_id": f"r{k % 11}", "created_at": 1_767_000_000.0 + k * 1.37,
                "source": "live"})
    return svc


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_release_rebuild_is_byte_identical_and_private_free(tmp_path, capsys):
    data = tmp_path / "data"
    svc = seed_votes(data)
    out = tmp_path / "rel"
    code, text, err = cli(capsys, "release", "--out", str(out), "--data-dir", str(data))
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["vote_log"] == svc.vote_log_hash()
    assert manifest["vote_log"]["votes"] == 240
    assert len(manifest["code_version"]["git_commit"]) == 40
    assert manifest["parameters"]["trueskill"]["draw_probability"] == svc.settings.trueskill.draw_probability
    assert manifest["parameters"]["bradley_terry"]["bootstrap_rounds"] == svc.settings.bootstrap_rounds
    assert manifest["release"].endswith(manifest["vote_log"]["sha256"][:12])
    # votes.jsonl is the public export, byte for byte
    assert (out / "votes.jsonl").read_text() == svc.export_votes("jsonl")

    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    for secret in (*SECRETS, b"battle-"):
        assert (secret.encode() if isinstance(secret, str) else secret) not in blob
    for key in ("session_id", "ip_hash", '"user"', "battle_id"):
        assert key.encode() not in (out / "votes.jsonl").read_bytes()

    for axis in ("overall", "said", "speaker"):
        for style in ((), ("--style",)):
            code, live, _ = cli(capsys, "ratings", "--json", "--axis", axis, *style, "--data-dir", str(data))
            assert code == 0
            code, rebuilt, err = cli(capsys, "rebuild", str(out), "--json", "--axis", axis, *style)
            assert code == 0, err
            assert rebuilt.encode() == live.encode()
            assert json.loads(rebuilt)                     # not an empty table
    # the style board and its effects are released as printed, and carry what they were fitted on
    code, effects, _ = cli(capsys, "style-effects", "--json", "--data-dir", str(data))
    assert (out / "effects" / "overall.json").read_text() == effects
    assert json.loads(effects)["effects"]["duration"]["coef"] is not None
    assert json.loads((out / "ratings" / "overall.style.json").read_text())[0]["style_bt_votes"] > 0
    code, text, _ = cli(capsys, "rebuild", str(out))
    assert code == 0 and "identical to the released table" in text


def test_rebuild_in_a_fresh_process_matches_ratings_json(tmp_path):
    """Bit-for-bit across processes (the bootstrap is seeded, the replay ordered by id)."""
    data = tmp_path / "data"
    seed_votes(data, n=120, seed=3)
    env = {**os.environ, "PYTHONHASHSEED": "random"}

    def run(*args):
        p = subprocess.run([sys.executable, "-m", "arena", *args], cwd=ROOT, env=env, capture_output=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        return p.stdout

    run("release", "--out", str(tmp_path / "r"), "--data-dir", str(data))
    assert run("rebuild", str(tmp_path / "r"), "--json") == run("ratings", "--json", "--data-dir", str(data))
    assert run("rebuild", str(tmp_path / "r"), "--json", "--style") == \
        run("ratings", "--json", "--style", "--data-dir", str(data))


def test_tampered_or_reused_release_is_refused(tmp_path, capsys):
    data = tmp_path / "data"
    seed_votes(data, n=60)
    out = tmp_path / "rel"
    assert cli(capsys, "release", "--out", str(out), "--data-dir", str(data))[0] == 0
    # never overwritten
    before = (out / "manifest.json").read_bytes()
    code, _, err = cli(capsys, "release", "--out", str(out), "--data-dir", str(data))
    assert code == 2 and "not empty" in err
    assert (out / "manifest.json").read_bytes() == before
    # one changed winner is caught by the checksums, with a clear message
    votes = (out / "votes.jsonl").read_text().splitlines()
    rec = json.loads(votes[5])
    rec["winner"], rec["slot"] = "tie", "tie"
    votes[5] = json.dumps(rec)
    (out / "votes.jsonl").write_text("\n".join(votes) + "\n")
    code, _, err = cli(capsys, "rebuild", str(out), "--json")
    assert code == 2 and "votes.jsonl does not match" in err
    with pytest.raises(release.ReleaseError, match="manifest"):
        release.load_release(tmp_path / "nothing-here")


def test_rebuilt_table_differs_when_parameters_differ(tmp_path, capsys):
    """The check can fail: a release whose table was computed with other parameters is reported as different."""
    data = tmp_path / "data"
    svc = seed_votes(data, n=80)
    out = tmp_path / "rel"
    release.write_release(svc, out, rounds=50)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["parameters"]["bradley_terry"]["seed"] = 1       # a different bootstrap draw
    (out / "manifest.json").write_text(json.dumps(manifest))
    rows, report = release.rebuild(out)
    assert not report["identical"]
    code, _, err = cli(capsys, "rebuild", str(out))
    assert code == 1 and "differs" in err


def test_every_axis_is_released(tmp_path):
    svc = seed_votes(tmp_path / "data", n=40)
    m = release.write_release(svc, tmp_path / "rel", rounds=20)
    # format 4: each axis has its plain board, its style-controlled board and the style effects
    assert sorted(m["files"]) == sorted(["votes.jsonl"] + [f"ratings/{a}.json" for a in AXES]
                                        + [f"ratings/{a}.style.json" for a in AXES]
                                        + [f"effects/{a}.json" for a in AXES])
    for axis in AXES:
        rows, report = release.rebuild(tmp_path / "rel", axis)
        assert report["identical"]


def test_a_version_3_release_still_rebuilds_and_says_it_has_no_style_tables(tmp_path, capsys):
    """Releases written before the style covariates (format 3: no a_*/b_* or weight in votes.jsonl) rebuild."""
    import hashlib
    svc = seed_votes(tmp_path / "data", n=60)
    out = tmp_path / "rel"
    release.write_release(svc, out, rounds=30)
    manifest = json.loads((out / "manifest.json").read_text())
    old = [{k: v for k, v in json.loads(line).items() if k not in storage_sync.LATER_VOTE_FIELDS}
           for line in (out / "votes.jsonl").read_text().split("\n") if line]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in old)
    (out / "votes.jsonl").write_text(text)
    for name in list(manifest["files"]):
        if name.endswith(".style.json") or name.startswith("effects/"):
            (out / name).unlink()
            del manifest["files"][name]
    digest = hashlib.sha256(text.encode()).hexdigest()
    manifest["files"]["votes.jsonl"] = manifest["vote_log"]["sha256"] = digest
    manifest["format_version"] = 3
    (out / "manifest.json").write_text(json.dumps(manifest))
    rows, report = release.rebuild(out)
    assert report["identical"] and rows
    code, _, err = cli(capsys, "rebuild", str(out), "--style")
    assert code == 2 and "no style tables" in err
