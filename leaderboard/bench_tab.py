"""The Benchmark leaderboard tab: filters, column groups, sort presets, intervals, the paper's reported rows,
CSV download, a radar, arena rating vs benchmark score, judge–human agreement, and the model page.

Thin: the table is `results_table` (pure), the statistics `agreement` (pure), figures are built here from
plain values. The filter state lives in the page URL: read from `gr.Request.query_params` on load and
written with `history.replaceState` (browser-side JS) whenever a control changes, so a link reproduces
the view.
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from eval_backend import config
from eval_backend.inert import csv_cell, md, plot_text
from eval_backend.numbers import is_number
from eval_backend.scoring.boards import boards_text, tabled_boards
from eval_backend.scoring.human_agreement import agreement_rows, scores_from_docs
from eval_backend.scoring.labels import metric_label
from space_shell.tab_contract import PageLoad, TabHandles

from . import agreement, plots
from . import results_table as rt
from .download_files import DownloadFolder
from .model_page import build_model_page
from .numeric_rows import numeric_view

KIND_LABELS = [("Baselines", "baseline"), ("Submitted endpoints", "endpoint"), ("Submitted predictions", "predictions"),
               ("Reported by the EchoMind paper", "reported")]
# board -> (min, max) of its scale, for the radar's 0-1 normalisation (from the scorer's board registry)
BOARD_SCALES = {b.key: b.scale for b in tabled_boards()}
RADAR_MODELS = 6

# Mirrors results_table.state_to_query (same keys, same defaults).
URL_JS = """
(search, kinds, audio, open, groups, sort, ci, all) => {
  const GROUPS = %(groups)s, KINDS = %(kinds)s, DEF_GROUPS = %(def_groups)s;
  const p = new URLSearchParams(window.location.search);
  const set = (k, v, dflt) => { if (v === dflt) p.delete(k); else p.set(k, v); };
  set('q', search || '', '');
  const ks = (kinds || []).join(',');
  set('kinds', ks || 'none', KINDS.join(','));
  set('audio', audio || 'any', 'any');
  set('open', open || 'any', 'any');
  const gi = GROUPS.map((g, i) => (groups || []).includes(g) ? String(i) : null).filter(x => x !== null).join(',');
  set('groups', gi || 'none', DEF_GROUPS);
  set('sort', sort || 'LB1', 'LB1');
  set('ci', ci ? '1' : '0', '0');
  set('all', all ? '1' : '0', '0');
  p.set('tab', 'bench-board');               // the link opens this tab (app.py reads ?tab=)
  const qs = p.toString();
  window.history.replaceState(null, '', window.location.pathname + (qs ? '?' + qs : '') + window.location.hash);
  return [search, kinds, audio, open, groups, sort, ci, all];
}
""" % {"groups": json.dumps(list(rt.GROUPS)), "kinds": json.dumps(list(rt.KINDS)),
       "def_groups": json.dumps(",".join(str(rt.GROUPS.index(g)) for g in rt.FilterState().groups))}

# Header tooltips (the internal id behind each human column name) and cell tooltips (the note behind "— [n]"):
# Gradio's Dataframe has no header tooltip, so the page sets `title` attributes whenever a table re-renders.
TIPS_JS = """
const IDS = %(ids)s;
if (!window.__benchTips) {
  window.__benchTips = true;
  const notes = () => {
    const m = {};
    for (const line of (document.getElementById('bench-notes')?.innerText || '').split('\\n')) {
      const g = line.match(/^\\[(\\d+)\\] (.*)$/);
      if (g) m[g[1]] = g[2].trim();
    }
    return m;
  };
  const tip = () => {
    const n = notes();
    for (const id of ['bench-table', 'bench-reported']) {
      const root = document.getElementById(id);
      if (!root) continue;
      for (const th of root.querySelectorAll('th')) {
        const k = (th.innerText || '').trim();
        if (IDS[k] && th.title !== IDS[k]) th.title = IDS[k];
      }
      for (const td of root.querySelectorAll('td, .body-cell')) {      // Gradio 6 draws rows as divs
        const g = (td.textContent || '').trim().match(/^\u2014 \\[(\\d+)\\]$/);
        if (g && n[g[1]] && td.title !== n[g[1]]) td.title = n[g[1]];
      }
    }
  };
  let queued = false;
  new MutationObserver(() => { if (!queued) { queued = true; setTimeout(() => { queued = false; tip(); }, 200); } })
    .observe(document.body, {childList: true, subtree: true, characterData: true});
}
""" % {"ids": json.dumps(rt.header_ids())}

# After a row click fills the model page, bring it into view (it sits below the table and the plots).
SCROLL_JS = """
async () => {
  const head = document.getElementById('model-page-head');
  for (let i = 0; i < 50 && head && !(head.innerText || '').trim(); i++) await new Promise(r => setTimeout(r, 100));
  document.getElementById('model-page')?.scrollIntoView({behavior: 'instant', block: 'start'});
}
"""


_finite = is_number     # a real finite number (plotted / compared)


RADAR_NOTE = ("**Radar:** the boards of the first models in the table, each scaled to 0–1 over its range; a gap "
              "is a board not computed. **Arena vs benchmark:** each model's arena Bradley–Terry score against its "
              "score on the chosen board, with Spearman's rank correlation.")


def _empty_fig(title: str, why: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=420, xaxis_visible=False, yaxis_visible=False,
                      annotations=[dict(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")])
    return plots.fit(fig)


def radar_figure(view: pd.DataFrame, n: int = RADAR_MODELS) -> go.Figure:
    """The first n rows of the (sorted, filtered) view on the four boards, each scaled to 0-1 by its range.
    The title is short (the explanation is RADAR_NOTE under the plots) so it fits a phone's width."""
    title = "Boards of the top models"
    axes = list(BOARD_SCALES)
    rows = [r for _, r in view.head(n).iterrows() if any(_finite(r[b]) for b in axes)]
    if not rows:
        return _empty_fig(title, "no computed board in this view")
    fig = go.Figure()
    for r in rows:
        vals = [(r[b] - BOARD_SCALES[b][0]) / (BOARD_SCALES[b][1] - BOARD_SCALES[b][0]) if _finite(r[b]) else None
                for b in axes]
        name = plot_text(r["model"] + (" (reported)" if r["type"] == "reported" else ""))
        fig.add_trace(go.Scatterpolar(r=vals + vals[:1], theta=axes + axes[:1], name=name, connectgaps=False))
    # side margins: the polar axis' labels (LB1 east, LB3 west) sit outside its circle, which plotly does not
    # count when it sizes the circle
    fig.update_layout(title=title, height=520, polar=dict(radialaxis=dict(range=[0, 1])),
                      margin=dict(l=45, r=45, b=40))
    return plots.fit(fig)


