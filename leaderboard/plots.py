"""Arena leaderboard figures: pure functions from plain data to plotly figures.

No I/O and no service calls here, so every figure can be built (and tested) from
literal data. Missing values stay missing (NaN cells, no bar), never zero. Model names are
the submitters': plotly renders a pseudo-HTML subset (links too) in labels, so each name
passes through `plot_text` (HTML-escaped) here.
"""
from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go

from eval_backend.inert import plot_text

_HEIGHT = 420
TITLE_CHARS = 34          # a title line that fits a 390 px phone (the plot is ~340 px wide there)


def wrap_title(text: str, width: int = TITLE_CHARS) -> tuple[str, int]:
    """(the title broken into lines of at most `width` characters at spaces, its line count). Plotly never
    wraps a title: a long one runs off the figure's edges on a phone."""
    lines, line = [], ""
    for word in str(text).split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(lines), len(lines)


def fit(fig: go.Figure) -> go.Figure:
    """Make a figure fit any width: the title wrapped and left-aligned with room above the plot, axis margins
    grown to their labels (automargin), the legend as rows under the plot. Every figure of the page goes
    through here (tests/test_plot_fit.py measures the text boxes in a browser at 1440 and 390 px)."""
    title = fig.layout.title.text or ""
    text, n = wrap_title(title) if "<br>" not in title else (title, title.count("<br>") + 1)
    margin = fig.layout.margin
    fig.update_layout(title=dict(text=text, x=0.02, xanchor="left", xref="container", y=1, yanchor="top",
                                 yref="container", pad=dict(t=12 + 8 * (n - 1)), font=dict(size=15)),
                      margin=dict(l=margin.l if margin.l is not None else 10, r=margin.r if margin.r is not None else 10,
                                  t=40 + 24 * n, b=margin.b if margin.b is not None else 40),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left"),
                      autosize=True)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def count_axis(max_count: float) -> dict:
    """Axis settings for counts: whole-number ticks only (no 1.5 votes); step 1 up to 10, else plotly's own."""
    out = {"tickformat": "d"}
    if max_count <= 10:
        out.update(tick0=0, dtick=1)
    return out


def _empty(title: str, why: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=_HEIGHT, xaxis_visible=False, yaxis_visible=False,
                      annotations=[dict(text=wrap_title(why)[0], showarrow=False, x=0.5, y=0.5, xref="paper",
                                        yref="paper")])       # wrapped: it must fit a phone's width too
    return fit(fig)


def interval_chart(models: Sequence[str], scores: Sequence[float], lows: Sequence[float],
                   highs: Sequence[float], title: str = "Bradley–Terry score, 95% bootstrap interval",
                   provisional: Sequence[bool] | None = None, empty: str = "no votes yet") -> go.Figure:
    """One point per model with its interval, best on top. `provisional` models are drawn hollow; `empty`:
    what the chart says when no model has an interval."""
    if not models:
        return _empty(title, empty)
    if not (len(models) == len(scores) == len(lows) == len(highs)):
        raise ValueError("models, scores, lows and highs must have the same length")
    prov = list(provisional) if provisional is not None else [False] * len(models)
    order = sorted(range(len(models)), key=lambda i: scores[i])       # plotly draws y bottom-up
    ys = [plot_text(models[i]) for i in order]
    xs = [scores[i] for i in order]
    fig = go.Figure(go.Scatter(
        x=xs, y=ys, mode="markers",
        marker=dict(size=11, symbol=["circle-open" if prov[i] else "circle" for i in order]),
        error_x=dict(type="data", symmetric=False,
                     array=[highs[i] - scores[i] for i in order],
                     arrayminus=[scores[i] - lows[i] for i in order]),
        hovertemplate="%{y}: %{x:.1f}<extra></extra>",
    ))
    fig.update_layout(title=title, height=max(_HEIGHT, 60 + 40 * len(models)), xaxis_title="score",
                      margin=dict(l=10, r=10, t=50, b=40))
    return fit(fig)


def matrix_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]], title: str,
                   value_format: str = ".2f", colorscale: str = "RdBu", zmid: float | None = 0.5,
                   zrange: tuple[float, float] | None = None, colorbar: dict | None = None) -> go.Figure:
    """Row model vs column model. None (pair never met) and the diagonal stay empty cells."""
    if not models:
        return _empty(title, "no battles yet")
    if len(matrix) != len(models) or any(len(row) != len(models) for row in matrix):
        raise ValueError("matrix must be square with one row per model")
    cells = [[None if i == j else v for j, v in enumerate(row)] for i, row in enumerate(matrix)]
    z = [[math.nan if v is None else float(v) for v in row] for row in cells]
    text = [["" if v is None else format(v, value_format) for v in row] for row in cells]
    names = [plot_text(m) for m in models]
    fig = go.Figure(go.Heatmap(
        z=z, x=names, y=names, text=text, texttemplate="%{text}",
        colorscale=colorscale, zmid=zmid, hoverongaps=False,
        zmin=zrange[0] if zrange else None, zmax=zrange[1] if zrange else None,
        hovertemplate="%{y} vs %{x}: %{text}<extra></extra>", colorbar=colorbar or {},
    ))
    fig.update_layout(title=title, height=max(_HEIGHT, 80 + 45 * len(models)),
                      xaxis_title="opponent (column)", yaxis_title="model (row)",
                      yaxis_autorange="reversed", margin=dict(l=10, r=10, t=50, b=40))
    return fit(fig)


