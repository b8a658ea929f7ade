"""Public data release: a versioned snapshot of the vote log that rebuilds the leaderboard bit for bit.

    write_release(svc, out_dir)    -> manifest      (python -m arena release --out DIR)
    rebuild(release_dir, axis)     -> table rows    (python -m arena rebuild DIR [--json])

A release directory holds
    votes.jsonl          the public vote log, byte-identical to `python -m arena export --format jsonl`
                         (no session ids, IP hashes or user names; VoteRow has no such fields; a reason only
                         when the safety screen cleared it, eval_backend/moderation/texts.py)
    ratings/<axis>.json  `python -m arena ratings --json --axis <axis>` as it printed at release time
    integrity.jsonl      (when any) the votes the integrity checks held down (arena/vote_flags.py), one line each:
                         {"vote_id", "weight" (0: excluded from every table; 0 < w < 1: down-weighted), "flags"
                         (kinds: gold, consensus, cadence, one_model, ring)}; the tables leave weight-0 votes
                         out, and `rebuild` does the same from this file. The votes stay in votes.jsonl.
    live.jsonl, live/<clip>/{user,A,B}.wav   the live battles (arena/live.py) whose voter ticked "include in the
                         public data" (consent_release), and only those whose clips are not deleted: the voter's
                         recording, its transcript, the two replies and the models' names; no battle id, user,
                         address or time, so a clip is not tied to a vote
    manifest.json        format version, release id, vote-log hash, code version, TrueSkill and
                         Bradley-Terry parameters, sha256 of every file

The table is a pure function of (votes, parameters): TrueSkill is replayed in vote-id order and the
Bradley-Terry bootstrap uses a fixed seed, so rebuilding gives the same floats, hence the same JSON bytes.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import bradley_terry as bt
from . import live_store, storage, vote_flags
from .ratings import TrueSkillParams, replay
from .service import ratings_rows
from .storage import AXES, EXPORT_FIELDS, VoteRow
from .votes_io import format_votes

FORMAT = "empathy-arena-release"
FORMAT_VERSION = 4   # 2: Bradley-Terry vote floor (provisional models), rows carry bt_rank, provisional;
#                      3: votes carry battle_source (benchmark | live); live/ holds the consented live clips;
#                      4: integrity.jsonl marks the flagged votes (issue 23); the tables leave excluded ones out
READABLE_VERSIONS = (2, 3, 4)   # a v2 release (votes without battle_source: all benchmark battles) still rebuilds
BT_SEED = 0          # ArenaService.bradley_terry's default seed: the live table and the release agree
BT_PRIOR = 1e-4      # bradley_terry.bootstrap's default prior


class ReleaseError(ValueError):
    """The release directory is missing, incomplete or does not match its manifest."""


# ---------------------------------------------------------------- pure core
def leaderboard(votes: list[VoteRow], params: TrueSkillParams, rounds: int, axis: str = "overall",
                seed: int = BT_SEED, min_votes: int = 0) -> list[dict]:
    """Rows of `python -m arena ratings --json` (ArenaService.replayed_table) computed from votes alone."""
    if axis not in AXES:
        raise ValueError(f"axis {axis!r} is not one of {', '.join(AXES)}")
    rated = [(row, v) for row in votes if (v := row.as_vote(axis)) is not None]
    ts = replay([v for _, v in rated], params)
    counts = bt.counts_from_votes((v.model_a, v.model_b, v.winner) for _, v in rated)
    fit = bt.bootstrap(counts, rounds, seed, min_votes=min_votes).as_dict()
    n = {m: 0 for m in ts}
    for row, _ in rated:
        n[row.model_a] += 1
        n[row.model_b] += 1
    return ratings_rows(ts, fit, n)


def table_json(rows: list[dict]) -> str:
    """Exactly what `python -m arena ratings --json` prints (print adds the newline)."""
    return json.dumps(rows, indent=1) + "\n"


def parse_votes(text: str) -> list[VoteRow]:
    """votes.jsonl -> VoteRows in id order; ReleaseError naming the line on anything unexpected."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or set(rec) not in (set(EXPORT_FIELDS), set(EXPORT_FIELDS) - {"battle_source"}):
                raise ValueError(f"expected the fields {', '.join(EXPORT_FIELDS)}")
            out.append(VoteRow(**rec))
        except ValueError as exc:
            raise ReleaseError(f"votes.jsonl line {n}: {exc}") from None
    ids = [v.id for v in out]
    if ids != sorted(set(ids)):
        raise ReleaseError("votes.jsonl: vote ids are not strictly increasing")
    return out