def arena_pairs(ratings: list[dict], view: pd.DataFrame, board: str) -> dict[str, tuple[float, float]]:
    """model -> (Bradley–Terry arena score, board value) for measured models that have both."""
    bt = {r["model"]: r.get("bt") for r in ratings if _finite(r.get("bt"))}
    out = {}
    for _, r in view.iterrows():
        if r["source"] == rt.MEASURED_SOURCE and r["model"] in bt and _finite(r[board]):
            out[r["model"]] = (bt[r["model"]], float(r[board]))
    return out


def scatter_figure(pairs: dict[str, tuple[float, float]], board: str, rho: agreement.Stat) -> go.Figure:
    """Labels are drawn outside the axes' clip (cliponaxis off) and point inwards at the ends of the x range,
    so a name at the edge ("cascade-cue") is never cut."""
    title = f"Arena vs {board}: ρ " + (f"{rho.value:.2f} (n={rho.n})" if rho.value is not None else "not computed")
    if not pairs:
        return _empty_fig(title, "no model has both scores yet")
    names = sorted(pairs)
    xs = [pairs[m][1] for m in names]
    lo, hi = min(xs), max(xs)
    mid = (lo + hi) / 2

    def position(x: float) -> str:
        if hi - lo < 1e-12:
            return "top center"
        return "top right" if x < mid - (hi - lo) / 4 else ("top left" if x > mid + (hi - lo) / 4 else "top center")
    fig = go.Figure(go.Scatter(x=xs, y=[pairs[m][0] for m in names], text=[plot_text(m) for m in names],
                               mode="markers+text", textposition=[position(x) for x in xs], cliponaxis=False,
                               hovertemplate="%{text}: score %{x:.3f}, arena %{y:.0f}<extra></extra>"))
    fig.update_layout(title=title, height=420, xaxis_title=f"{board} (benchmark)", yaxis_title="arena BT score")
    return plots.fit(fig)


