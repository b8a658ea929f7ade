"""The arena leaderboard tab: ratings table, intervals, pairwise matrices, history, bias, export.

One headline: the table is ranked and sorted by Bradley–Terry (interval rank, then score; the order
comes from the service), provisional models below with "too few votes"; TrueSkill columns only under
"All columns".

Thin: numbers come from `ArenaService` (TrueSkill stored ratings, Bradley–Terry
bootstrap, matrices, history, position bias); figures from `leaderboard.plots`.
`board_rows` is a pure function so the table's content is testable without Gradio.
"""
from __future__ import annotations

import math
import threading
import time

import gradio as gr
import pandas as pd

from arena.core import raters
from arena.tables import storage as arena_storage
from space_shell.tab_contract import PageLoad, TabHandles

from . import arena_style_views as style_views
from . import plots
from .download_files import DownloadFolder

AXES = [("Overall", "overall"), ("What was said", "said"), ("How it sounded", "sounded"),
        ("User's voice: speaker", "speaker"), ("User's voice: paralinguistic", "paralinguistic"),
        ("User's voice: environment", "environment")]
# The headline: Bradley-Terry with its interval and interval rank (the board's one order, see
# arena.services.service.board_order). TrueSkill is the live rating behind matchmaking; "all columns" shows it.
COLUMNS = ["rank", "model", "BT score", "BT 95% interval", "votes", "win rate", "status"]
TRUESKILL_COLUMNS = ["mu", "sigma", "conservative (μ−3σ)"]
ALL_COLUMNS = COLUMNS[:-1] + TRUESKILL_COLUMNS + COLUMNS[-1:]
NO_VOTES = "no votes on this axis yet"


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def win_rate(row: dict) -> float | None:
    """(wins + ½ ties) / (wins + losses + ties); 'both bad' votes carry no preference. None when no such vote."""
    n = row["wins"] + row["losses"] + row["ties"]
    return (row["wins"] + 0.5 * row["ties"]) / n if n else None


def board_rows(rows: list[dict], provisional_votes: int, all_columns: bool = False) -> pd.DataFrame:
    """Service ratings rows (already in the service's board order) -> the displayed table. A provisional
    model has no rank and no interval ("too few votes"), never a number that looks measured; an axis
    without votes is one row saying so."""
    columns = ALL_COLUMNS if all_columns else COLUMNS
    if not rows:
        return pd.DataFrame([{c: (NO_VOTES if c == "model" else "") for c in columns}], columns=columns)
    out = []
    for r in rows:
        wr = win_rate(r)
        status = []
        rated = r.get("bt_votes", 0)
        if r.get("provisional"):
            more = max(provisional_votes - rated, 0)
            status.append(f"provisional: {rated} of {provisional_votes} rated votes, "
                          f"{more} more to be ranked")
        if r.get("paused"):
            status.append("paused")
        if r.get("provisional"):
            score, interval = None, f"too few votes ({rated} of {provisional_votes})"
        else:
            score = None if _nan(r.get("bt")) else round(r["bt"], 1)
            interval = ("—" if _nan(r.get("bt_low")) or _nan(r.get("bt_high"))
                        else f"{r['bt_low']:.0f} – {r['bt_high']:.0f}")
        out.append({
            "rank": r["bt_rank"] if r.get("bt_rank") is not None else "—",
            "model": r["model"],
            "BT score": score,
            "BT 95% interval": interval,
            "votes": r["votes"],
            "win rate": "—" if wr is None else f"{100 * wr:.1f}%",
            "mu": round(r["mu"], 2),
            "sigma": round(r["sigma"], 2),
            "conservative (μ−3σ)": round(r["conservative"], 2),
            "status": ", ".join(status) or "listed",
        })
    return pd.DataFrame(out, columns=columns)


def unranked_text(rows: list[dict], provisional_votes: int) -> str:
    """What the interval chart says when it has no ranked model: "no votes yet" only when there are none (the
    table beside it would contradict it otherwise)."""
    if not any(r.get("votes") for r in rows):
        return "no votes yet"
    return f"no model ranked yet: each needs {provisional_votes} rated votes (the table shows how many it has)"


