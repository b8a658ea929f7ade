"""Arena settings: one dataclass, resolved from the environment and the data dir.

The IP salt comes from EMPATHY_ARENA_SALT; without it a random salt is generated
once and kept in `<data dir>/arena_salt` (mode 600), so hashes stay comparable
across restarts but are never derivable from a raw IP without the salt.
"""
from __future__ import annotations

import math
import os
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path

from arena.core.gold_clips import DEFAULT_CONSTRUCTIONS
from arena.core.listening import ListenRule
from arena.core.ratings import TrueSkillParams
from eval_backend.moderation.settings import screen_replies_enabled

SALT_ENV = "EMPATHY_ARENA_SALT"
SALT_FILE = "arena_salt"

# Replies naming a model or vendor would unblind the battle. Case-insensitive regexes;
# the configured model names are added at run time (see service.IdentityScreen).
DEFAULT_IDENTITY_PATTERNS: tuple[str, ...] = (
    r"\bopen\s?ai\b", r"\bchat\s?gpt\b", r"\bgpt[-\s]?\d", r"\bgpt\b", r"\bqwen", r"\bgemini\b",
    r"\bgemma\b", r"\bclaude\b", r"\banthropic\b", r"\bgoogle\b", r"\bdeep\s?mind\b", r"\bllama\b",
    r"\bmeta\s+ai\b", r"\bmistral\b", r"\bmoshi\b", r"\bkyutai\b", r"\balibaba\b", r"\bmicrosoft\b",
    r"\bphi-\d", r"\bdeepseek\b", r"\bgrok\b", r"\bxai\b",
    r"\bi(?:'m| am) (?:an? )?(?:ai|language|voice|speech)?\s*(?:model|assistant)? ?(?:called|named) \w+",
    r"\b(?:an? )?(?:ai|language|voice) (?:model|assistant) (?:made|built|created|developed|trained) by\b",
)


@dataclass(frozen=True)
class ArenaSettings:
    trueskill: TrueSkillParams = field(default_factory=TrueSkillParams)
    # integrity
    # the listening rule (arena/core/listening.py), one for the page and the server: a vote counts once each clip's
    # first min_listen_s seconds (all of a shorter clip; inf: every clip in full) were played, at no more than
    # max_playback_rate x speed since the clip's audio was fetched; 0 turns the rule off
    min_listen_s: float = 3.0
    max_playback_rate: float = 2.0          # the page caps playback at this rate; faster claims are impossible
    listen_tolerance_s: float = 0.1         # timer granularity and decoder rounding, both ways
    battle_ttl_s: float = 30 * 60.0         # a served battle can be voted on for this long
    session_votes_per_minute: int = 10
    session_votes_per_day: int = 500
    ip_votes_per_minute: int = 30
    ip_votes_per_day: int = 2000
    user_votes_per_day: int = 500           # per HF account, across sessions and addresses
    # abuse bounds, checked in memory before the writer thread (arena/core/abuse.py)
    ip_battles_per_minute: int = 60         # battles issued per client address (IPv6: per /64); bursts to this
    session_open_battles: int = 20          # served, unvoted, unexpired battles one session may hold
    ip_vote_attempts_per_minute: int = 60   # vote requests per client address, accepted or not
    counted_share_alert: float = 0.5        # integrity health: alert when fewer votes than this are accepted
    # gold battles (arena/services/gold.py): this share of battles pairs a real reply with a known-bad clip made from it;
    # their votes never enter the ratings and measure the voter (arena/core/sweeps.py). Off for a bare ArenaService
    # (tests of other parts count every battle); the app sets it from EMPATHY_ARENA_GOLD_SHARE (default 0.05).
    gold_share: float = 0.0
    gold_constructions: tuple[str, ...] = DEFAULT_CONSTRUCTIONS
    # proof of work for anonymous voters (arena/services/pow.py): a solved ALTCHA challenge before the first vote and then
    # every pow_every_votes votes; 0 = off (a bare ArenaService; the app sets it from EMPATHY_ARENA_POW_EVERY, 50)
    pow_every_votes: int = 0
    pow_cost: int = 1000                    # PBKDF2-SHA256 iterations per attempt
    pow_counter_max: int = 5000             # the solution is uniform in [max / 2, max]: 3.75M iterations on average
    pow_ttl_s: float = 600.0                # a challenge expires after this long
    # leaderboard
    # Vote floor, per axis: a model with fewer rated votes (wins, losses, ties) than this is "provisional":
    # no Bradley-Terry score, interval or rank, and left out of the others' fit. 30 is the low end of the
    # established arenas' floors (30-300): a 95% BT interval from 30 even battles is about +-125 points
    # (2 * 1.96 / sqrt(30) logits * 173.7), narrow enough to separate a clearly better model, while 300
    # would leave a young arena (hundreds of votes in all) with no ranked model at all.
    provisional_votes: int = 30
    bootstrap_rounds: int = 200
    # battles (from the replies of eval_backend.tasks.SPOKEN_TASKS)
    identity_patterns: tuple[str, ...] = DEFAULT_IDENTITY_PATTERNS
    benchmark_specs: tuple[str, ...] = ("demo",)   # loaded lazily for user audio and context text
    # safety (issue 14): serve only replies screened clean or released by the operator (eval_backend/moderation).
    # Off for a bare ArenaService (tests of other parts build arenas from fixture replies); the app turns it on
    # from EMPATHY_ARENA_SCREEN_REPLIES (default 1), see settings_from_env.
    screen_replies: bool = False
    # matchmaking weights (see matchmaking.py)
    new_model_boost: float = 4.0
    bridge_boost: float = 5.0
    salt: str = ""

    @property
    def listen_rule(self) -> ListenRule:
        return ListenRule(self.min_listen_s, self.max_playback_rate, self.listen_tolerance_s)

    def with_salt(self, data_dir: Path) -> "ArenaSettings":
        return self if self.salt else replace(self, salt=load_salt(data_dir))