METRIC_AGREEMENT_NOTE = (
    "For every arena vote and every automatic metric that scored both replies, does the metric prefer the reply "
    "the person chose? Per axis (overall; said = the words; sounded = the voice), over decisive votes only "
    "(ties and 'both bad' left out); a metric that scores both replies the same counts as not agreeing (ties). "
    "50% is chance. Wilson 95% interval. Also `python -m leaderboard agreement --json`.")
METRIC_AGREEMENT_COLUMNS = ["axis", "metric", "agrees with people", "95% CI", "decisive votes", "metric ties"]
NO_AGREEMENT = "not computed: no decisive vote on a scored reply yet"


def metric_agreement_frame(ctx, docs: dict[str, dict]) -> pd.DataFrame:
    """The metric-human agreement rows for the models on the board (stored scores only, no judge)."""
    arena = getattr(ctx, "arena", None)
    try:
        votes = arena.votes() if arena is not None else []
    except Exception:      # an arena problem must not take the benchmark board down
        votes = []
    scores, direction = scores_from_docs(docs.values())
    rows = agreement_rows(votes, scores, direction)
    if not rows:
        return _agreement_placeholder(NO_AGREEMENT)
    return pd.DataFrame([[r.axis, metric_label(r.metric), round(r.agree, 3), f"[{r.low:.2f}, {r.high:.2f}]", r.n,
                          r.ties] for r in rows], columns=METRIC_AGREEMENT_COLUMNS)
def csv_frame(view: pd.DataFrame) -> pd.DataFrame:
    """The view as it goes into the downloaded CSV (after `rt.numeric_view`): names and organisations are the
    submitters', so every text cell a spreadsheet would run as a formula is neutralised
    (eval_backend.inert.csv_cell)."""
    return view.map(csv_cell).rename(columns=csv_cell)


def model_infos(ctx) -> dict[str, rt.ModelInfo]:
    """Model facts from the submissions queue (newest finished job per model) and the baseline list."""
    infos: dict[str, rt.ModelInfo] = {}
    try:
        for spec in config.load_models().values():
            if spec.baseline:
                infos[spec.name] = rt.ModelInfo("baseline", spec.audio_output, True, "Empathy Arena (baseline)")
    except (OSError, ValueError):
        pass
    service = getattr(ctx, "submission_service", None)      # the app's one SubmissionService (app_context.py)
    if service is not None:
        for job in reversed(service.list_jobs()):        # oldest first: the newest finished job wins
            if job.state == "FINISHED":
                infos[job.model] = rt.ModelInfo(job.kind, job.audio_output if job.kind == "endpoint" else None,
                                                job.open_weights, job.organisation, job.licence, job.link)
    return infos


def current_docs(ctx) -> dict[str, dict]:
    bench = getattr(ctx, "benchmark", None)
    docs = rt.load_result_docs(Path(ctx.store.root) / "results")
    return rt.latest_per_model(docs, bench.hash if bench is not None else None)


def _ratings(ctx) -> list[dict]:
    arena = getattr(ctx, "arena", None)
    if arena is None:
        return []
    try:
        return arena.ratings_table()
    except Exception:      # an arena problem must not take the benchmark board down
        return []


def column_legend() -> str:
    """Header -> id, for readers who know the metric ids (docs, results JSON, the CSV)."""
    rows = [f"| {name} | `{cid}` |" for name, cid in rt.header_ids().items() if not cid.endswith(" 95% CI")]
    return "| Column | id in the results and the CSV |\n|---|---|\n" + "\n".join(rows)


