"""A model's page on the benchmark leaderboard: breakdowns per attribute / variant / dimension, sample
replies with their audio, and the result's manifest. `breakdown_frame` and `sample_replies` are plain
functions; `build_model_page` wires them into Gradio inside the Benchmark leaderboard tab. Sample audio plays
from a signed per-reply URL (arena/web/media.py), never a file path."""
from __future__ import annotations

import math

import gradio as gr
import pandas as pd

from arena.web.media import audio_html
from eval_backend.inert import md
from eval_backend.inert import md_inline as mi
from eval_backend.scoring.labels import metric_label
from eval_backend.tasks import SPOKEN_TASKS

from .browse import request_label
from .results_table import BOARD_SOURCE, board_cell, ci_text

N_SAMPLES = 3
OTHER_KEYS = ("dimension", "type", "kind")     # shown together in one table, one row per (key, label)
CHOOSE = "choose a model above"
NO_BREAKDOWN = "no metric of this result breaks down this way"


def breakdown_frame(doc: dict, key: str) -> pd.DataFrame:
    """Rows: the labels of one breakdown key; columns: each headline metric that has that breakdown,
    as "mean (n)". Empty frame with a note column when no metric breaks down by `key`."""
    cols: dict[str, dict[str, str]] = {}
    for name, e in sorted(doc.get("metrics", {}).items()):
        if not e.get("headline"):
            continue
        means = (e.get("breakdown") or {}).get(key) or {}
        counts = (e.get("breakdown_n") or {}).get(key) or {}
        if not means:
            continue
        cols[name] = {lab: ("—" if v is None or (isinstance(v, float) and math.isnan(v)) else
                            f"{v:.3f}" + (f" (n={counts[lab]})" if lab in counts else ""))
                      for lab, v in means.items()}
    if not cols:
        return pd.DataFrame({key: [], "note": []})
    labels = sorted({lab for d in cols.values() for lab in d})
    return pd.DataFrame([{key: lab, **{metric_label(m): d.get(lab, "—") for m, d in cols.items()}} for lab in labels])


def placeholder(key: str, text: str) -> pd.DataFrame:
    """What a breakdown table shows when it has no rows: its own headers and one row saying why."""
    return pd.DataFrame({key: [text], "note": [""]})


def other_breakdowns(doc: dict) -> pd.DataFrame:
    """Dimension, question type and item kind breakdowns in one frame (column "breakdown" says which)."""
    frames = []
    for key in OTHER_KEYS:
        f = breakdown_frame(doc, key)
        if len(f):
            frames.append(f.rename(columns={key: "label"}).assign(breakdown=key))
    if not frames:
        return pd.DataFrame({"breakdown": [], "label": []})
    out = pd.concat(frames, ignore_index=True).fillna("—")
    return out[["breakdown", "label"] + [c for c in out.columns if c not in ("breakdown", "label")]]


def sample_replies(store, model: str, benchmark_hash: str, n: int = N_SAMPLES, media=None,
                   shown=lambda reply: True, blinded=lambda reply: False) -> list[dict]:
    """Up to n ok spoken replies with audio on disk (stable order), else text replies. "audio": the reply's
    media URL (`media`: arena.web.media.MediaTokens), or None without audio (or without `media`). `shown(reply)`:
    may a reply with audio be shown (the arena's `reply_cleared`: screened clean, issue 14); others are left out.
    `blinded(reply)`: a battle can play it (the arena's `reply_blinded`): left out, text and audio."""
    rows = [r for t in SPOKEN_TASKS for r in store.replies(model=model, benchmark_hash=benchmark_hash, task=t, status="ok")
            if not blinded(r)]
    rows.sort(key=lambda r: r.request_id)
    with_audio = [r for r in rows if r.audio_path and store.abspath(r.audio_path).is_file()]
    held = {r.request_id for r in with_audio if not shown(r)}
    rows = [r for r in rows if r.request_id not in held]
    with_audio = [r for r in with_audio if r.request_id not in held]
    picked = (with_audio or rows)[:n]
    audible = {r.request_id for r in with_audio} if media is not None else set()
    return [{"request_id": r.request_id, "text": r.text or r.transcript or "",
             "audio": media.reply_url(r.model, r.benchmark_hash, r.request_id) if r.request_id in audible else None}
            for r in picked]


