"""The append-only logs the Hub sync pushes, each registered by the module that owns its table.

Like a migration (`store.register_migration`), a log is declared next to its table: the arena registers its
votes, battles and refused votes (arena/tables/storage.py), the queue its submission events
(eval_backend/submissions/queue.py). eval_backend/hub_sync reads this registry, so it holds no SQL of other
modules' tables and never imports them (eval_backend does not import arena).

    register_sync_log(SyncLog("votes", "arena_votes", select, last, restore, order=10, count=count_votes))

`select` reads the rows with after (?) < watermark <= cut (?), in watermark order, LIMIT ?, with the watermark
as column `seq`; `last` is the watermark's current maximum (the cut). `restore(ctx, records)` puts back the
logged records the store lacks, inside `ctx.conn`'s transaction, and returns how many it added.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class RestoreContext:
    store: object
    conn: object
    mark: Callable[[int], None]          # after an exact restore: the restored rows are in the repo already
    append_votes: Callable | None = None  # the arena's vote recorder (ratings included), injected by the app


@dataclass(frozen=True)
class SyncLog:
    name: str        # folder in the repo
    table: str       # must exist, else the log is skipped
    select: str
    last: str
    restore: Callable[[RestoreContext, list], int]
    order: int = 100                                  # logs run in this order (a vote before its battle)
    dialect: Callable[[object, str], str] | None = None   # fills dialect-specific parts of select/last
    count: Callable[[object], int] | None = None      # rows held locally (for status lines)

    def sql(self, store, text: str | None = None) -> str:
        """`select` (or another of its texts, like `last`) for the store's database."""
        text = self.select if text is None else text
        return self.dialect(store, text) if self.dialect else text


_LOGS: dict[str, SyncLog] = {}


def register_sync_log(log: SyncLog) -> None:
    if log.name in _LOGS and _LOGS[log.name] != log:
        raise ValueError(f"sync log {log.name} registered twice differently")
    _LOGS[log.name] = log


def sync_logs() -> tuple[SyncLog, ...]:
    return tuple(sorted(_LOGS.values(), key=lambda log: (log.order, log.name)))


def local_rows(store, name: str) -> int:
    """How many rows the log `name` holds locally (0 when it is not registered or has no count)."""
    log = _LOGS.get(name)
    return log.count(store) if log and log.count else 0
