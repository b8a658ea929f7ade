"""The results document and the score / rescore commands, on a small saved benchmark and a real store."""
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from eval_backend.__main__ import main as cli
from eval_backend.benchmark.dataset import audio_ref_from_file, save_benchmark
from eval_backend.benchmark.model import MCQ, Benchmark, Script, SelectionItem, Variant
from eval_backend.scoring.registry import METRICS, metric
from eval_backend.scoring.results import read_results, score, without_timestamp
from eval_backend.store import Reply, Store

MODULE_DATABASE_FIXTURES = ("setup",)   # see tests/conftest.py


def _tone(path: Path, hz: float):
    t = np.arange(8000) / 16000
    sf.write(path, 0.3 * np.sin(2 * np.pi * hz * t), 16000)
    return audio_ref_from_file(path)


def build_benchmark(root: Path) -> tuple[Benchmark, Path]:
    a = [_tone(root / f"a{i}.wav", 200 + 50 * i) for i in range(5)]
    scripts = [
        Script("s1", "I went to the store 2 times today.", "happy", "daily", {
            "target": Variant("target", "happy", a[0], "That sounds like a lovely day out!"),
            "neutral": Variant("neutral", "neutral", a[1], "Oh, what did you buy?"),
            "alternative": Variant("alternative", "sad", a[2], "Are you feeling okay?")}),
        Script("s2", "The meeting starts at nine.", "whisper", "work", {
            "target": Variant("target", "whisper", a[3], "I'll keep my voice down too."),
            "alternative": Variant("alternative", "shout", a[4], None)}),
    ]
    mcqs = [
        MCQ("u1", "understanding", "speech emotion", a[0], "How does the speaker feel?", ["Sad", "Happy", "Angry"], "B",
            "s1", "target"),
        MCQ("u2", "understanding", "voice style", a[3], "Voice?", ["Whisper", "Shout"], "A", "s2", "target"),
        MCQ("u3", "understanding", "speech emotion", a[2], "Feel?", ["Sad", "Happy"], "A", "s1", "alternative"),
        MCQ("u4", "understanding", "speech emotion", a[1], "Feel?", ["Sad", "Calm"], "B", "s1", "neutral"),
        MCQ("r1", "reasoning", "speaker-intent recognition", a[0], "Why?", ["x", "y", "z"], "C"),
    ]
    sel = [
        SelectionItem("g1_1", "g1", "context", "ctx one", None, a[0], {"A": a[1], "B": a[2]}, "A"),
        SelectionItem("g1_2", "g1", "context", "ctx two", None, a[0], {"A": a[1], "B": a[2]}, "B"),
        SelectionItem("g2_1", "g2", "tone", "ctx", None, a[3], {"A": a[1], "B": a[2], "C": a[4]}, "C"),
        SelectionItem("g2_2", "g2", "tone", "ctx", None, a[4], {"A": a[1], "B": a[2]}, "A"),
    ]
    b = Benchmark("mini", "1", scripts=scripts, mcqs=mcqs, selection=sel)
    folder = save_benchmark(b, root / "bench")
    return b, folder