def headline_markdown(doc: dict) -> str:
    """The model's name, benchmark, scorer and boards; every value from the document is inert text."""
    man = doc["manifest"]
    b = man["benchmark"]
    lines = [f"### {mi(man['model'])}",
             f"Benchmark **{mi(b.get('name'))} v{mi(b.get('version'))}** (hash {mi(str(b.get('hash'))[:12])}), "
             f"scorer {mi(man.get('scorer_version'))}, scored {mi(man.get('timestamp'))}."]
    for name, e in doc.get("boards", {}).items():
        shown = board_cell(name, e) if name in BOARD_SOURCE else e.get("value")
        if isinstance(shown, (int, float)) and e.get("value") is not None:
            ci = f" [95%: {ci_text(e['ci95'])[1:-1]}]" if e.get("ci95") else ""
            lines.append(f"- **{mi(name)}**: {e['value']:.3f}{ci} ({mi(e.get('source', ''))})")
        elif isinstance(shown, str):      # not computed, or filled from another metric by an older scorer
            lines.append(f"- **{mi(name)}**: {md(shown)}")
        else:
            lines.append(f"- **{mi(name)}**: {md(e.get('reason') or e.get('note') or 'see the columns')}")
    return "\n".join(lines)


def sample_markdown(sample: dict, label: str | None = None) -> str:
    """One sample reply: what it answers (`label`, browse.request_label: for people, not the request id) and its
    text, as inert text."""
    return f"**{md(label or sample['request_id'])}**\n\n> {md(sample['text'])}"


def build_model_page(ctx, docs_fn, scroll_js: str | None = None):
    """docs_fn() -> {model: results document}. Returns the model dropdown (the table's row click sets it);
    `scroll_js` runs in the browser once the page is filled (brings it into view)."""
    gr.Markdown("### Model page", elem_id="model-page")
    model = gr.Dropdown(label="Model (measured here)", choices=[], interactive=True, elem_id="model-page-pick")
    head = gr.Markdown(elem_id="model-page-head")
    with gr.Row():
        by_attr = gr.Dataframe(placeholder("attribute", CHOOSE), label="Per attribute", interactive=False,
                               elem_id="model-page-attribute", wrap=True)
        by_var = gr.Dataframe(placeholder("variant", CHOOSE), label="Per variant", interactive=False,
                              elem_id="model-page-variant", wrap=True)
    by_other = gr.Dataframe(placeholder("breakdown", CHOOSE), label="Per dimension, question type and item kind",
                            interactive=False, elem_id="model-page-other", wrap=True)
    gr.Markdown("#### Sample replies")
    sample_md, sample_audio = [], []
    with gr.Row():
        for i in range(N_SAMPLES):
            with gr.Column():
                sample_md.append(gr.Markdown(elem_id=f"model-page-sample-{i}"))
                sample_audio.append(gr.HTML(audio_html(f"reply {i + 1}", None), visible=False, js_on_load=None,
                                            container=True, padding=True, elem_id=f"model-page-audio-{i}"))
    manifest = gr.JSON(label="Result manifest (how this score was made)", elem_id="model-page-manifest")

    def show(name):
        doc = docs_fn().get(name) if name else None
        if doc is None:
            return ["_Choose a model._", placeholder("attribute", CHOOSE), placeholder("variant", CHOOSE),
                    placeholder("breakdown", CHOOSE), *[""] * N_SAMPLES, *[gr.update(visible=False)] * N_SAMPLES, None]
        samples = sample_replies(ctx.store, name, doc["manifest"]["benchmark"]["hash"], media=ctx.media,
                                 shown=ctx.arena.reply_cleared, blinded=ctx.arena.reply_blinded)
        mds = [sample_markdown(s, request_label(getattr(ctx, "benchmark", None), s["request_id"]))
               for s in samples] + [""] * (N_SAMPLES - len(samples))
        audios = [gr.update(value=audio_html(f"reply {i + 1}", s["audio"]), visible=bool(s["audio"]))
                  for i, s in enumerate(samples)]
        audios += [gr.update(visible=False)] * (N_SAMPLES - len(samples))
        if not samples:
            mds[0] = ("_No ok spoken reply of this model can be shown: none is stored, or every one is in the "
                      "arena's pool (shown with the model's name only for showcase requests)._")
        frames = [breakdown_frame(doc, "attribute"), breakdown_frame(doc, "variant"), other_breakdowns(doc)]
        frames = [f if len(f) else placeholder(key, NO_BREAKDOWN)
                  for f, key in zip(frames, ("attribute", "variant", "breakdown"))]
        return [headline_markdown(doc), *frames, *mds, *audios, doc["manifest"]]

    ev = model.change(show, [model], [head, by_attr, by_var, by_other, *sample_md, *sample_audio, manifest])
    if scroll_js:
        ev.then(None, None, None, js=scroll_js)
    return model
