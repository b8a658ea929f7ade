"""The page's API for `gradio_client` users: a small set of named endpoints, documented in the README
("The API"); every other event of the page is private (not on the API page, not callable by the client
libraries). Hiding is not access control: the page itself still calls its events through Gradio's queue, so
each stays guarded by its own checks (docs/security.md).

    client.predict(axis="overall", battles="all", api_name="/arena_board")   -> [{rank, model, bt_score, ...}]
    client.predict(api_name="/benchmark_board")                              -> [{rank, model, LB1, ...}]

The rows are the boards' own (arena: `ArenaService.ratings_table`, in board order; benchmark: the rows measured
here, `results_table.numeric_view`: numbers or None, the reason in `notes`), never TrueSkill numbers the board
hides by default.
"""
from __future__ import annotations

import math

import gradio as gr

from arena.tables import storage as arena_storage

from . import results_table as rt
from .arena_leaderboard_tab import BoardCache
from .bench_tab import current_docs, model_infos
from .numeric_rows import numeric_view

PUBLIC_ENDPOINTS = ("arena_board", "benchmark_board")
BATTLES = ("all", "benchmark", "live")


def _number(x) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def arena_rows(rows: list[dict], provisional_votes: int) -> list[dict]:
    """The arena board's rows for machines: Bradley–Terry score and interval (None while provisional), the
    vote counts, and for a provisional model how many rated votes it still needs."""
    out = []
    for r in rows:
        rated = int(r.get("bt_votes") or 0)
        provisional = bool(r.get("provisional"))
        out.append({"rank": r.get("bt_rank"), "model": r["model"],
                    "bt_score": None if provisional else _number(r.get("bt")),
                    "bt_low": None if provisional else _number(r.get("bt_low")),
                    "bt_high": None if provisional else _number(r.get("bt_high")),
                    "votes": int(r["votes"]), "rated_votes": rated, "wins": int(r["wins"]),
                    "losses": int(r["losses"]), "ties": int(r["ties"]), "both_bad": int(r.get("both_bad") or 0),
                    "provisional": provisional,
                    "votes_needed": max(provisional_votes - rated, 0) if provisional else 0,
                    "paused": bool(r.get("paused"))})
    return out


def register_public_api(ctx) -> None:
    """Add the named endpoints to the Blocks being built (inside `gr.Blocks`)."""
    def compute(key: str) -> list[dict]:
        axis, _, battles = key.partition("|")
        return arena_rows(ctx.arena.ratings_table(axis, source=None if battles == "all" else battles),
                          ctx.arena.settings.provisional_votes)

    cache = BoardCache(compute, lambda: arena_storage.vote_log_version(ctx.arena.store))

    def arena_board(axis: str = "overall", battles: str = "all") -> list[dict]:
        """The arena leaderboard, best first: one row per model with its Bradley–Terry score and 95% interval
        (None while the model is provisional), rank, votes, rated votes, wins, losses, ties, 'both bad' votes,
        and how many rated votes a provisional model still needs. axis: overall | said | sounded | speaker |
        paralinguistic | environment; battles: all | benchmark | live."""
        if axis not in arena_storage.AXES:
            raise gr.Error(f"axis must be one of {', '.join(arena_storage.AXES)}")
        if battles not in BATTLES:
            raise gr.Error(f"battles must be one of {', '.join(BATTLES)}")
        return cache.get(f"{axis}|{battles}")

    def benchmark_board() -> list[dict]:
        """The benchmark leaderboard's rows measured here, best first on LB1: rank, model, type, each board
        with its 95% interval (low, high); a value that could not be computed is None and its reason is in
        the row's `notes`. The EchoMind paper's reported figures are not included (they are not ranked)."""
        df, groups = rt.build_table(current_docs(ctx), model_infos(ctx), None)
        measured, _ = rt.sections(rt.apply_filters(df, groups, rt.FilterState()))
        view = numeric_view(measured.drop(columns=["source"], errors="ignore"))
        return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
                for row in view.to_dict(orient="records")]

    gr.api(arena_board, api_name="arena_board", concurrency_limit=2, concurrency_id="public_api")
    gr.api(benchmark_board, api_name="benchmark_board", concurrency_limit=2, concurrency_id="public_api")


def hide_unnamed(demo: gr.Blocks) -> None:
    """Every event of the page that is not a PUBLIC_ENDPOINTS entry: private (off the API page and out of the
    client libraries' reach). Run once the page is built, so a tab's new event is hidden without a word."""
    for fn in demo.fns.values():
        if fn.api_name not in PUBLIC_ENDPOINTS:
            fn.api_visibility = "private"