REPLIES = [  # request id, status, text
    ("asr/s1/target", "ok", "I went to the store two times today"),
    ("asr/s2/target", "failed", None),
    ("conversation/s1/target", "ok", "What a lovely day you had!"),
    ("conversation/s1/neutral", "ok", "What did you buy there?"),
    ("conversation/s1/alternative", "failed", None),
    ("conversation/s2/target", "ok", "Okay, I will whisper too."),
    ("conversation/s2/alternative", "ok", "Wow, loud!"),
    ("mcq_understanding/u1/-", "ok", "The answer is: B"),
    ("mcq_understanding/u2/-", "ok", "I am not sure."),        # parse failure
    ("mcq_understanding/u3/-", "failed", None),               # u4: no reply at all
    ("mcq_reasoning/r1/-", "ok", "(C)"),
    ("selection/g1_1/-", "ok", "A"),
    ("selection/g1_2/-", "ok", "The answer is: B"),
    ("selection/g2_1/-", "ok", "The answer is: C"),
    ("selection/g2_2/-", "ok", "B"),
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("scoring")
    b, folder = build_benchmark(root)
    data = root / "data"
    store = Store(data)
    for rid, status, text in REPLIES:
        task, item, variant = rid.split("/")
        store.put_reply(Reply("m1", b.hash, rid, task, item, variant, status, text=text,
                              error_class=None if status == "ok" else "timeout"))
    return b, folder, data, store


FAST = ["l1.asr_wer", "l1.understanding_acc", "l2.*", "sel.*"]


def test_hand_worked_values(setup):
    b, _, _, store = setup
    doc = score(b, store.replies(model="m1"), "m1", store, metrics=FAST).doc
    m = doc["metrics"]
    wer = m["l1.asr_wer"]
    assert wer["value"] == pytest.approx(0.5)            # 0 for s1 (digits normalised), 1 for the failed s2
    assert wer["raw"]["corpus_wer"] == pytest.approx(5 / 13)
    assert wer["failures"] == {"failed_reply": 1}
    u = m["l1.understanding_acc"]
    assert u["value"] == pytest.approx(1 / 3) and u["n"] == 3
    assert u["failures"] == {"failed_reply": 1, "missing_reply": 1, "parse_failure": 1}
    assert u["raw"]["items"]["mcq_understanding/u2/-"] == {"answer": "A", "parsed": None, "rule": "no answer found"}
    assert u["breakdown"]["type"] == {"speech emotion": 0.5, "voice style": 0.0}
    assert u["breakdown"]["variant"] == {"alternative": 0.0, "target": 0.5}
    assert m["l2.reasoning_acc"]["value"] == 1.0
    # selection: g1 both right (+1 bonus), g2 one of two -> (3 + 1) / (4 + 2)
    assert m["sel.final"]["value"] == pytest.approx(4 / 6)
    assert m["sel.context_final"]["value"] == pytest.approx(3 / 3)
    assert m["sel.tone_final"]["value"] == pytest.approx(1 / 3)
    assert m["sel.accuracy"]["value"] == pytest.approx(3 / 4)
    boards = doc["boards"]
    assert boards["LB1"]["value"] == pytest.approx((1 / 3 + 1) / 2)
    assert boards["selection"]["value"] == pytest.approx(4 / 6)
    for name in ("LB2", "LB3", "AEQ"):
        assert boards[name]["value"] is None and boards[name]["reason"].startswith("not computed: ")
    ci = u["ci95"]
    assert ci[0] <= u["value"] <= ci[1]


def test_not_computed_is_never_zero(setup):
    b, _, _, store = setup
    only_mcq = [r for r in store.replies(model="m1") if r.task.startswith("mcq")]
    doc = score(b, only_mcq, "m1", store, metrics=["l1.asr_wer", "sel.final", "l3.rougeL_f"]).doc
    for name in ("l1.asr_wer", "sel.final", "l3.rougeL_f"):
        e = doc["metrics"][name]
        assert e["value"] is None and e["reason"].startswith("not computed: no stored replies"), e
    assert doc["boards"]["selection"]["value"] is None


def test_a_crashing_metric_is_recorded_and_the_rest_still_count(setup):
    b, _, _, store = setup

    @metric("test.crash", "level1")
    def crash(ctx):
        raise KeyError("boom")
    try:
        doc = score(b, store.replies(model="m1"), "m1", store, metrics=["test.crash", "l2.*"]).doc
    finally:
        METRICS.pop("test.crash")
    assert doc["metrics"]["test.crash"]["reason"] == "not computed: error: KeyError: 'boom'"
    assert doc["metrics"]["l2.reasoning_acc"]["value"] == 1.0


def test_unknown_metric_pattern_is_a_clear_error(setup):
    b, _, _, store = setup
    with pytest.raises(ValueError, match="no registered metric matches"):
        score(b, [], "m1", store, metrics=["nope.*"])


def test_score_twice_and_rescore_give_identical_results(setup, capsys):
    _, folder, data, _ = setup
    args = ["score", "--model", "m1", "--benchmark", str(folder), "--data-dir", str(data)]
    assert cli(args) == 0
    out = capsys.readouterr().out.strip().splitlines()
    path = Path(out[-1])
    assert path.is_file() and path.parent == data / "results" / "m1"
    first = read_results(path)
    assert first["manifest"]["benchmark"]["hash"] == setup[0].hash
    assert first["manifest"]["scorer_version"] and first["manifest"]["timestamp"]
    assert first["manifest"]["packages"]["sacrebleu"]
    # every registered metric appears, with a value or a reason
    for name, e in first["metrics"].items():
        assert (e["value"] is not None) or e["reason"].startswith("not computed: "), name
    assert first["metrics"]["l3.meteor"]["value"] is not None
    assert first["metrics"]["l3.bertscore_minilm_f1"]["value"] is not None

    assert cli(["rescore", "--model", "m1", "--data-dir", str(data)]) == 0
    again = capsys.readouterr().out.strip().splitlines()
    assert Path(again[-1]) == path
    second = read_results(path)
    assert without_timestamp(first) == without_timestamp(second)
    assert json.dumps(without_timestamp(first), sort_keys=True) == json.dumps(without_timestamp(second), sort_keys=True)

    # a partial run (--metrics) updates its entries in the same file and keeps the rest
    assert cli(["score", "--model", "m1", "--benchmark", str(folder), "--data-dir", str(data),
                "--metrics", "l2.*", "--quiet"]) == 0
    assert Path(capsys.readouterr().out.strip().splitlines()[-1]) == path
    third = read_results(path)
    assert third["metrics"] == second["metrics"] and third["boards"] == second["boards"]
    assert third["manifest"]["metrics_selected"] == "all"


def test_several_models_in_one_score_command_score_as_each_alone(tmp_path, capsys):
    """`score --model a --model b` writes what two commands would (one path per line with --quiet, in order); a
    model without replies fails the command clearly after the models before it were written."""
    b, folder = build_benchmark(tmp_path)
    data = tmp_path / "data"
    store = Store(data)
    for model, change in (("m1", str), ("m2", str.upper)):
        for rid, status, text in REPLIES:
            task, item, variant = rid.split("/")
            store.put_reply(Reply(model, b.hash, rid, task, item, variant, status,
                                  text=change(text) if text and task == "conversation" else text,
                                  error_class=None if status == "ok" else "timeout"))
    base = ["score", "--benchmark", str(folder), "--data-dir", str(data), "--metrics", "l1.understanding_acc,l2.*,"
            "sel.*,l3.bleu4", "--quiet"]
    alone = {}
    for model in ("m1", "m2"):
        assert cli([*base, "--model", model]) == 0
        alone[model] = without_timestamp(read_results(Path(capsys.readouterr().out.strip().splitlines()[-1])))
        (data / "results" / model).rename(data / "results" / f"{model}-alone")       # the next command writes anew
    assert alone["m1"]["metrics"]["l3.bleu4"] != alone["m2"]["metrics"]["l3.bleu4"]     # they differ, so order shows
    assert cli([*base, "--model", "m2", "--model", "m1", "--model", "m2"]) == 0
    paths = [Path(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [p.parent.name for p in paths] == ["m2", "m1"]                              # each once, in order given
    for p in paths:
        assert without_timestamp(read_results(p)) == alone[p.parent.name]

    (data / "results" / "m1").rename(data / "results" / "m1-together")
    assert cli([*base, "--model", "m1", "--model", "ghost"]) == 2
    out = capsys.readouterr()
    assert "no stored replies of model 'ghost'" in out.err
    assert without_timestamp(read_results(Path(out.out.strip().splitlines()[-1]))) == alone["m1"]


def test_score_without_replies_fails_clearly(setup, capsys):
    _, folder, data, _ = setup
    assert cli(["score", "--model", "ghost", "--benchmark", str(folder), "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert "no stored replies of model 'ghost'" in err and "m1" in err
