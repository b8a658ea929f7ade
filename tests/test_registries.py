"""The registries everyone reads (issue 16): a metric module, a metric and a benchmark loader added through them,
inside this test only, show up in a results document and in `python -m eval_backend benchmark info`; and the
facts that used to be written four times now come from one place."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from eval_backend.__main__ import main as cli
from eval_backend.benchmark import loaders
from eval_backend.benchmark.dataset import audio_ref_from_file, content_hash
from eval_backend.benchmark.model import Benchmark, ContextCase, ContextGroup, Script, ToneCase, ToneGroup, Variant
from eval_backend.scoring import registry, results
from eval_backend.scoring.run import score_model
from eval_backend.store import Reply, Store
from eval_backend.tasks import SPOKEN_TASKS, TASKS, build_requests, describe_request, select_requests

TOY_MODULE = "toy_metrics_pkg.words"      # a metric module outside the package, listed by its dotted name
TOY_METRIC = "toy.reply_words"


def _clip(path: Path, hz: float) -> object:
    t = np.arange(8000) / 16000
    sf.write(path, 0.3 * np.sin(2 * np.pi * hz * t), 16000)
    return audio_ref_from_file(path)


def toy_benchmark(root: Path) -> Benchmark:
    """Two scripts (one with a neutral reading), a context group without an attribute and a tone group."""
    root.mkdir(parents=True, exist_ok=True)
    a = [_clip(root / f"c{i}.wav", 180 + 40 * i) for i in range(6)]
    b = Benchmark("toy", "0", scripts=[
        Script("s1", "I lost my keys again.", "sad", "home", {
            "target": Variant("target", "sad", a[0]), "neutral": Variant("neutral", "neutral", a[1])}),
        Script("s2", "We won the match!", "happy", "sport", {"target": Variant("target", "happy", a[2])}),
    ], context_groups=[ContextGroup("g1", "It is raining.", a[3], [ContextCase("c1", "a picnic is planned")])],
        tone_groups=[ToneGroup("t1", "Fine.", "asked how the day went", [ToneCase("k1", "angry", a[4]),
                                                                          ToneCase("k2", "neutral", a[5])])])
    content_hash(b)
    return b


@pytest.fixture
def toy_registries(tmp_path, monkeypatch):
    """A toy loader scheme and a toy metric module, registered for this test and removed after it."""
    pkg = tmp_path / "plugins" / "toy_metrics_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "words.py").write_text(textwrap.dedent(f'''
        from eval_backend.scoring.registry import MetricResult, metric, reply_text

        @metric({TOY_METRIC!r}, "toy", note="words per spoken reply (a test's toy metric)")
        def reply_words(ctx):
            per = {{r.request_id: float(len(reply_text(r).split())) for rid, r in sorted(ctx.replies.items())
                   if r.task in ("conversation", "context", "tone") and reply_text(r)}}
            if not per:
                return MetricResult.not_computed("no spoken replies with words")
            return MetricResult(value=sum(per.values()) / len(per), per_item=per, n=len(per))
    '''))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    built: dict[str, Benchmark] = {}

    def read_toy(rest: str, data_dir) -> Benchmark:
        if rest not in built:
            built[rest] = toy_benchmark(tmp_path / "toy" / rest)
        return built[rest]

    monkeypatch.setitem(loaders.LOADERS, "toy", loaders.Loader(read_toy, "toy:NAME"))
    monkeypatch.setitem(registry.METRIC_MODULES, TOY_MODULE, True)
    monkeypatch.setitem(registry.METRIC_MODULES, "toy_metrics_pkg.absent", False)
    yield
    registry.METRICS.pop(TOY_METRIC, None)
    for name in (TOY_MODULE, "toy_metrics_pkg.absent"):
        results._LOADED.pop(name, None)
    for mod in [m for m in sys.modules if m.split(".")[0] == "toy_metrics_pkg"]:
        del sys.modules[mod]


def test_toy_loader_is_a_benchmark_spec(toy_registries, capsys):
    assert cli(["benchmark", "info", "toy:small", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "toy" and info["scripts"] == 2 and info["variants"] == 3
    assert info["groups"] == {"context": 1, "tone": 1} and info["attributes"] == ["happy", "sad"]
    b = loaders.load_benchmark("toy:small")
    assert b.source == "toy:small" and b.hash == info["hash"]
    # the scheme list in the messages is the registry
    with pytest.raises(loaders.BenchmarkSpecError, match="toy:NAME"):
        loaders.load_benchmark("")


def test_toy_metric_reaches_the_results_document(toy_registries, tmp_path):
    b = loaders.load_benchmark("toy:small")
    store = Store(tmp_path / "data")
    words = {"conversation/s1/target": "I am so sorry, that is annoying.",
             "conversation/s1/neutral": "Where did you last see them?",
             "conversation/s2/target": "Congratulations!",
             "context/g1/c1": "   Maybe move the picnic indoors?  ",
             "tone/t1/k1": "You sound upset."}
    for req in build_requests(b, SPOKEN_TASKS):
        text = words.get(req.id)
        store.put_reply(Reply("toy-model", b.hash, req.id, req.task, req.item_id, req.variant,
                              "ok" if text else "failed", text=text, error_class=None if text else "timeout"))
    path, doc = score_model(store, "toy-model", b, {"data_dir": str(store.root)}, metrics=[TOY_METRIC])
    assert json.loads(Path(path).read_text())["metrics"][TOY_METRIC]["value"] == doc["metrics"][TOY_METRIC]["value"]
    e = doc["metrics"][TOY_METRIC]
    per_reply = {rid: len(t.split()) for rid, t in words.items()}
    assert e["value"] == pytest.approx(sum(per_reply.values()) / len(per_reply)) and e["n"] == 5
    # breakdowns come from the Request's labels: the script's attribute for every variant of a script, the
    # variant, the kind of a group item; the context group has no attribute, so it has none
    assert e["breakdown"]["attribute"] == {"angry": 3.0, "happy": 1.0, "sad": pytest.approx((7 + 6) / 2)}
    assert e["breakdown_n"]["variant"] == {"neutral": 1, "target": 2}
    assert e["breakdown_n"]["kind"] == {"context": 1, "tone": 1}
    assert e["breakdown_n"]["attribute"] == {"angry": 1, "happy": 1, "sad": 2}
    modules = doc["manifest"]["metric_modules"]
    assert modules[TOY_MODULE] == "loaded" and modules["toy_metrics_pkg.absent"] == "not loaded: module not present"
    assert doc["manifest"]["metrics_selected"] == [TOY_METRIC]
    # every registered board is in the document, the table's boards among them
    from eval_backend.scoring.boards import BOARDS
    from leaderboard import results_table as rt
    assert list(doc["boards"]) == list(BOARDS) and set(rt.BOARDS) < set(BOARDS)
    assert all(rt.BOARD_LABELS[k] == BOARDS[k].label for k in rt.BOARDS)


def test_toy_registrations_are_gone_after_the_test():
    assert "toy" not in loaders.LOADERS and TOY_MODULE not in registry.METRIC_MODULES
    assert TOY_METRIC not in registry.METRICS
    with pytest.raises(loaders.BenchmarkSpecError, match="unknown benchmark spec"):
        loaders.load_benchmark("toy:small")


def test_a_request_carries_its_labels(tmp_path):
    b = toy_benchmark(tmp_path)
    neutral = describe_request(b, "conversation/s1/neutral")
    # the item's attribute (the script's) for breakdowns, the clip's own voice for judges / audio / arena
    assert neutral.breakdown == {"attribute": "sad", "dimension": "paralinguistic", "variant": "neutral"}
    assert neutral.voice == "neutral" and neutral.voice_breakdown == {"variant": "neutral", "attribute": "neutral",
                                                                   "dimension": "unknown"}
    assert (neutral.user_words, neutral.topic, neutral.context) == ("I lost my keys again.", "home", None)
    ctx = describe_request(b, "context/g1/c1")
    assert ctx.voice is None and ctx.voice_label == "not annotated" and ctx.breakdown == {"kind": "context"}
    assert ctx.voice_breakdown == {"kind": "context"} and ctx.context == "a picnic is planned"
    tone = describe_request(b, "tone/t1/k1")
    assert tone.voice == "angry" and tone.user_words == "Fine." and tone.context == "asked how the day went"
    assert tone.user_audio == b.tone_groups[0].cases[0].audio.path
    assert describe_request(b, "conversation/nope/target") is None
    # the spoken tasks are the registry's spoken entries
    assert SPOKEN_TASKS == tuple(n for n, t in TASKS.items() if t.spoken) == ("conversation", "context", "tone")
    with pytest.raises(ValueError, match="unknown task"):
        select_requests(b, ["conversation", "bogus"])
    assert [r.id for r in select_requests(b, ["tone"], limit=1)] == ["tone/t1/k1"]