def load_salt(data_dir: Path) -> str:
    env = os.environ.get(SALT_ENV)
    if env:
        return env
    path = Path(data_dir) / SALT_FILE
    if path.exists():
        return path.read_text().strip()
    salt = secrets.token_hex(32)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(salt)
    try:
        os.link(tmp, path)          # first writer wins if two processes race
    except FileExistsError:
        pass
    tmp.unlink(missing_ok=True)
    return path.read_text().strip()


GOLD_SHARE_ENV = "EMPATHY_ARENA_GOLD_SHARE"        # gold_share (default 0.05 in the app)
POW_ENV = "EMPATHY_ARENA_POW"                      # 1 (default) / 0: proof of work for anonymous voters
POW_EVERY_ENV = "EMPATHY_ARENA_POW_EVERY"          # pow_every_votes (default 50)
POW_COUNTER_ENV = "EMPATHY_ARENA_POW_COUNTER"      # pow_counter_max: the work asked (default 5000)
LISTEN_ENV = "EMPATHY_ARENA_LISTEN_S"              # min_listen_s: seconds of each clip to hear, or "all"
PLAYBACK_RATE_ENV = "EMPATHY_ARENA_MAX_PLAYBACK_RATE"  # max_playback_rate


def listen_from_env(env=os.environ) -> dict:
    """The listening rule's settings given in the environment (a bad value stops the start with its name)."""
    out = {}
    for name, key in ((LISTEN_ENV, "min_listen_s"), (PLAYBACK_RATE_ENV, "max_playback_rate")):
        raw = (env.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = math.inf if key == "min_listen_s" and raw.lower() == "all" else float(raw)
        except ValueError:
            value = math.nan
        if not (value >= (1 if key == "max_playback_rate" else 0)):    # also refuses nan
            raise ValueError(f"{name}={raw!r}: expected " + ("a number of seconds >= 0 or 'all'"
                                                            if key == "min_listen_s" else "a rate >= 1"))
        out[key] = value
    return out


def _number(env, name: str, default: float, low: float, high: float = math.inf) -> float:
    raw = (env.get(name) or "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = math.nan
    if not low <= value <= high:                    # also refuses nan
        raise ValueError(f"{name}={raw!r}: expected a number from {low:g} to {high:g}")
    return value


def integrity_from_env(env=os.environ) -> dict:
    """Gold battles and proof of work as the app runs them (a bad value stops the start with its name)."""
    every = int(_number(env, POW_EVERY_ENV, 50, 1))
    return {"gold_share": _number(env, GOLD_SHARE_ENV, 0.05, 0, 1),
            "pow_every_votes": every if (env.get(POW_ENV) or "1").strip() != "0" else 0,
            "pow_counter_max": int(_number(env, POW_COUNTER_ENV, 5000, 1, 10**7))}


def settings_from_env(data_dir: Path, **overrides) -> ArenaSettings:
    """Settings with the salt resolved; the listening rule from the environment (EMPATHY_ARENA_LISTEN_S,
    EMPATHY_ARENA_MAX_PLAYBACK_RATE), reply screening (EMPATHY_ARENA_SCREEN_REPLIES), gold battles and proof of
    work (EMPATHY_ARENA_GOLD_SHARE, EMPATHY_ARENA_POW, EMPATHY_ARENA_POW_EVERY, EMPATHY_ARENA_POW_COUNTER);
    numeric limits may be overridden by keyword."""
    return ArenaSettings(**{**listen_from_env(), **integrity_from_env(), "screen_replies": screen_replies_enabled(),
                            **overrides}).with_salt(data_dir)
