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


def _empty(title: str, why: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=_HEIGHT, xaxis_visible=False, yaxis_visible=False,
                      annotations=[dict(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")])
    return fig


def interval_chart(models: Sequence[str], scores: Sequence[float], lows: Sequence[float],
                   highs: Sequence[float], title: str = "Bradley–Terry score, 95% bootstrap interval",
                   provisional: Sequence[bool] | None = None) -> go.Figure:
    """One point per model with its interval, best on top. `provisional` models are drawn hollow."""
    if not models:
        return _empty(title, "no votes yet")
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
    return fig


def matrix_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]], title: str,
                   value_format: str = ".2f", colorscale: str = "RdBu", zmid: float | None = 0.5,
                   zrange: tuple[float, float] | None = None) -> go.Figure:
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
        hovertemplate="%{y} vs %{x}: %{text}<extra></extra>",
    ))
    fig.update_layout(title=title, height=max(_HEIGHT, 80 + 45 * len(models)),
                      xaxis_title="opponent (column)", yaxis_title="model (row)",
                      yaxis_autorange="reversed", margin=dict(l=10, r=10, t=50, b=40))
    return fig


def win_rate_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]]) -> go.Figure:
    return matrix_heatmap(models, matrix, "Share of battles the row model won against the column model (ties = ½)",
                          zrange=(0.0, 1.0))


def battle_count_heatmap(models: Sequence[str], matrix: Sequence[Sequence[float | None]]) -> go.Figure:
    return matrix_heatmap(models, matrix, "Counted battles per pair", value_format=".0f",
                          colorscale="Blues", zmid=None)


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
    fig.update_layout(title=title, height=_HEIGHT, xaxis_title="vote", yaxis_title="μ",
                      margin=dict(l=10, r=10, t=50, b=40))
    return fig