def win_rate_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]]) -> go.Figure:
    """Shares shown as percentages (cells and colour bar); the values stay shares (0-1)."""
    return matrix_heatmap(models, matrix, "Battles the row model won against the column model (ties = ½)",
                          value_format=".0%", zrange=(0.0, 1.0), colorbar=dict(tickformat=".0%"))


def battle_count_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]]) -> go.Figure:
    top = max([float(v) for row in matrix for v in row if v is not None] or [0.0])
    return matrix_heatmap(models, matrix, "Counted battles per pair", value_format=".0f",
                          colorscale="Blues", zmid=None, colorbar=count_axis(top))


def rating_history_chart(series: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
                         title: str = "TrueSkill μ over votes (band: ±σ)") -> go.Figure:
    """`series[model] = (x, mu, sigma)` with x the vote index (or time) after each of the model's updates."""
    if not series:
        return _empty(title, "no votes yet")
    fig = go.Figure()
    for model, (xs, mus, sigmas) in sorted(series.items()):
        if not (len(xs) == len(mus) == len(sigmas)):
            raise ValueError(f"history of {model}: x, mu and sigma differ in length")
        upper = [m + s for m, s in zip(mus, sigmas)]
        lower = [m - s for m, s in zip(mus, sigmas)]
        fig.add_trace(go.Scatter(x=list(xs) + list(xs)[::-1], y=upper + lower[::-1], fill="toself",
                                 opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False,
                                 legendgroup=model))
        fig.add_trace(go.Scatter(x=list(xs), y=list(mus), mode="lines", name=plot_text(model),
                                 legendgroup=model))
    top = max([float(x) for xs, _, _ in series.values() for x in xs] or [0.0])
    fig.update_layout(title=title, height=_HEIGHT, xaxis_title="vote", yaxis_title="μ",
                      margin=dict(l=10, r=10, t=50, b=40), xaxis=count_axis(top))
    return fit(fig)


NO_VOCAL_STATE_VOTES = "no votes on utterances with a vocal state yet"   # the heat map with nothing to show


def attribute_heatmap(models: Sequence[str], attributes: Sequence[str],
                      cells: Sequence[Sequence[tuple[float | None, float | None, float | None, int] | None]],
                      floor: int, title: str = "Who hears what: Bradley–Terry score per vocal state of the user"
                      ) -> go.Figure:
    """Models (rows) x the vocal states of the user's utterance (columns). `cells[r][c]` = (score, low, high,
    rated votes), or None where the model has no vote on that state. A cell without a score (provisional: under
    `floor` rated votes) is left grey and labelled, never coloured as if measured."""
    if not models or not attributes:
        return _empty(title, NO_VOCAL_STATE_VOTES)
    if len(cells) != len(models) or any(len(row) != len(attributes) for row in cells):
        raise ValueError("cells must have one row per model and one cell per attribute")
    def show(model: str, attr: str, cell) -> tuple[float, str, str]:
        """(colour value, cell text, hover text) of one cell."""
        where = f"{plot_text(model)}, {plot_text(attr)}"
        if cell is None:
            return math.nan, "", f"{where}: no votes"
        score, low, high, votes = cell
        if score is None:
            return math.nan, f"too few votes ({votes})", f"{where}: provisional, {votes} of {floor} rated votes"
        band = "" if low is None or high is None else f" (95% interval {low:.0f}–{high:.0f})"
        return float(score), f"{score:.0f}", f"{where}: {score:.0f}{band}, {votes} rated votes"

    shown = [[show(model, attr, cell) for attr, cell in zip(attributes, row)] for model, row in zip(models, cells)]
    z, text, hover = ([[cell[k] for cell in row] for row in shown] for k in range(3))
    fig = go.Figure(go.Heatmap(
        z=z, x=[plot_text(a) for a in attributes], y=[plot_text(m) for m in models], text=text,
        texttemplate="%{text}", customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorscale="RdBu", zmid=1000.0, hoverongaps=True, colorbar=dict(title="score")))
    fig.update_layout(title=title, height=max(_HEIGHT, 80 + 45 * len(models)), xaxis_title="vocal state of the user",
                      yaxis_title="model", yaxis_autorange="reversed", plot_bgcolor="#d9d9d9",
                      margin=dict(l=10, r=10, t=50, b=40))
    fig.update_xaxes(showgrid=False)
    fig.update_yaxes(showgrid=False)
    return fit(fig)
