"""Human names of metrics and columns: the one registry every table header, legend and note reads.

Results documents, CSV downloads and the command line keep the internal ids (`l1.asr_wer`); what a visitor
reads on the page is the name here, with the id kept in the header's tooltip and the legend
(`leaderboard/results_table.py`). A metric without an entry still gets a readable name made from its id, so a
new metric never shows its raw id; give it a proper name here when adding it.
"""
from __future__ import annotations

import re

# metric id -> its name on the page (short: a column header; at most ~30 characters)
METRIC_LABELS: dict[str, str] = {
    "l1.asr_wer": "ASR word error rate",
    "l1.semsim_minilm": "Semantic similarity (MiniLM)",
    "l1.understanding_acc": "Understanding accuracy",
    "l2.reasoning_acc": "Reasoning accuracy",
    "l3.bertscore_minilm_f1": "BERTScore F1 (MiniLM)",
    "l3.bleu4": "BLEU-4",
    "l3.meteor": "METEOR",
    "l3.rougeL_f": "ROUGE-L F",
    "l3.judge.c1": "Judge C1: context fit",
    "l3.judge.c2": "Judge C2: naturalness",
    "l3.judge.c3": "Judge C3: colloquial",
    "l3.judge.c4": "Judge C4: speech cues",
    "l3.judge.c1c4": "Judge (C1 + C4) / 2",
    "l3.ves": "Vocal empathy (VES)",
    "audio.consistency_wer": "Said vs written (WER)",
    "audio.delivery_shift_agreement": "Delivery shift agreement",
    "audio.dnsmos_bak": "DNSMOS background",
    "audio.dnsmos_ovrl": "DNSMOS overall",
    "audio.dnsmos_p808": "DNSMOS P.808",
    "audio.dnsmos_sig": "DNSMOS signal",
    "audio.distillmos": "Distill-MOS",
    "audio.loudness_dbfs": "Loudness (dBFS)",
    "audio.pitch_median_hz": "Median pitch (Hz)",
    "audio.pitch_range_st": "Pitch range (semitones)",
    "audio.prosody_fit": "Prosody fit",
    "audio.speaking_rate": "Speaking rate",
    "aeq.coherence": "AEQ coherence",
    "aeq.delivery": "AEQ delivery",
    "aeq.discrimination": "AEQ discrimination",
    "aeq.modality_reliance": "AEQ modality reliance",
    "aeq.naturalness": "AEQ naturalness",
    "aeq.supportiveness": "AEQ supportiveness",
    "sel.accuracy": "Selection accuracy",
    "sel.context_final": "Selection: context",
    "sel.tone_final": "Selection: tone",
    "sel.final": "Selection final",
    # the EchoMind paper's figures without a like-for-like metric here (leaderboard/results_table.PAPER_COLUMNS)
    "l1.semsim (paper)": "Semantic similarity (paper)",
    "audio.nisqa (paper)": "NISQA (paper)",
    "audio.emoalign (paper)": "Emotion alignment (paper)",
    "l3.bertscore (paper, rescaled)": "BERTScore (paper, rescaled)",
}

CI_SUFFIX = " 95% CI"
_ID = re.compile(r"^[a-z0-9]+\.[A-Za-z0-9_.]+")


def looks_like_id(text: str) -> bool:
    """True for an internal id (`family.name`), which a visitor should never read as a header."""
    return bool(_ID.match(str(text)))


def metric_label(name: str) -> str:
    """The metric's name on the page; an unlisted metric's is made from its id (`x.speech_rate` → "Speech rate
    (x)"), never the id itself."""
    if name in METRIC_LABELS:
        return METRIC_LABELS[name]
    if not looks_like_id(name):
        return name
    family, _, rest = name.partition(".")
    words = rest.replace(".", " ").replace("_", " ").strip() or family
    return f"{words[:1].upper()}{words[1:]} ({family})"


def ids_in(text: str) -> list[str]:
    """The known metric ids a text mentions, longest first (so `l3.judge.c1c4` is found before `l3.judge.c1`)."""
    return [n for n in sorted(METRIC_LABELS, key=len, reverse=True) if n in text]


def with_labels(text: str) -> str:
    """A reason or note with each known metric id replaced by its name (for text shown to the public)."""
    for n in ids_in(text):
        text = re.sub(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", METRIC_LABELS[n], text)
    return text