def bias_line(p, slot=None) -> str:
    """Position bias: the reply the voter started first (`p`, from the listen events), and slot A (`slot`)."""
    if p.n == 0 or _nan(p.share):
        line = "**Position bias:** no decisive votes that say which reply was heard first yet."
    else:
        line = (f"**Position bias:** the reply heard first won {100 * p.share:.1f}% of {p.n} decisive votes "
                f"(95% interval {100 * p.low:.1f}–{100 * p.high:.1f}%; 50% = no bias).")
    if slot is not None and slot.n and not _nan(slot.share):
        line += (f" **Slot:** reply A (listed first) won {100 * slot.share:.1f}% of {slot.n} decisive votes "
                 f"(95% interval {100 * slot.low:.1f}–{100 * slot.high:.1f}%).")
    return line


def health_line(h: dict) -> str:
    total = h["accepted"] + sum(h["refused"].values())
    if not total:
        return "**Integrity (24 h):** no vote submissions yet."
    refused = ", ".join(f"{k} {v}" for k, v in sorted(h["refused"].items())) or "none"
    flag = " ⚠️ **low counted share: check the integrity rules**" if h["alert"] else ""
    return (f"**Integrity (24 h):** {h['accepted']} of {total} submissions counted "
            f"({100 * h['counted_share']:.0f}%); refused: {refused}.{flag}")


def history_series(history: list[dict]) -> dict[str, tuple[list, list, list]]:
    series: dict[str, tuple[list, list, list]] = {}
    for h in history:
        xs, mus, sigmas = series.setdefault(h["model"], ([], [], []))
        xs.append(h["votes_so_far"])
        mus.append(h["mu"])
        sigmas.append(h["sigma"])
    return series


class BoardCache:
    """Recompute the board only when votes arrived, and at most every `min_age_s` seconds: every page load
    asks for it, and a full recompute (bootstrap, matrices, history) reads the whole vote log."""

    def __init__(self, compute, version, min_age_s: float = 10.0, clock=time.monotonic):
        self.compute, self.version, self.min_age_s, self.clock = compute, version, min_age_s, clock
        self._entries: dict[str, tuple[float, object, tuple]] = {}
        self._lock = threading.Lock()

    def get(self, axis: str) -> tuple:
        version = self.version()
        with self._lock:
            hit = self._entries.get(axis)
            if hit and (hit[1] == version or self.clock() - hit[0] < self.min_age_s):
                return hit[2]
        value = self.compute(axis)
        with self._lock:
            self._entries[axis] = (self.clock(), version, value)
        return value


