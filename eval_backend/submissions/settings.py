"""Operator settings for submissions, the queue and the worker (no I/O at import).

Environment (all optional):
    EMPATHY_ARENA_ALLOW_ADDRESSES   comma-separated addresses/networks a submitted endpoint may reach
                                    although they are internal, e.g. "127.0.0.1:8765" or "10.0.0.0/8"
    EMPATHY_ARENA_OPERATORS         comma-separated HF user names with operator rights (no quota, retry, cancel)
    EMPATHY_ARENA_SECRET_KEY        key that encrypts submitted API keys (see secrets.py)
    EMPATHY_ARENA_SUBMIT_BENCHMARK  benchmark spec submissions are evaluated on (default "demo")
Bounds on what a submitted endpoint may cost (defaults in `SubmissionSettings`; `LIMIT_ENV` lists them):
    EMPATHY_ARENA_MAX_REPLY_BYTES   bytes of one reply body, read while it streams (8 MiB)
    EMPATHY_ARENA_MAX_REPLY_AUDIO_S seconds of audio in one reply (120)
    EMPATHY_ARENA_MAX_REPLY_CHARS   characters of one reply's text, and of its transcript (20000)
    EMPATHY_ARENA_CALL_TIMEOUT_S    wall-clock seconds of one call, the whole reply included (120)
    EMPATHY_ARENA_JOB_DEADLINE_S    wall-clock seconds a job may spend asking its endpoint (3600)
    EMPATHY_ARENA_MAX_JOB_BYTES     bytes of replies (audio, text, raw) one job run may store (256 MiB)
    EMPATHY_ARENA_PREFLIGHT_TIMEOUT_S  seconds of one preflight call (30)
    EMPATHY_ARENA_CHECK_DEADLINE_S  seconds a whole Check/Submit preflight may take (60)
    EMPATHY_ARENA_CHECK_CONCURRENCY Check/Submit clicks served at once, each with its own deadline (4)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

from ..clients.limits import ReplyLimits
from ..config import load_models
from .netguard import parse_ip

ALLOW_ENV = "EMPATHY_ARENA_ALLOW_ADDRESSES"
OPERATORS_ENV = "EMPATHY_ARENA_OPERATORS"
BENCHMARK_ENV = "EMPATHY_ARENA_SUBMIT_BENCHMARK"
DEMO_ALLOW_FALLBACK = ("127.0.0.1:8765",)   # the baselines' default address (models.yaml)
BASELINE_PORT_ENV = "EMPATHY_ARENA_BASELINE_PORT"
MiB = 2 ** 20
# setting field -> environment variable (each read as a number; a bad value is refused at start-up)
LIMIT_ENV = {
    "max_reply_bytes": "EMPATHY_ARENA_MAX_REPLY_BYTES",
    "max_reply_audio_s": "EMPATHY_ARENA_MAX_REPLY_AUDIO_S",
    "max_reply_chars": "EMPATHY_ARENA_MAX_REPLY_CHARS",
    "call_timeout_s": "EMPATHY_ARENA_CALL_TIMEOUT_S",
    "job_deadline_s": "EMPATHY_ARENA_JOB_DEADLINE_S",
    "max_job_bytes": "EMPATHY_ARENA_MAX_JOB_BYTES",
    "preflight_timeout_s": "EMPATHY_ARENA_PREFLIGHT_TIMEOUT_S",
    "check_deadline_s": "EMPATHY_ARENA_CHECK_DEADLINE_S",
    "check_concurrency": "EMPATHY_ARENA_CHECK_CONCURRENCY",
}


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
    # what one reply may be (clients/limits.py), for the preflight and the worker alike
    max_reply_bytes: int = 8 * MiB
    max_reply_audio_s: float = 120.0
    max_reply_chars: int = 20_000
    # preflight (the Check and Submit buttons): each click has its own deadline; a few run at once
    preflight: bool = True
    preflight_items: int = 2
    preflight_timeout_s: float = 30.0
    check_deadline_s: float = 60.0
    check_concurrency: int = 4
    # worker
    call_timeout_s: float = 120.0
    job_deadline_s: float = 3600.0              # asking the endpoint; past it the job FAILS as `deadline`
    max_job_bytes: int = 256 * MiB              # stored by one run; past it the job FAILS as `too_large`
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

    def reply_limits(self):
        """The client's caps for submitted endpoints: never a body excerpt in a message (it reaches the submitter)."""
        return ReplyLimits(max_body_bytes=self.max_reply_bytes, max_audio_s=self.max_reply_audio_s,
                           max_text_chars=self.max_reply_chars, show_body=False)

    def is_operator(self, name: str | None) -> bool:
        return bool(name) and name in self.operators


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def demo_allowlist(models_file: str | None = None) -> tuple[str, ...]:
    """`host:port` of every baseline in the models YAML that listens on loopback: the only internal
    addresses the embedded demo needs (not all of 127.0.0.1, where the app itself listens too)."""
    from urllib.parse import urlsplit

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


def limits_from_env(env: dict | None = None) -> dict:
    """The bounds set in the environment, as setting overrides; a value that is not a positive number raises
    ValueError naming the variable."""
    env = os.environ if env is None else env
    types = {f.name: f.type for f in fields(SubmissionSettings)}
    out: dict = {}
    for name, var in LIMIT_ENV.items():
        text = (env.get(var) or "").strip()
        if not text:
            continue
        try:
            value = int(text) if types[name] in (int, "int") else float(text)
        except ValueError:
            raise ValueError(f"{var}={text!r} is not a number") from None
        if not value > 0 or value != value or value == float("inf"):
            raise ValueError(f"{var}={text!r} must be a positive, finite number")
        out[name] = value
    return out


def settings_from_env(demo: bool = False, models_file: str | None = None, demo_ports_only: bool = True,
                      baseline_port: int | None = None, **overrides) -> SubmissionSettings:
    """Settings from the environment. `demo=True` allowlists the embedded demo's baseline server and nothing
    else on loopback (not the app itself, nor any other local service): `127.0.0.1:<baseline_port>` when the
    bootstrap says which port it uses, else the loopback baselines of the models YAML (`demo_allowlist`).
    `demo_ports_only` is kept for callers of the old signature; every loopback port is never allowlisted."""
    if demo:
        demo_allow = (f"127.0.0.1:{int(baseline_port)}",) if baseline_port else demo_allowlist(models_file)
    else:
        demo_allow = ()
    allow = _split(os.environ.get(ALLOW_ENV)) + demo_allow
    base = SubmissionSettings(allow=tuple(dict.fromkeys(allow)), operators=_split(os.environ.get(OPERATORS_ENV)),
                              benchmark=os.environ.get(BENCHMARK_ENV) or "demo", **limits_from_env())
    return replace(base, **overrides)
