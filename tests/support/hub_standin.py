"""A stand-in for the Hugging Face Hub client (the part of `HfApi` the sync uses), in memory.

The real Hub is unreachable from tests, so this speaks HfApi's Python interface instead of HTTP:
create_repo, repo_info(.sha), list_repo_files, hf_hub_download(local_dir=...), create_commit and
run_as_future (one worker thread, as HfApi). It enforces what the sync relies on:

- `create_commit(parent_commit=X)` fails with HTTP 412 unless X is the branch head (optimistic locking),
  and X must look like a commit id (40 hex), as HfApi checks;
- a commit is all or nothing;
- failures on demand: `hub.down = True` (every call raises ConnectionError, as an unreachable Hub),
  `hub.fail_next("create_commit", n)`, `hub.hold_commits()` (commits block until `release()`),
  `hub.before_commit = fn` (runs inside create_commit before the parent check: a concurrent writer).

`hub.writes` lists (repo_id, path, sha256) of every file written, to check that logs are never rewritten.
"""
from __future__ import annotations

import hashlib
import io
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import httpx2
from huggingface_hub import constants
from huggingface_hub.utils import HfHubHTTPError


def http_error(status: int, message: str, path: str = "/api") -> HfHubHTTPError:
    """The error HfApi raises for an HTTP status (huggingface_hub 2.x wraps an httpx2 response)."""
    response = httpx2.Response(status, request=httpx2.Request("POST", f"https://huggingface.co{path}"))
    return HfHubHTTPError(f"{status} {message}", response=response)


@dataclass
class _Repo:
    commits: list[tuple[str, dict[str, bytes]]] = field(default_factory=list)   # (sha, full tree)

    @property
    def head(self) -> tuple[str, dict[str, bytes]]:
        return self.commits[-1]


class StandInHub:
    def __init__(self):
        self.repos: dict[tuple[str, str], _Repo] = {}
        self.down = False
        self.failures: dict[str, int] = {}
        self.calls: list[str] = []
        self.writes: list[tuple[str, str, str]] = []
        self.before_commit = None
        self._hold = threading.Event()
        self._hold.set()
        self._lock = threading.Lock()

    def fail_next(self, method: str, n: int = 1) -> None:
        self.failures[method] = self.failures.get(method, 0) + n

    def hold_commits(self) -> None:
        self._hold.clear()

    def release(self) -> None:
        self._hold.set()

    def check(self, method: str) -> None:
        self.calls.append(method)
        if self.down:
            raise ConnectionError(f"stand-in Hub unreachable ({method})")
        if self.failures.get(method):
            self.failures[method] -= 1
            raise http_error(503, f"Service Unavailable (stand-in failure on demand: {method})")

    def repo(self, repo_id: str, repo_type: str | None) -> _Repo:
        key = (repo_type or "model", repo_id)
        if key not in self.repos:
            raise http_error(404, f"Repository Not Found: {repo_id}")
        return self.repos[key]

    def files(self, repo_id: str, repo_type: str = "dataset") -> dict[str, bytes]:
        return dict(self.repo(repo_id, repo_type).head[1])

    def api(self, token: str | None = "hf_standin") -> "StandInApi":
        return StandInApi(self, token)


def _content(obj) -> bytes:
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj)
    if isinstance(obj, (str, Path)):
        return Path(obj).read_bytes()
    if isinstance(obj, io.BufferedIOBase) or hasattr(obj, "read"):
        obj.seek(0)
        return obj.read()
    raise TypeError(f"cannot read {type(obj).__name__}")


class StandInApi:
    def __init__(self, hub: StandInHub, token: str | None):
        self.hub, self.token = hub, token
        self._pool: ThreadPoolExecutor | None = None

    def run_as_future(self, fn, *args, **kwargs) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1)
        return self._pool.submit(fn, *args, **kwargs)

    def create_repo(self, repo_id, *, token=None, private=None, repo_type=None, exist_ok=False, **_):
        self.hub.check("create_repo")
        key = (repo_type or "model", repo_id)
        with self.hub._lock:
            if key in self.hub.repos and not exist_ok:
                raise http_error(409, f"Conflict: {repo_id} exists")
            if key not in self.hub.repos:
                sha = hashlib.sha1(f"init {repo_id}".encode()).hexdigest()
                self.hub.repos[key] = _Repo([(sha, {})])
        return SimpleNamespace(repo_id=repo_id, url=f"https://stand-in/{repo_id}")

    def repo_info(self, repo_id, *, repo_type=None, revision=None, **_):
        self.hub.check("repo_info")
        return SimpleNamespace(id=repo_id, sha=self.hub.repo(repo_id, repo_type).head[0])

    def list_repo_files(self, repo_id, *, revision=None, repo_type=None, token=None):
        self.hub.check("list_repo_files")
        return sorted(self._tree(repo_id, repo_type, revision))

    def _tree(self, repo_id, repo_type, revision) -> dict[str, bytes]:
        repo = self.hub.repo(repo_id, repo_type)
        if revision in (None, "main"):
            return repo.head[1]
        for sha, tree in repo.commits:
            if sha == revision:
                return tree
        raise http_error(404, f"Revision Not Found: {revision}")

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, revision=None, local_dir=None, **_):
        self.hub.check("hf_hub_download")
        tree = self._tree(repo_id, repo_type, revision)
        if filename not in tree:
            raise http_error(404, f"Entry Not Found: {filename}")
        dest = Path(local_dir) / filename
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(tree[filename])
        return str(dest)

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None, revision=None,
                      parent_commit=None, **_):
        self.hub.check("create_commit")
        if parent_commit is not None and not constants.REGEX_COMMIT_OID.fullmatch(parent_commit):
            raise ValueError(f"`parent_commit` is not a valid commit OID: {parent_commit!r}")
        staged = {op.path_in_repo: _content(op.path_or_fileobj) for op in operations}   # read before any change
        self.hub._hold.wait()
        if self.hub.before_commit is not None:
            hook, self.hub.before_commit = self.hub.before_commit, None
            hook()
        with self.hub._lock:
            repo = self.hub.repo(repo_id, repo_type)
            head_sha, tree = repo.head
            if parent_commit is not None and parent_commit != head_sha:
                raise http_error(412, f"Precondition Failed: parent commit {parent_commit[:8]} is not the head "
                                          f"{head_sha[:8]} of {revision or 'main'}")
            new_tree = {**tree, **staged}
            sha = hashlib.sha1(head_sha.encode() + commit_message.encode()
                               + b"".join(k.encode() + hashlib.sha256(v).digest() for k, v in sorted(staged.items()))
                               ).hexdigest()
            repo.commits.append((sha, new_tree))
            for path, data in staged.items():
                self.hub.writes.append((repo_id, path, hashlib.sha256(data).hexdigest()))
        return SimpleNamespace(oid=sha, commit_url=f"https://stand-in/{repo_id}/commit/{sha}")
