"""Operator settings for submissions, the queue and the worker (no I/O at import).

Environment (all optional):
    EMPATHY_ARENA_ALLOW_ADDRESSES   comma-separated addresses/networks a submitted endpoint may reach
                                    although they are internal, e.g. "127.0.0.1:8765" or "10.0.0.0/8"
    EMPATHY_ARENA_OPERATORS         comma-separated HF user names with operator rights (no quota, retry, cancel)
    EMPATHY_ARENA_SECRET_KEY        key that encrypts submitted API keys (see secrets.py)
    EMPATHY_ARENA_SUBMIT_BENCHMARK  benchmark spec submissions are evaluated on (default "demo")
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

ALLOW_ENV = "EMPATHY_ARENA_ALLOW_ADDRESSES"
OPERATORS_ENV = "EMPATHY_ARENA_OPERATORS"
BENCHMARK_ENV = "EMPATHY_ARENA_SUBMIT_BENCHMARK"
DEMO_ALLOW = ("127.0.0.1",)                 # the embedded demo's baselines listen on loopback
DEMO_ALLOW_FALLBACK = ("127.0.0.1:8765",)   # the baselines' default address (models.yaml)
BASELINE_PORT_ENV = "EMPATHY_ARENA_BASELINE_PORT"


@dataclass(frozen=True)
class Submitter:
    """Who submits: an HF user on Spaces, a guest per browser session locally, or the operator
    (leaderboard/identity.py decides which from the request)."""
    name: str
    is_operator: bool = False


@dataclass(frozen=True)
class SubmissionSettings:
    allow: tuple[str, ...] = ()                 # see netguard.parse_allow
    operators: tuple[str, ...] = ()
    benchmark: str = "demo"
    tasks: tuple[str, ...] | None = None        # None: every task
    limit: int | None = None                    # only the first N requests (tests, small demos)
    # quota
    quota_per_window: int = 3
    quota_window_s: float = 7 * 86400.0
    # uploads
    max_upload_bytes: int = 200 * 2**20
    max_unpacked_bytes: int = 1024 * 2**20
    max_files: int = 5000
    max_jsonl_bytes: int = 50 * 2**20
    max_audio_bytes: int = 64 * 2**20           # one wav (10 min of 24 kHz 16-bit mono is 29 MB)
    # preflight
    preflight: bool = True
    preflight_items: int = 2
    preflight_timeout_s: float = 60.0
    # worker
    call_timeout_s: float = 120.0
    concurrency: int = 8
    max_attempts: int = 4                       # per request, retries included (runner)
    lease_s: float = 60.0
    heartbeat_s: float = 10.0
    max_claims: int = 3                         # a job whose worker died this often is FAILED (worker_lost)
    max_failed_share: float = 0.1               # more failed requests than this: the job FAILS (retry resumes)
    metrics: tuple[str, ...] | None = None      # scorer metric patterns (None: all)
    judge_config: str | None = None
    arena_benchmarks: tuple[str, ...] | None = None   # benchmark specs the arena serves (None: arena's default)
    excerpt_lines: int = 40

    def with_(self, **kw) -> "SubmissionSettings":
        return replace(self, **kw)

    def is_operator(self, name: str | None) -> bool:
        return bool(name) and name in self.operators


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def demo_allowlist(models_file: str | None = None) -> tuple[str, ...]:
    """`host:port` of every baseline in the models YAML that listens on loopback: the only internal
    addresses the embedded demo needs (not all of 127.0.0.1, where the app itself listens too)."""
    from urllib.parse import urlsplit

    from ..config import load_models
    from .netguard import parse_ip
    try:
        models = load_models(models_file)
    except (OSError, ValueError):
        return DEMO_ALLOW_FALLBACK
    out = []
    for spec in models.values():
        parts = urlsplit(spec.base_url)
        ip = parse_ip(parts.hostname or "")
        if spec.baseline and ip is not None and ip.is_loopback:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            out.append(f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}")
    port = os.environ.get(BASELINE_PORT_ENV)
    if port and port.isdigit():
        out.append(f"127.0.0.1:{port}")
    return tuple(dict.fromkeys(out)) or DEMO_ALLOW_FALLBACK


def settings_from_env(demo: bool = False, models_file: str | None = None, demo_ports_only: bool = False,
                      **overrides) -> SubmissionSettings:
    """Settings from the environment. `demo=True` allowlists 127.0.0.1, where the embedded demo's baselines
    listen (on whichever port bootstrap found free); `demo_ports_only=True` narrows that to the baselines'
    host:port (`demo_allowlist`), so a submission cannot reach other loopback services (the app itself)."""
    demo_allow = (demo_allowlist(models_file) if demo_ports_only else DEMO_ALLOW) if demo else ()
    allow = _split(os.environ.get(ALLOW_ENV)) + demo_allow
    base = SubmissionSettings(allow=tuple(dict.fromkeys(allow)), operators=_split(os.environ.get(OPERATORS_ENV)),
                              benchmark=os.environ.get(BENCHMARK_ENV) or "demo")
    return replace(base, **overrides)
