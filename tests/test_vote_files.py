"""Vote files round-trip any text: export -> import -> export is byte-identical (JSONL and CSV) for every Unicode
text a vote can hold, with the style covariates, attributes and weights; bad input is refused line by line."""
import json

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from arena.core import votes_io
from arena.core.covariates import COLUMNS
from arena.services.service import ArenaService
from arena.tables.storage import EXPORT_FIELDS
from arena.core.votes_io import VoteImportError
from eval_backend.store import Store

# any character a UTF-8 file can hold except NUL (refused, below): line and paragraph separators included
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40)
NUMBER = st.one_of(st.none(), st.floats(0, 1e4, allow_nan=False, allow_infinity=False))
LOUDNESS = st.one_of(st.none(), st.floats(-120, 10, allow_nan=False, allow_infinity=False))


@st.composite
def vote_records(draw):
    a, b = draw(TEXT), draw(TEXT)
    assume(a.strip() and b.strip() and a.strip() != b.strip() and {a.strip(), b.strip()}.isdisjoint({"tie", "both_bad"}))
    slot = draw(st.sampled_from(["A", "B", "tie", "both_bad"]))
    rec = {"model_a": a, "model_b": b, "winner": {"A": a, "B": b}.get(slot, slot),
           "reason": draw(st.one_of(st.none(), TEXT)), "attribute": draw(st.one_of(st.none(), TEXT)),
           "request_id": draw(st.one_of(st.none(), TEXT)), "benchmark_hash": draw(st.one_of(st.none(), TEXT)),
           "said": draw(st.sampled_from([None, "A", "B", "tie"])), "first_heard": draw(st.sampled_from([None, "A", "B"])),
           "timestamp": draw(st.floats(0, 4e9, allow_nan=False)), "weight": draw(st.floats(0, 1))}
    for col in COLUMNS:
        rec[col] = draw(LOUDNESS if "loudness" in col else NUMBER)
    return rec


def _store(tmp_path, name, fresh_database_url):
    return ArenaService(Store(tmp_path / name, database_url=fresh_database_url()), clock=lambda: 1.7e9)


def test_a_reason_with_line_separators_survives_the_jsonl_round_trip(tmp_path, fresh_database_url):
    """str.splitlines() takes U+2028, U+2029 and U+0085 for line ends; JSON does not escape them."""
    reason = "first line\u2028second\u2029third\x85fourth\x1cfifth"
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"model_a": "m1", "model_b": "m2", "winner": "m1", "reason": reason,
                               "a_duration_s": 3.5, "b_duration_s": 7.0, "attribute": "sad"},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    one = _store(tmp_path, "one", fresh_database_url)
    assert one.import_votes(src) == 1
    first = one.export_votes("jsonl", tmp_path / "one.jsonl")
    assert "\u2028" in first and first.count("\n") == 1
    two = _store(tmp_path, "two", fresh_database_url)
    assert two.import_votes(tmp_path / "one.jsonl") == 1
    vote = two.votes()[0]
    assert vote.reason == reason and vote.a_duration_s == 3.5 and vote.b_duration_s == 7.0
    assert two.export_votes("jsonl") == first


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(vote_records(), min_size=1, max_size=4))
def test_export_import_export_is_byte_identical_for_any_text(tmp_path_factory, fresh_database_url, records):
    tmp = tmp_path_factory.mktemp("roundtrip")
    src = tmp / "in.jsonl"
    src.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode())
    origin = _store(tmp, "origin", fresh_database_url)
    assert origin.import_votes(src) == len(records)
    for fmt in ("jsonl", "csv"):
        first = origin.export_votes(fmt, tmp / f"first.{fmt}")
        again = _store(tmp, f"again_{fmt}", fresh_database_url)
        assert again.import_votes(tmp / f"first.{fmt}") == len(records)
        assert again.export_votes(fmt) == first, fmt
    exported = [json.loads(line) for line in (tmp / "first.jsonl").read_text(encoding="utf-8").split("\n") if line]
    assert [set(e) for e in exported] == [set(EXPORT_FIELDS)] * len(records)
    for rec, e in zip(records, exported):           # covariates and weights as given, attribute stripped
        assert all(e[c] == rec[c] for c in COLUMNS) and e["weight"] == rec["weight"]
        assert e["attribute"] == (rec["attribute"].strip() or None if rec["attribute"] else None)


def test_bad_text_and_numbers_are_refused_line_by_line(tmp_path):
    svc = ArenaService(Store(tmp_path / "d"), clock=lambda: 1.7e9)
    bad = tmp_path / "bad.jsonl"
    lines = ['{"model_a": "a", "model_b": "b", "winner": "a"}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "reason": "nul \\u0000 inside"}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "reason": "lone \\ud800 surrogate"}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "a_duration_s": -1}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "b_words": "many"}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "weight": 1.5}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "a_speech_rate": true}',
             '{"model_a": "a", "model_b": "b", "winner": "a", "a_loudness_lufs": -23.5, "weight": 0}']
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(VoteImportError) as err:
        svc.import_votes(bad)
    assert [line for line, _ in err.value.errors] == [2, 3, 4, 5, 6, 7]
    messages = dict(err.value.errors)
    assert "NUL" in messages[2] and "surrogate" in messages[3] and "a_duration_s" in messages[4]
    assert "b_words" in messages[5] and "[0.0, 1.0]" in messages[6] and "a_speech_rate" in messages[7]
    assert svc.votes() == []
    # a CSV cell with a NUL is refused the same way
    csv_file = tmp_path / "bad.csv"
    csv_file.write_text("model_a,model_b,winner,reason\na,b,a,fine\na,b,b,x\x00y\n")
    with pytest.raises(VoteImportError, match="line 3.*NUL"):
        svc.import_votes(csv_file)


def test_jsonl_lines_split_on_newline_only():
    text = '{"a": "x\u2028y"}\r\n{"b": 1}\n'
    assert [line for _, line in votes_io.jsonl_lines(text)] == ['{"a": "x\u2028y"}\r', '{"b": 1}', ""]