def build_bench_tab(ctx) -> TabHandles:
    reported = rt.load_reported()
    state0 = rt.FilterState()
    gr.Markdown("## Benchmark leaderboard\nScores of the models evaluated here, ranked only against models "
                "measured on the same benchmark version, each board with its 95% interval; a cell that could not "
                "be computed shows — and a note number (under the table). Click a row for its model page; the "
                "address keeps your filters, so the link shares this view.", elem_id="bench-intro")
    # one row of controls above the table (search, sort); the other filters and the column picker fold away, so
    # the table starts on the first screen (1366×800); a link that sets any of them opens the fold
    with gr.Row(elem_id="bench-controls"):
        search = gr.Textbox(label="Search model or organisation (separate terms with ;)", elem_id="bench-search")
        sort = gr.Radio(list(rt.SORT_PRESETS), value=state0.sort, label="Sort by", elem_id="bench-sort")
        refresh = gr.Button("Refresh", scale=0, elem_id="bench-refresh")
    with gr.Accordion("Filters and columns", open=False, elem_id="bench-filters") as filters:
        with gr.Row():
            kinds = gr.CheckboxGroup(KIND_LABELS, value=list(state0.kinds), label="Show", elem_id="bench-kinds")
            audio = gr.Radio(["any", "yes", "no"], value="any", label="Audio output", elem_id="bench-audio")
            open_w = gr.Radio(["any", "yes", "no"], value="any", label="Open weights", elem_id="bench-open")
        with gr.Row():
            groups = gr.CheckboxGroup(list(rt.GROUPS), value=list(state0.groups),
                                      label="Columns: the boards and their intervals, plus these metric groups",
                                      elem_id="bench-groups")
            ci = gr.Checkbox(value=False, label="Intervals of the added metrics", elem_id="bench-ci")
            all_cols = gr.Checkbox(value=False, label="All columns", elem_id="bench-all")
    blank = rt.readable(rt.apply_filters(*_no_rows(), state0), rt.Notes(), "loading…")
    table = gr.Dataframe(blank, interactive=False, elem_id="bench-table", wrap=True, max_height=600)
    gr.Markdown(f"### {rt.REPORTED_HEADING}", elem_id="bench-reported-heading")
    blank_paper = rt.readable(rt.apply_filters(*_no_rows(), state0), rt.Notes(), "loading…", hidden=())
    reported_table = gr.Dataframe(blank_paper, interactive=False, elem_id="bench-reported", wrap=True,
                                  max_height=600)
    notes_md = gr.Markdown(elem_id="bench-notes")
    gr.HTML("", js_on_load=TIPS_JS, elem_id="bench-tips", padding=False)
    with gr.Accordion("Column names and their ids", open=False):
        gr.Markdown(column_legend(), elem_id="bench-legend")
    with gr.Row():
        csv = gr.DownloadButton("Download CSV (this view)", elem_id="bench-csv")
    gr.Markdown(f"Rows marked **{rt.REPORTED_SOURCE}** are the figures of the EchoMind paper "
                f"({reported.get('source', '')}). Its percentages are divided by 100 to match our 0–1 columns; "
                "BLEU stays 0–100, judge scores and MOS 1–5. Its semantic similarity, BERTScore (rescaled "
                "bert-base) and NISQA have no like-for-like counterpart here and keep their own '(paper)' columns. "
                f"Boards: {boards_text()}. Board intervals resample items "
                "(LB1: understanding and reasoning questions apart).", elem_id="bench-units")
    with gr.Row():
        radar = gr.Plot(label="Radar", elem_id="bench-radar", show_label=False)
        scatter = gr.Plot(label="Arena vs benchmark", elem_id="bench-scatter", show_label=False)
    gr.Markdown(RADAR_NOTE, elem_id="bench-plot-notes")
    agree_md = gr.Markdown(elem_id="bench-agreement")
    # Which automatic measures agree with people: stored per-reply scores against arena votes, no judge asked.
    # (The pairwise judge-human agreement asks a paid judge, so no visitor's click may start it: the operator
    # runs it from the command line.)
    gr.Markdown("### Which automatic measures agree with people\n" + METRIC_AGREEMENT_NOTE,
                elem_id="bench-metric-agreement-note")
    metric_agree = gr.Dataframe(_agreement_placeholder("loading…"), interactive=False,
                                elem_id="bench-metric-agreement", wrap=True, max_height=400)
    model = build_model_page(ctx, lambda: current_docs(ctx), scroll_js=SCROLL_JS)
    names = gr.State([])                 # the measured table's model names, row by row (cells may be shortened)
    controls = [search, kinds, audio, open_w, groups, sort, ci, all_cols]
    downloads = DownloadFolder("bench_csv_")

    def render(search_v, kinds_v, audio_v, open_v, groups_v, sort_v, ci_v, all_v):
        st = rt.FilterState(search=search_v or "", kinds=tuple(kinds_v or ()), audio=audio_v or "any",
                            open_weights=open_v or "any", groups=tuple(groups_v or ()), sort=sort_v or "LB1",
                            intervals=bool(ci_v), all_columns=bool(all_v))
        docs = current_docs(ctx)
        df, grp = rt.build_table(docs, model_infos(ctx), reported)
        view = rt.apply_filters(df, grp, st)
        path = downloads.write("benchmark_leaderboard.csv",    # numbers or empty; the reasons in `notes`
                               csv_frame(numeric_view(view)).to_csv(index=False))
        measured, paper = rt.sections(view)
        notes = rt.Notes()
        shown = rt.readable(measured, notes)
        shown_paper = rt.readable(paper, notes, "no reported row matches these filters", hidden=())
        board = rt.SORT_PRESETS[st.sort]
        pairs = arena_pairs(_ratings(ctx), df, board)
        rho = agreement.rank_correlation(pairs)
        agree = md(rho.text(f"Rank correlation (Spearman) between the arena's Bradley–Terry score and {board}"))
        return (shown, shown_paper, notes.markdown(), str(path), radar_figure(measured),
                scatter_figure(pairs, board, rho), agree, gr.update(choices=sorted(docs)),
                metric_agreement_frame(ctx, docs), list(measured["model"]))

    outputs = [table, reported_table, notes_md, csv, radar, scatter, agree_md, model, metric_agree, names]

    def on_load(request: gr.Request):
        params = dict(request.query_params) if request is not None else {}
        st = rt.state_from_query(params)
        vals = [st.search, list(st.kinds), st.audio, st.open_weights, list(st.groups), st.sort, st.intervals,
                st.all_columns]
        folded = (st.kinds, st.audio, st.open_weights, st.groups, st.intervals, st.all_columns)
        default = rt.FilterState()
        unfold = folded != (default.kinds, default.audio, default.open_weights, default.groups, default.intervals,
                            default.all_columns)
        return [*vals, *render(*vals), gr.update(open=True) if unfold else gr.update()]

    def pick_row(row_names: list, evt: gr.SelectData):
        try:
            name = row_names[evt.index[0]]
        except (IndexError, KeyError, TypeError):
            return gr.update()
        return gr.update(value=name) if name in current_docs(ctx) else gr.update()

    # .input / .submit: user actions only (the load-time values set from the URL must not re-render 7 times)
    for c in controls[1:]:
        c.input(render, controls, outputs)
        c.input(None, controls, None, js=URL_JS)
    for ev in (search.submit, search.blur):
        ev(render, controls, outputs)
        ev(None, controls, None, js=URL_JS)
    refresh.click(render, controls, outputs)
    table.select(pick_row, [names], [model]).then(None, None, None, js=SCROLL_JS)
    return TabHandles(loads=(PageLoad(on_load, None, [*controls, *outputs, filters]),))


def _no_rows() -> tuple[pd.DataFrame, dict]:
    """An empty table with the real columns: the page's first paint shows real headers, never "1 2 3"."""
    df, grp = rt.build_table({}, {}, None)
    return df, grp


def _agreement_placeholder(text: str) -> pd.DataFrame:
    """One row saying why there is nothing (in the metric column), dashes elsewhere."""
    return pd.DataFrame([["—", text, "—", "—", 0, 0]], columns=METRIC_AGREEMENT_COLUMNS)