def build_arena_leaderboard_tab(ctx) -> TabHandles:
    """Build the leaderboard components inside the current gr.Blocks/gr.Tab context (ctx.arena: the service)."""
    service = ctx.arena
    provisional = service.settings.provisional_votes
    gr.Markdown(
        "### Arena leaderboard\nRanked by an order-free **Bradley–Terry** score with its 95% bootstrap "
        "interval. Rank = 1 + the number of models whose interval lies entirely above this model's, so models "
        f"whose intervals overlap share a rank. Models with fewer than {provisional} rated votes on this axis "
        "(wins, losses, ties) are **provisional**: listed below the ranked ones with *too few votes*, and left "
        "out of the others' fit and of the scale's reference (the mean of the ranked models = 1000). "
        "TrueSkill, the live rating that picks the next battles, is under *All columns*.")
    with gr.Row():
        axis = gr.Radio(AXES, value="overall", label="Rating axis", elem_id="arena-board-axis")
        source = gr.Radio([("All battles", "all"), ("Benchmark battles", "benchmark"), ("Live battles", "live")],
                          value="all", label="Battles", elem_id="arena-board-source")
        state = gr.Dropdown(style_views.attribute_choices(list(raters.KNOWN_ATTRIBUTES)), value=style_views.ALL_STATES,
                            label="Vocal state of the user", elem_id="arena-board-attribute")
        all_cols = gr.Checkbox(value=False, label="All columns (TrueSkill μ, σ, μ − 3σ)", elem_id="arena-board-all")
        refresh = gr.Button("Refresh", size="sm", elem_id="arena-board-refresh")
    first = pd.DataFrame([{c: ("loading…" if c == "model" else "") for c in COLUMNS}], columns=COLUMNS)
    table = gr.Dataframe(first, interactive=False, show_search="filter", elem_id="arena-board-table",
                         wrap=True)
    style_md = gr.Markdown(elem_id="arena-board-style")
    bias = gr.Markdown(elem_id="arena-board-bias")
    health = gr.Markdown(elem_id="arena-board-health")
    intervals = gr.Plot(label="Bradley–Terry intervals", show_label=False, elem_id="arena-board-intervals")
    states = gr.Plot(label="Who hears what", show_label=False, elem_id="arena-board-states")
    with gr.Row():
        win_map = gr.Plot(label="Pairwise win rate", show_label=False, elem_id="arena-board-winrate")
        count_map = gr.Plot(label="Battle counts", show_label=False, elem_id="arena-board-counts")
    history = gr.Plot(label="Rating over time", show_label=False, elem_id="arena-board-history")
    with gr.Row():
        export_jsonl = gr.Button("Export public vote log (JSONL)", size="sm")
        export_csv = gr.Button("Export public vote log (CSV)", size="sm")
    export_file = gr.File(label="Vote log", interactive=False, visible=False, elem_id="arena-board-vote-log")

    def compute(key: str):
        axis_name, kind, attr = key.split("|")
        # the table over the chosen battles (arena/services/by_source.py, a vocal state); the plots and lines below cover all
        board = service.board(axis_name, None, kind or None, attr or None, ("bt", "style_bt"), stored=True)
        rows = [r.as_json(raters.with_scores(raters.BOARD_FIELDS, ("bt", "style_bt"))) for r in board.rows]
        fitted = [r for r in rows if not r["provisional"] and not _nan(r.get("bt")) and not _nan(r.get("bt_low"))]
        mats = service.pairwise_matrices(axis_name)
        return (
            rows, board.rows,
            style_views.effects_markdown(board.details.get("style_bt")) + "\n\n" + style_views.attribute_note(attr),
            style_views.heat_map(service.attribute_grid(axis_name, None, kind or None), provisional),
            bias_line(service.position_bias(), service.slot_bias()),
            health_line(service.integrity_health()),
            plots.interval_chart([r["model"] for r in fitted], [r["bt"] for r in fitted],
                                 [r["bt_low"] for r in fitted], [r["bt_high"] for r in fitted],
                                 empty=unranked_text(rows, provisional)),
            plots.win_rate_heatmap(mats["models"], mats["win_rate"]),
            plots.battle_count_heatmap(mats["models"], mats["battles"]),
            plots.rating_history_chart(history_series(service.rating_history(axis_name))),
        )

    def vote_log_version():
        return arena_storage.vote_log_version(service.store)

    cache = BoardCache(compute, vote_log_version)

    def load(axis_name: str, all_columns: bool = False, kind: str = "all", attr: str = style_views.ALL_STATES):
        rows, typed, *rest = cache.get(f"{axis_name}|{kind or 'all'}|{attr or ''}")
        return (style_views.with_style_columns(board_rows(rows, provisional, bool(all_columns)), typed, provisional),
                *rest)

    downloads = DownloadFolder("arena_votes_")

    def export(fmt: str):
        """The file box appears only with a file in it (an empty "Vote log" box reads as a broken download)."""
        path = downloads.write(f"arena_votes.{fmt}", service.export_votes(fmt))
        return gr.update(value=str(path), visible=True)

    outputs = [table, style_md, states, bias, health, intervals, win_map, count_map, history]
    inputs = [axis, all_cols, source, state]
    for control in (refresh.click, axis.change, all_cols.change, source.change, state.change):
        control(load, inputs, outputs, api_visibility="private")
    export_jsonl.click(lambda: export("jsonl"), None, export_file, api_visibility="private")
    export_csv.click(lambda: export("csv"), None, export_file, api_visibility="private")
    return TabHandles(loads=(PageLoad(load, inputs, outputs, dict(api_visibility="private")),))
