"""Sync the data dir with Hugging Face dataset repos, so a Space restart (which wipes the disk) loses nothing.

    sync = HubSync(store, HubSyncConfig.from_env(), append_votes=arena_service.append_votes)
    sync.start()           # restore from the repos, then push in the background; before serving
    sync.status            # one line for the UI ("synced ...", "Hub unreachable ...", "HF_HUB_OFFLINE=1 ...")
    sync.stop()            # at shutdown: a last push of the logs

- Append-only logs (votes, battles, refused votes, submission events with the submissions' public fields)
  go to the log repo through `huggingface_hub.CommitScheduler`: a subclass writes the rows added since the
  last push as new uniquely named files (under the scheduler's lock) just before each scheduled push, so
  no pushed file is ever rewritten. See logs.py.
- Replies (audio included) and results go to the state repo with `create_commit(parent_commit=head)`,
  merging and retrying when another writer got there first. See state.py.
- Voting never waits on the Hub: votes are committed to the local store; pushes run in background threads
  and a failed push leaves the rows in place for the next one (CommitScheduler retries every period).
- Start-up restores before serving. If the Hub cannot be reached within `restore_timeout_s`, the app serves
  local data, says so in `status` and the log, and a background thread keeps retrying; when it succeeds the
  missing rows are merged in and pushing starts.
  The votes are restored in one transaction (ids must stay in order): ~2,500 votes/s here, so keep
  `restore_timeout_s` above the restore time, else early votes wait for that transaction.
- HF_HUB_OFFLINE=1: no Hub call at all (status says so).
- Submissions come back from their logged public fields and events (the request list, name and quota checks
  survive); one that had not ended comes back FAILED as `restored_unfinished`, because its endpoint URL and
  API key never leave the machine. Not restored: the sessions / IP hashes / user names of votes (rate-limit
  history restarts empty) and submitters' names.

The Hub client is injected (`api`): HfApi(token=...) by default, a stand-in in tests (tests/support/hub_standin.py).
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from huggingface_hub import CommitScheduler

from eval_backend import sync_logs
from space_shell.hub_sync import logs, state
from space_shell.hub_sync.config import HubSyncConfig, _true

log = logging.getLogger("space_shell.hub_sync")
DATASET = "dataset"

__all__ = ["HubSync", "HubSyncConfig"]


class _LogScheduler(CommitScheduler):
    """CommitScheduler that first writes new log rows as new files, and does not re-upload files the repo
    already holds (its record of uploaded files lives in memory and is empty after a restart)."""

    def __init__(self, *, before_push, already_pushed: set[str], **kwargs):
        self._before_push = before_push
        self._already_pushed = already_pushed
        self.last_result: str = "no push yet"
        super().__init__(**kwargs)

    def push_to_hub(self):
        with self.lock:
            if self._already_pushed:
                for rel in self._already_pushed:
                    p = self.folder_path / rel
                    if p.is_file():
                        self.last_uploaded[p] = p.stat().st_mtime
                self._already_pushed = set()
        self._before_push(self.lock)
        try:
            info = super().push_to_hub()
        except Exception as exc:
            self.last_result = f"log push failed ({type(exc).__name__}: {exc}); kept for the next push"
            log.warning("Hub sync: %s", self.last_result)
            raise
        self.last_result = "logs pushed" if info is not None else "logs up to date"
        return info


class HubSync:
    def __init__(self, store, cfg: HubSyncConfig | None = None, api=None, append_votes=None):
        self.store = store
        self.cfg = cfg or HubSyncConfig.from_env()
        self._api = api
        self.append_votes = append_votes
        self.folder = Path(store.root) / "hub_outbox" / "logs"
        self.scheduler: _LogScheduler | None = None
        self.state = "not started"      # off | offline | connecting | local | synced
        self.status = "Hub sync not started"
        self.restored: dict | None = None
        self.last_state_push = "no push yet"
        self._stop = threading.Event()
        self._first_attempt = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def api(self):
        if self._api is None:
            from huggingface_hub import HfApi
            self._api = HfApi(token=self.cfg.token)
        return self._api

    def status_line(self) -> str:
        """`status` plus the outcome of the last pushes, for an admin view."""
        parts = [self.status]
        if self.scheduler is not None:
            parts.append(self.scheduler.last_result)
        if self.cfg.state_repo and self.state == "synced":
            parts.append(f"state push: {self.last_state_push}")
        return "; ".join(parts)

    def _set(self, state_: str, status: str, level: int = logging.INFO) -> None:
        self.state, self.status = state_, status
        log.log(level, "Hub sync: %s", status)

    def _local_votes(self) -> int:
        return sync_logs.local_rows(self.store, "votes")     # the arena registers the votes log and its count

    # ---------------------------------------------------------------- life cycle
    def start(self, wait_s: float | None = None) -> str:
        """Restore, then push in the background. Returns the status line (also in `self.status`)."""
        if self.cfg.offline or (self._api is None and _true(os.environ.get("HF_HUB_OFFLINE"))):
            self._set("offline", "HF_HUB_OFFLINE=1: serving local data only; nothing is restored from or pushed "
                                 "to the Hub")
            return self.status
        if not self.cfg.configured:
            self._set("off", "Hub sync is off (set HF_TOKEN and EMPATHY_ARENA_HUB_LOG_REPO / "
                             "EMPATHY_ARENA_HUB_STATE_REPO); data lives on this machine's disk only")
            return self.status
        self._set("connecting", "restoring from the Hub ...")
        self._thread = threading.Thread(target=self._run, name="hub-sync", daemon=True)
        self._thread.start()
        wait = self.cfg.restore_timeout_s if wait_s is None else wait_s
        if not self._first_attempt.wait(wait):
            self._set("local", f"the Hub has not answered in {wait:.0f} s: serving local data "
                               f"({self._local_votes()} votes); restoring in the background", logging.WARNING)
        return self.status

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            try:
                self.restored = self.restore()
                self._start_log_pushes()
                self._set("synced", f"synced with the Hub (restored {_summary(self.restored)})")
                self._first_attempt.set()
                break
            except Exception as exc:   # unreachable, refused, anything: serve local data and retry
                self._set("local", f"Hub unreachable ({type(exc).__name__}: {exc}): serving local data "
                                   f"({self._local_votes()} votes); retry {attempt} failed, next in "
                                   f"{self.cfg.retry_s:.0f} s", logging.WARNING)
                self._first_attempt.set()
                if self._stop.wait(self.cfg.retry_s):
                    return
        while self.cfg.state_repo and not self._stop.wait(self.cfg.every_min * 60):
            self.push_state()

    def stop(self, final_push: bool = True, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self.scheduler is not None:
            if final_push:
                try:
                    self.scheduler.trigger().result(timeout=timeout_s)
                except Exception as exc:
                    log.warning("Hub sync: last log push at shutdown failed (%s); rows stay in the local store", exc)
            self.scheduler.stop()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)

    # ---------------------------------------------------------------- restore
    def restore(self) -> dict:
        out: dict = {}
        if self.cfg.log_repo:
            api, repo = self.api, self.cfg.log_repo
            api.create_repo(repo, repo_type=DATASET, private=self.cfg.private, exist_ok=True)
            head = api.repo_info(repo, repo_type=DATASET).sha
            names = [n for n in api.list_repo_files(repo, repo_type=DATASET, revision=head)
                     if n.split("/")[0] in logs.names() and n.endswith(".jsonl")]
            texts = {}
            staging = self.folder.parent / "restore"
            for n in names:
                mine = self.folder / n          # a file this data dir wrote needs no download
                path = mine if mine.is_file() else Path(api.hf_hub_download(
                    repo, n, repo_type=DATASET, revision=head, local_dir=staging))
                texts[n] = path.read_text(encoding="utf-8")
            out.update(logs.restore(self.store, texts, self.append_votes))
            self._remote_logs = set(names)
        if self.cfg.state_repo:
            self.api.create_repo(self.cfg.state_repo, repo_type=DATASET, private=self.cfg.private, exist_ok=True)
            out.update(state.restore(self.store, self.api, self.cfg.state_repo))
        return out

    # ---------------------------------------------------------------- pushes
    def _start_log_pushes(self) -> None:
        if not self.cfg.log_repo or self.scheduler is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        node = logs.node_id(self.store)
        dropped = logs.drop_orphans(self.store, self.folder, node)
        if dropped:
            log.info("Hub sync: dropped %d unrecorded outbox file(s) left by a crash", len(dropped))
        self.scheduler = _LogScheduler(
            before_push=lambda lock: logs.flush(self.store, self.folder, node, lock),
            already_pushed=set(getattr(self, "_remote_logs", ())),
            repo_id=self.cfg.log_repo, repo_type=DATASET, folder_path=self.folder, every=self.cfg.every_min,
            private=self.cfg.private, token=self.cfg.token, hf_api=self.api)

    def push_logs(self, timeout_s: float | None = None):
        """Push new log rows now (tests, shutdown); raises what the Hub raised."""
        if self.scheduler is None:
            raise RuntimeError(f"log pushes are not running ({self.status})")
        return self.scheduler.trigger().result(timeout=timeout_s)

    def push_state(self) -> str | None:
        """Push replies and results now; a failure is logged and kept in `last_state_push`, never raised."""
        if not self.cfg.state_repo or self.state != "synced":
            return None
        try:
            oid = state.push(self.store, self.api, self.cfg.state_repo)
            self.last_state_push = f"pushed ({oid[:8]})" if oid else "up to date"
            return oid
        except Exception as exc:
            self.last_state_push = f"failed ({type(exc).__name__}: {exc}); retried in {self.cfg.every_min:g} min"
            log.warning("Hub sync: state push %s", self.last_state_push)
            return None


def _summary(counts: dict) -> str:
    parts = [f"{v} {k}" for k, v in counts.items() if v and k != "submissions_events_in_repo"]
    return ", ".join(parts) or "nothing new"
