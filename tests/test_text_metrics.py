"""Text metrics on fixed inputs: values worked out by hand or by the reference library."""
import math

import numpy as np
import pytest

from eval_backend.benchmark.model import AudioRef, Benchmark, Script, Variant
from eval_backend.scoring import bootstrap, text_metrics as tm, wordnet_setup
from eval_backend.scoring.normalise import int_to_words, normalise_text
from eval_backend.scoring.registry import ScoringContext
from eval_backend.scoring.understanding import word_errors
from eval_backend.store import Reply, Store


# ---------------------------------------------------------------- normaliser and WER
@pytest.mark.parametrize("raw, expected", [
    ("Hello, World!", "hello world"),
    ("It's 21 degrees - don't worry.", "it is twenty one degrees do not worry"),
    ("I'm sure you'll be fine; we've won't can't let's", "i am sure you will be fine we have will not cannot let us"),
    ("John's car", "johns car"),                      # a possessive is not "john is"
    ("the 2nd of 3.5 and 1,000 or 50%", "the second of three point five and one thousand or fifty percent"),
    ("twenty-one", "twenty one"),
    ("\u201cQuoted\u201d \u2014 text", "quoted text"),
    ("", ""),
    (None, ""),
])
def test_normaliser(raw, expected):
    assert normalise_text(raw) == expected


def test_number_words():
    assert int_to_words(0) == "zero"
    assert int_to_words(115) == "one hundred fifteen"
    assert int_to_words(2021) == "two thousand twenty one"
    assert int_to_words(3_000_040) == "three million forty"


def test_word_errors_by_hand():
    # sit/sat substituted, the second "the" deleted: 2 errors over 6 reference words
    assert word_errors("The cat sat on the mat.", "the cat sit on mat") == (2, 6)
    # digits and punctuation normalised away
    assert word_errors("I have 2 dogs.", "i have two dogs") == (0, 4)
    # an empty hypothesis deletes every word
    assert word_errors("one two three", "") == (3, 3)
    # an insertion counts
    assert word_errors("good morning", "good good morning") == (1, 2)


# ---------------------------------------------------------------- BLEU / ROUGE-L
def test_sentence_bleu_by_hand():
    score, stats = tm.sentence_bleu_stats("the cat sat on the mat", "the cat is on the mat")
    assert stats == [5, 3, 1, 0, 6, 5, 4, 3, 6, 6]
    # precisions 5/6, 3/5, 1/4 and (exp smoothing, first zero) 1/(2*3); brevity penalty 1
    expected = 100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** 0.25
    assert score == pytest.approx(expected, abs=1e-9)


def test_corpus_bleu_matches_sacrebleu():
    import sacrebleu
    hyps = ["the cat sat on the mat", "a quick brown fox", "hello there my friend", "nothing matches here"]
    refs = ["the cat is on the mat", "the quick brown fox jumps", "hello my good friend", "completely different"]
    stats = [tm.sentence_bleu_stats(h, r)[1] for h, r in zip(hyps, refs)]
    total = [sum(c) for c in zip(*stats)]
    assert tm.corpus_bleu_from_stats(total) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score, abs=1e-9)


def test_rouge_l_by_hand():
    # LCS "the cat on the mat" = 5; P = 5/5, R = 5/6 -> F = 10/11
    assert tm.rouge_l_f("the cat on the mat", "the cat sat on the mat") == pytest.approx(10 / 11)
    assert tm.rouge_l_f("completely unrelated", "the cat sat") == 0.0


# ---------------------------------------------------------------- WordNet + METEOR
@pytest.fixture(scope="module")
def wordnet_dir(tmp_path_factory):
    # packages.txt installs WordNet, so its absence is a broken setup, not a reason to skip
    assert (wordnet_setup.DEBIAN_WORDNET / "data.noun").is_file(), wordnet_setup.INSTALL_HINT
    return wordnet_setup.ensure_wordnet(tmp_path_factory.mktemp("data"))


def test_wordnet_copied_not_linked(wordnet_dir):
    wn = wordnet_dir / "corpora" / "wordnet"
    for name in wordnet_setup.FILES:
        assert (wn / name).is_file() and not (wn / name).is_symlink()
    lines = (wn / "lexnames").read_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[3] == "03\tnoun.Tops\t1"
    assert lines[29] == "29\tverb.body\t2" and lines[44] == "44\tadj.ppl\t3"
    from nltk.corpus import wordnet
    assert wordnet.synsets("dog")[0].lexname() == "noun.animal"


