"""Hub sync settings from the environment (read once, at start-up; no I/O at import)."""
from __future__ import annotations

import os
from dataclasses import dataclass

TOKEN_ENV = "HF_TOKEN"
LOG_REPO_ENV = "EMPATHY_ARENA_HUB_LOG_REPO"        # dataset repo for the append-only logs
STATE_REPO_ENV = "EMPATHY_ARENA_HUB_STATE_REPO"    # dataset repo for replies (audio included) and results
EVERY_ENV = "EMPATHY_ARENA_HUB_EVERY_MIN"
RETRY_ENV = "EMPATHY_ARENA_HUB_RETRY_S"
PRIVATE_ENV = "EMPATHY_ARENA_HUB_PRIVATE"


def _true(value: str | None) -> bool:
    """As huggingface_hub reads HF_HUB_OFFLINE: 1, true, yes, on (any case)."""
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class HubSyncConfig:
    token: str | None = None
    log_repo: str | None = None
    state_repo: str | None = None
    every_min: float = 5.0           # CommitScheduler period for the logs, and the state push period
    retry_s: float = 60.0            # while the Hub is unreachable: retry restore this often
    restore_timeout_s: float = 300.0  # start() waits this long for the first restore before serving local data
    # (an unreachable Hub fails in ~23 s; a reachable one restores ~2,500 votes/s: see docs/benchmarks.md)
    private: bool = True             # repos are created private (battle ids, replies and results inside)
    offline: bool = False            # HF_HUB_OFFLINE=1: no Hub call at all

    def __post_init__(self) -> None:
        if not (self.every_min > 0 and self.retry_s > 0 and self.restore_timeout_s >= 0):
            raise ValueError("every_min and retry_s must be > 0, restore_timeout_s >= 0")

    @property
    def configured(self) -> bool:
        return bool(self.token and (self.log_repo or self.state_repo))

    @classmethod
    def from_env(cls, env=None, **overrides) -> "HubSyncConfig":
        env = os.environ if env is None else env
        values = {"token": env.get(TOKEN_ENV) or None, "log_repo": env.get(LOG_REPO_ENV) or None,
                  "state_repo": env.get(STATE_REPO_ENV) or None, "offline": _true(env.get("HF_HUB_OFFLINE"))}
        try:
            if env.get(EVERY_ENV):
                values["every_min"] = float(env[EVERY_ENV])
            if env.get(RETRY_ENV):
                values["retry_s"] = float(env[RETRY_ENV])
        except ValueError as exc:
            raise ValueError(f"{EVERY_ENV} / {RETRY_ENV} must be numbers: {exc}") from None
        if env.get(PRIVATE_ENV):
            values["private"] = _true(env[PRIVATE_ENV])
        return cls(**{**values, **overrides})