def integrity_lines(votes: list[VoteRow], weights: dict[int, float], flags: dict[int, list[str]]) -> str:
    """integrity.jsonl: the released votes the flags in force hold down, in vote-id order."""
    return "".join(json.dumps({"vote_id": v.id, "weight": weights[v.id], "flags": sorted(flags.get(v.id, []))},
                              sort_keys=True) + "\n" for v in votes if v.id in weights)


def parse_integrity(text: str) -> dict[int, float]:
    """integrity.jsonl -> {vote id: weight}; ReleaseError naming the line on anything unexpected."""
    out = {}
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            rec = json.loads(line)
            weight = rec["weight"]
            if not isinstance(rec["vote_id"], int) or not isinstance(weight, (int, float)) or not 0 <= weight < 1:
                raise ValueError("expected an integer vote_id and a weight in [0, 1)")
            out[rec["vote_id"]] = float(weight)
        except (ValueError, KeyError, TypeError) as exc:
            raise ReleaseError(f"integrity.jsonl line {n}: {exc}") from None
    return out


def counted(votes: list[VoteRow], weights: dict[int, float]) -> list[VoteRow]:
    """The votes the tables count: all but the excluded (weight 0), as ArenaService.counted does live."""
    return [v for v in votes if weights.get(v.id, 1.0) > 0]


def params_dict(params: TrueSkillParams, rounds: int, min_votes: int) -> dict:
    return {"trueskill": dataclasses.asdict(params),
            "bradley_terry": {"bootstrap_rounds": rounds, "seed": BT_SEED, "prior": BT_PRIOR,
                              "provisional_below_votes": min_votes,
                              "reference": "mean of the non-provisional models = 1000",
                              "ties": "half a win each", "both_bad": "left out",
                              "interval": "95% percentile, widened to contain the full-data fit"},
            "order": "TrueSkill replayed in vote-id order"}


