"""Arena settings: one dataclass, resolved from the environment and the data dir.

The IP salt comes from EMPATHY_ARENA_SALT; without it a random salt is generated
once and kept in `<data dir>/arena_salt` (mode 600), so hashes stay comparable
across restarts but are never derivable from a raw IP without the salt.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path

from .ratings import TrueSkillParams

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
    min_listen_s: float = 3.0               # per clip: min(min_listen_s, clip length)
    battle_ttl_s: float = 30 * 60.0         # a served battle can be voted on for this long
    session_votes_per_minute: int = 10
    session_votes_per_day: int = 500
    ip_votes_per_minute: int = 30
    ip_votes_per_day: int = 2000
    user_votes_per_day: int = 500           # per HF account, across sessions and addresses
    # abuse bounds, checked in memory before the writer thread (arena/abuse.py)
    ip_battles_per_minute: int = 60         # battles issued per client address (IPv6: per /64); bursts to this
    session_open_battles: int = 20          # served, unvoted, unexpired battles one session may hold
    ip_vote_attempts_per_minute: int = 60   # vote requests per client address, accepted or not
    counted_share_alert: float = 0.5        # integrity health: alert when fewer votes than this are accepted
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
    # matchmaking weights (see matchmaking.py)
    new_model_boost: float = 4.0
    bridge_boost: float = 5.0
    salt: str = ""

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


def settings_from_env(data_dir: Path, **overrides) -> ArenaSettings:
    """Settings with the salt resolved; numeric limits may be overridden by keyword."""
    return ArenaSettings(**overrides).with_salt(data_dir)