def test_meteor_by_hand(wordnet_dir):
    # identical: Fmean 1, one chunk over 6 matches -> 1 - 0.5 * (1/6)^3
    assert tm.meteor("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1 - 0.5 / 216)
    # "auto" matches "car" only through WordNet synonyms: 4 matches in one chunk
    assert tm.meteor("the auto is red", "the car is red") == pytest.approx(1 - 0.5 / 64)
    assert tm.meteor("", "the car") == 0.0


def _ctx(tmp_path, text="What a lovely day!"):
    b = Benchmark("t", "1", scripts=[Script("s1", "words", "happy", "daily", {
        "target": Variant("target", "happy", AudioRef("x.wav", "0"), "That sounds like a lovely day!")})])
    b.hash = "h"
    r = Reply("m", "h", "conversation/s1/target", "conversation", "s1", "target", "ok", text=text)
    return ScoringContext("m", b, {r.request_id: r}, Store(tmp_path))


def test_meteor_not_computed_without_wordnet(tmp_path, monkeypatch):
    monkeypatch.setattr(wordnet_setup, "DEBIAN_WORDNET", tmp_path / "nowhere")
    res = tm.meteor_metric(_ctx(tmp_path))
    assert res.value is None
    assert res.reason == ("not computed: WordNet not installed "
                          "(apt-get install wordnet-base wordnet-sense-index)")


# ---------------------------------------------------------------- MiniLM: SemSim and BERTScore
def test_minilm_ships_in_site_packages():
    path = tm.minilm_path()
    assert (path / "model.safetensors").is_file() and "site-packages" in str(path)


def test_embeddings_match_sentence_transformers():
    """Our plain-torch MiniLM (eval_backend/scoring/minilm.py) computes what sentence-transformers computes for the
    model: the safety bank's sentences and edge cases (empty, one letter, past the 256-token cut, non-Latin, emoji),
    in batches with padding."""
    from sentence_transformers import SentenceTransformer

    from eval_backend.safety import bank
    texts = [t for label in bank.LABELS for t in bank.BANK[label][:10]]
    texts += ["", "a", "I went to the store today.", "Today I went to the shop.", "word " * 400,
              "Ünïcødé naïve café — “quotes”", "中文 and emoji 😀"]
    ours = tm.embed(texts)
    library = SentenceTransformer(str(tm.minilm_path()), device="cpu", local_files_only=True).encode(
        texts, normalize_embeddings=True, convert_to_numpy=True, batch_size=64, show_progress_bar=False)
    assert ours.shape == library.shape == (len(texts), 384) and ours.dtype == np.float32
    assert float(np.abs(ours - library).max()) < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    a, b = ours[texts.index("I went to the store today.")], ours[texts.index("Today I went to the shop.")]
    assert 0.5 < float(a @ b) < 0.99


def test_bertscore_matches_the_library():
    import bert_score
    hyps, refs = ["the cat sat on the mat", "hello there"], ["the cat is on the mat", "hello there"]
    ours = tm.bertscore_f1(hyps, refs)
    _, _, f = bert_score.score(hyps, refs, model_type=str(tm.minilm_path()), num_layers=6, device="cpu")
    assert ours == pytest.approx([float(x) for x in f], abs=1e-5)
    assert ours[1] == pytest.approx(1.0, abs=1e-4) and ours[0] < 0.99


def test_bertscore_metric_leaves_failed_replies_out(tmp_path):
    ctx = _ctx(tmp_path)
    failed = Reply("m", "h", "conversation/s1/neutral", "conversation", "s1", "neutral", "failed",
                   error_class="timeout")
    ctx.benchmark.scripts[0].variants["neutral"] = Variant("neutral", "neutral", AudioRef("y.wav", "1"), "Oh?")
    ctx.replies[failed.request_id] = failed
    res = tm.bertscore(ctx)
    assert res.n == 1 and res.failures == {"failed_reply": 1}
    rouge = tm.rouge_l(ctx)   # an empty reply where defined: 0 for the failed one
    assert rouge.n == 2 and rouge.per_item["conversation/s1/neutral"] == 0.0


# ---------------------------------------------------------------- bootstrap
def test_bootstrap_is_deterministic_and_sane():
    vals = [0.0, 1.0] * 50
    a, b = bootstrap.mean_ci(vals), bootstrap.mean_ci(vals)
    assert a == b and a[0] < 0.5 < a[1] and 0.35 < a[0] and a[1] < 0.65
    assert bootstrap.mean_ci([0.7] * 10) == (0.7, 0.7)
    assert bootstrap.mean_ci([1.0]) is None
    ci = bootstrap.units_ci([(1, 2), (3, 4), (0, 4)], lambda s: s[0] / s[1])
    assert ci is not None and 0 <= ci[0] <= ci[1] <= 1 and not math.isnan(ci[0])

