"""Replies (audio included) and results: pushed with `create_commit(parent_commit=head)`, restored on start.

Repo layout mirrors the data dir: `replies/<model>/<sha>.wav` (content-addressed, so never changed),
`results/...json`, plus `state/replies.jsonl` (the replies table) and `state/manifest.json` ({path: sha256}
of every pushed data file, so a push needs no per-file metadata calls).

A push reads the head, merges the repo's replies table with the local one, and commits against that head.
If another writer committed in between, the Hub refuses (parent_commit is not the head); we read the new
head, merge again and retry. Merge rule per (model, benchmark_hash, request_id): an ok reply beats a failed
one, else the later one wins, so two writers converge whatever the order.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

from huggingface_hub import CommitOperationAdd

from eval_backend.audio.io import sha256_file
from eval_backend.store import Reply

REPLIES = "state/replies.jsonl"
MANIFEST = "state/manifest.json"
DATA_DIRS = ("replies", "results")
KEY = ("model", "benchmark_hash", "request_id")
DATASET = "dataset"


_SHA_CACHE: dict[tuple[str, int, int], str] = {}    # (path, mtime_ns, size) -> sha256: a push hashes only new files


def _sha(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = sha256_file(path)
    return _SHA_CACHE[key]


def local_files(root: Path) -> dict[str, str]:
    """{repo path: sha256} of the reply audio and result files (temporary files left out)."""
    out = {}
    for top in DATA_DIRS:
        for p in sorted((root / top).rglob("*")):
            if p.is_file() and (p.suffix in (".wav", ".json")) and ".tmp" not in p.name:
                out[p.relative_to(root).as_posix()] = _sha(p)
    return out


def _better(a: dict, b: dict) -> dict:
    """The reply to keep of two for one key."""
    if (a["status"] == "ok") != (b["status"] == "ok"):
        return a if a["status"] == "ok" else b
    return b if b["created_at"] > a["created_at"] else a


def merge(remote: list[dict], local: list[dict]) -> list[dict]:
    rows: dict[tuple, dict] = {}
    for r in [*remote, *local]:
        k = tuple(r[c] for c in KEY)
        rows[k] = _better(rows[k], r) if k in rows else r
    return [rows[k] for k in sorted(rows)]


def dump(rows: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def load(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _read(api, repo: str, path: str, head: str, staging: Path) -> str:
    return Path(api.hf_hub_download(repo, path, repo_type=DATASET, revision=head, local_dir=staging)).read_text()


def push(store, api, repo: str, tries: int = 4) -> str | None:
    """Commit what the repo lacks; returns the commit id, or None when the repo is up to date."""
    with tempfile.TemporaryDirectory(dir=store.root) as tmp:
        for attempt in range(1, tries + 1):
            head = api.repo_info(repo, repo_type=DATASET).sha
            names = set(api.list_repo_files(repo, repo_type=DATASET, revision=head))
            manifest = json.loads(_read(api, repo, MANIFEST, head, Path(tmp))) if MANIFEST in names else {}
            remote_text = _read(api, repo, REPLIES, head, Path(tmp)) if REPLIES in names else ""
            local = [asdict(r) for r in store.replies()]
            merged = dump(merge(load(remote_text), local))
            files = local_files(store.root)
            ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(store.root / p))
                   for p, sha in files.items() if manifest.get(p) != sha]
            new_manifest = {**manifest, **files}
            if merged != remote_text:
                ops.append(CommitOperationAdd(path_in_repo=REPLIES, path_or_fileobj=merged.encode()))
            if new_manifest != manifest:
                ops.append(CommitOperationAdd(path_in_repo=MANIFEST,
                                              path_or_fileobj=json.dumps(new_manifest, indent=0,
                                                                         sort_keys=True).encode()))
            if not ops:
                return None
            try:
                info = api.create_commit(repo, ops, commit_message=f"sync {len(ops)} file(s)", repo_type=DATASET,
                                         parent_commit=head)
                return info.oid
            except Exception:
                # another writer moved the head: merge with its commit and try again; anything else is raised
                if attempt == tries or api.repo_info(repo, repo_type=DATASET).sha == head:
                    raise
    return None


def restore(store, api, repo: str) -> dict:
    """Bring back the files and reply rows the data dir lacks (local ones are kept)."""
    head = api.repo_info(repo, repo_type=DATASET).sha
    names = api.list_repo_files(repo, repo_type=DATASET, revision=head)
    files = 0
    with tempfile.TemporaryDirectory(dir=store.root) as tmp:
        for name in names:
            if name.split("/")[0] in DATA_DIRS and not (store.root / name).exists():
                got = Path(api.hf_hub_download(repo, name, repo_type=DATASET, revision=head, local_dir=tmp))
                dest = store.root / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.replace(got, dest)
                except OSError:
                    shutil.copyfile(got, dest)
                files += 1
        rows = load(_read(api, repo, REPLIES, head, Path(tmp))) if REPLIES in names else []
    added = 0
    for r in rows:
        existing = store.reply(*(r[c] for c in KEY))
        if not existing or (existing.status != "ok" and r["status"] == "ok"):
            store.put_reply(Reply(**r))
            added += 1
    return {"files": files, "replies": added}