def live_files(store) -> dict[str, bytes]:
    """live.jsonl and the clips of the live battles released with the voter's consent (live_store.releasable);
    empty when there are none. A battle whose clips went missing is left out whole."""
    records, files = [], {}
    for row in live_store.releasable(store):
        battle = storage.battle_clip_row(store, row["battle_id"])
        folder = store.abspath(row["audio_dir"]) if row["audio_dir"] else None
        clips = {c: folder / f"{c}.wav" for c in live_store.CLIPS} if folder else {}
        if battle is None or not clips or not all(path.is_file() for path in clips.values()):
            continue
        name = f"live-{len(records) + 1:05d}"
        for clip, path in clips.items():
            files[f"live/{name}/{clip}.wav"] = path.read_bytes()
        records.append({"clip": name, "transcript": row["transcript"], "model_a": battle["model_a"],
                        "model_b": battle["model_b"], "text_a": row["text_a"], "text_b": row["text_b"]})
    if records:
        files["live.jsonl"] = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                      for r in records).encode()
    return files


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- I/O shell
def code_version(root: Path | None = None) -> dict:
    """The git commit of the running code (and whether the tree had local edits); 'unknown' without git."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "arena"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return {"git_commit": commit, "arena_code_modified": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": os.environ.get("SPACE_COMMIT", "unknown"), "arena_code_modified": None}


def write_release(svc, out_dir: str | Path, rounds: int | None = None) -> dict:
    """Write the snapshot of `svc` (an ArenaService) into out_dir, which must not exist or be empty.
    Written under a temporary name and renamed, so a half-written release never appears."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} already exists and is not empty: a release is never overwritten")
    rounds = svc.settings.bootstrap_rounds if rounds is None else rounds
    votes = svc.public_votes()        # reasons the safety screen did not clear are left out (the votes count)
    votes_text = format_votes(votes, "jsonl")
    weights = svc.vote_weights()      # the integrity flags in force (arena/vote_flags.py)
    files = {"votes.jsonl": votes_text.encode()}
    marks = integrity_lines(votes, weights, vote_flags.reasons(svc.store))
    if marks:                         # no file when no released vote is held down
        files["integrity.jsonl"] = marks.encode()
    # the same stamp as ArenaService.vote_log_hash(), of this very list (votes may arrive meanwhile)
    log_hash = {"sha256": sha256(files["votes.jsonl"]), "votes": len(votes),
                "last_vote_id": votes[-1].id if votes else None}
    for axis in AXES:
        files[f"ratings/{axis}.json"] = table_json(leaderboard(counted(votes, weights), svc.settings.trueskill, rounds,
                                                               axis, min_votes=svc.settings.provisional_votes)).encode()
    live = live_files(svc.store)
    files.update(live)
    now = time.time()
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "release": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{len(votes)}v-{log_hash['sha256'][:12]}",
        "created_at": now,
        "vote_log": log_hash,
        "code_version": code_version(),
        "parameters": params_dict(svc.settings.trueskill, rounds, svc.settings.provisional_votes),
        "axes": list(AXES),
        "files": {name: sha256(data) for name, data in sorted(files.items())},
        "private_fields_removed": ["session_id", "ip_hash", "user", "battle_id"],
        # the integrity checks (issue 23): which votes the tables leave out or count less, and why
        "integrity": {"file": "integrity.jsonl" if marks else None, "excluded": sum(1 for v in votes if weights.get(v.id, 1.0) == 0),
                      "down_weighted": sum(1 for v in votes if 0 < weights.get(v.id, 1.0) < 1),
                      "rule": "votes of weight 0 are left out of every table (gold checks failed, votes against "
                              "the consensus, cadence, one-model bias, rings: arena/sweeps.py); down-weighted "
                              "votes count in full in this version's tables"},
        # what screened the voters' reasons, and how many were left out (eval_backend/moderation/texts.py)
        "reason_screening": svc.reason_screening(),
        "live_clips": {"battles": sum(1 for n in live if n.endswith("/user.wav")),
                       "rule": "only live battles whose voter consented to the public release (consent_release)"},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        if out.exists():
            out.rmdir()                     # empty (checked above)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def load_release(release_dir: str | Path) -> tuple[dict, list[VoteRow]]:
    """Manifest and votes, after checking the format and every file's sha256."""
    d = Path(release_dir)
    try:
        manifest = json.loads((d / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{d}: no readable manifest.json ({exc})") from None
    if manifest.get("format") != FORMAT or manifest.get("format_version") not in READABLE_VERSIONS:
        raise ReleaseError(f"{d}: not a {FORMAT} release of version {' or '.join(map(str, READABLE_VERSIONS))}")
    for name, digest in manifest["files"].items():
        try:
            data = (d / name).read_bytes()
        except OSError as exc:
            raise ReleaseError(f"{d}: {name} is missing ({exc})") from None
        if sha256(data) != digest:
            raise ReleaseError(f"{d}: {name} does not match the sha256 in the manifest")
    text = (d / "votes.jsonl").read_text(encoding="utf-8")
    if sha256(text.encode()) != manifest["vote_log"]["sha256"]:
        raise ReleaseError(f"{d}: votes.jsonl does not match the vote-log hash")
    return manifest, parse_votes(text)


def rebuild(release_dir: str | Path, axis: str = "overall") -> tuple[list[dict], dict]:
    """Recompute the table of one axis from a release; returns (rows, report) where report says whether
    the JSON is byte-identical to the released ratings/<axis>.json."""
    manifest, votes = load_release(release_dir)
    marks = manifest.get("integrity", {}).get("file")
    if marks:                          # v4: the tables leave the excluded votes out
        if marks not in manifest["files"]:
            raise ReleaseError(f"{release_dir}: {marks} is not among the files the manifest checks")
        votes = counted(votes, parse_integrity((Path(release_dir) / marks).read_text(encoding="utf-8")))
    p = manifest["parameters"]
    params = TrueSkillParams(**p["trueskill"])
    b = p["bradley_terry"]
    rows = leaderboard(votes, params, b["bootstrap_rounds"], axis, b["seed"], b["provisional_below_votes"])
    released = (Path(release_dir) / "ratings" / f"{axis}.json").read_text()
    return rows, {"release": manifest["release"], "axis": axis, "votes": len(votes),
                  "identical": table_json(rows) == released}
