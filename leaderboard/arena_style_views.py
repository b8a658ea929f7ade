"""The arena board's style control and vocal-state views (issue 23): the style-controlled rank beside the plain
one, each style covariate's effect in words, the vocal-state picker and the models x vocal states heat map
("who hears what").

Pure functions from the service's rating rows (arena/core/raters.py: RatingRow, Score) to what the page shows; the
tab (leaderboard/arena_leaderboard_tab.py) places the components and wires them. Vocal-state names may come from
imported vote files: they reach the page as Dropdown labels (text, never HTML), through `plots.plot_text` in the
figure and `inert.md_inline` in Markdown.
"""
from __future__ import annotations

import pandas as pd

from arena.core import covariates, raters
from eval_backend.benchmark.model import ATTRIBUTES, NEUTRAL
from eval_backend.inert import md_inline

from . import plots

STYLE_RANK = "rank, all else equal"
STYLE_SCORE = "score, all else equal (95% interval)"
ALL_STATES = ""              # the picker's value for "every battle"


def style_cells(row: raters.RatingRow, provisional_votes: int) -> dict[str, object]:
    """The style-controlled rank and score of one row, as the table shows them."""
    s = row.score("style_bt")
    if s.provisional or s.value is None:
        return {STYLE_RANK: "—", STYLE_SCORE: f"too few votes ({s.votes} of {provisional_votes})"}
    band = "" if s.low is None or s.high is None else f" ({s.low:.0f} – {s.high:.0f})"
    return {STYLE_RANK: s.rank if s.rank is not None else "—", STYLE_SCORE: f"{s.value:.0f}{band}"}


def with_style_columns(table: pd.DataFrame, rows: list[raters.RatingRow], provisional_votes: int) -> pd.DataFrame:
    """`table` (one line per row, same order) with the style-controlled rank after "rank" and the style-controlled
    score after the plain interval (or at the end). A table without models (the "no votes" line) is left as is."""
    if not rows or len(table) != len(rows):
        return table
    out = table.copy()
    cells = [style_cells(r, provisional_votes) for r in rows]
    columns = list(out.columns)
    for name, after in ((STYLE_RANK, "rank"), (STYLE_SCORE, "BT 95% interval")):
        at = columns.index(after) + 1 if after in columns else len(columns)
        out.insert(at, name, [c[name] for c in cells])
        columns.insert(at, name)
    return out


def effects_markdown(details: dict | None) -> str:
    """The style fit's covariate effects in sentences (arena/core/covariates.py: effect_sentence)."""
    if not details or not details.get("battles"):
        return ("**All else equal:** not estimated yet — no battle has the measures of its replies "
                "(length, loudness, pace, words) to fit them on.")
    lines = [f"- {covariates.effect_sentence(name, effect)}" for name, effect in details["effects"].items()]
    return ("**All else equal.** The second rank and score above take into account how long, loud and fast each "
            "reply was, how many words it had and (live battles) how long its voter waited, so a model does not "
            f"rank higher for being longer or louder (fitted on {details['battles']} battles):\n" + "\n".join(lines))


def attribute_choices(attributes: list[str]) -> list[tuple[str, str]]:
    """The picker: every battle, then each vocal state the votes carry (with its dimension when known)."""
    def label(a: str) -> str:
        if a == NEUTRAL:
            return "neutral (plainly spoken)"
        known = ATTRIBUTES.get(a)
        return f"{a} ({known[0]}: {known[1]})" if known else a
    return [("Every battle", ALL_STATES)] + [(label(a), a) for a in attributes]


def attribute_note(attribute: str | None) -> str:
    if not attribute:
        return ""
    return (f"The table covers only battles whose user spoke with the vocal state **{md_inline(attribute)}**; "
            "the vote floor applies to those votes alone.")


def heat_map(grid: dict[str, dict[str, raters.Score]], provisional_votes: int):
    """Models (best average first) x vocal states, from AttributeRater's grid."""
    attributes = list(grid)
    models = sorted({m for scores in grid.values() for m in scores})
    fitted = {m: [s.value for s in (grid[a].get(m) for a in attributes) if s is not None and s.value is not None]
              for m in models}
    models.sort(key=lambda m: (-(sum(fitted[m]) / len(fitted[m])) if fitted[m] else float("inf"), m))
    cells = [[None if (s := grid[a].get(m)) is None else (s.value, s.low, s.high, s.votes) for a in attributes]
             for m in models]
    return plots.attribute_heatmap(models, attributes, cells, provisional_votes)
