"""Would a bigger, multi-author bank make the semantic layer generalise? (issue 26; an experiment, not a screen)

    python -m tests.support.safety_pooled_cv

Pools every labelled sentence whose reading is already spent — the bank (split in three), held-apart v1, v2, v5,
v6, v7, v8 (bank-12), v9 (bank-13), v10 (bank-14), v11 (bank-15) and v12 (bank-16), the DEV and first held-apart sets of safety_sentences.py, and the 600-line benign probe — and
cross-validates the semantic layer (semantic.py, unchanged) leaving one *source* out at a time: each author set is read by a layer
fitted on all the others, the nearest thing to "the next person's phrasings" these sets allow. Prints the whole
screen's figures (classifier + rules + layer) over a grid of cut-offs, per source, and the layer's own ranking
quality (ROC AUC against the benign lines, and recall where 2 % of benign lines score higher). Held-apart v13 is not
read here. docs/security.md gives the figures and what they meant.
"""
from __future__ import annotations

import numpy as np

from eval_backend.safety import bank, semantic
from tests.support import safety_tuning as tuning
from tests.support.safety_held_apart import HELD_APART_26
from tests.support.safety_held_apart_v2 import HELD_APART_26_V2
from tests.support.safety_held_apart_v5 import HELD_APART_26_V5
from tests.support.safety_held_apart_v6 import HELD_APART_26_V6
from tests.support.safety_held_apart_v7 import HELD_APART_26_V7
from tests.support.safety_held_apart_v8 import HELD_APART_26_V8
from tests.support.safety_held_apart_v9 import HELD_APART_26_V9
from tests.support.safety_held_apart_v10 import HELD_APART_26_V10
from tests.support.safety_held_apart_v11 import HELD_APART_26_V11
from tests.support.safety_held_apart_v12 import HELD_APART_26_V12
from tests.support.safety_sentences import DEV, HELD_APART, benign_probe

TO_BANK_LABEL = {ours: label for label, ours in tuning.LABEL_OF.items()}      # "violence" -> "threat"


def _as_bank(sentences: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {label: [] for label in bank.LABELS}
    for label, texts in sentences.items():
        if label in TO_BANK_LABEL:          # hate and personal data are the rules' alone
            out[TO_BANK_LABEL[label]] += texts
    return out


def sources() -> dict[str, dict[str, list[str]]]:
    """{source: bank-shaped sentences}, each sentence in one source only."""
    thirds = [{label: [bank.WRITTEN[label][i] for i in idx] for label, idx in fold.items()}
              for fold in tuning.folds(bank.WRITTEN, 3)]
    out = {f"bank{i}": part for i, part in enumerate(thirds)}
    out |= {"v1": _as_bank(HELD_APART_26), "v2": _as_bank(HELD_APART_26_V2), "v5": _as_bank(HELD_APART_26_V5),
            "v6": _as_bank(HELD_APART_26_V6), "v7": _as_bank(HELD_APART_26_V7), "v8": _as_bank(HELD_APART_26_V8),
            "v9": _as_bank(HELD_APART_26_V9), "v10": _as_bank(HELD_APART_26_V10),
            "v11": _as_bank(HELD_APART_26_V11), "v12": _as_bank(HELD_APART_26_V12),
            "dev": _as_bank({k: DEV[k] + HELD_APART[k] for k in DEV}),
            "probe": _as_bank({"benign": benign_probe()})}
    seen: set[str] = set()          # a sentence in two sources stays in the first only
    for part in out.values():
        for label, texts in part.items():
            part[label] = [t for t in dict.fromkeys(texts) if t not in seen]
            seen.update(part[label])
    return out


def leave_one_source_out() -> list[tuple[str, str, str, dict[str, float]]]:
    """(source, label, text, probabilities from a layer fitted on every other source)."""
    parts, embed = sources(), tuning.CachedEmbed()
    rows = []
    for name, held in parts.items():
        train = {label: [t for other, part in parts.items() if other != name for t in part[label]]
                 for label in bank.LABELS}
        fitted = semantic.Layer(train, embed)
        rows += [(name, label, text, semantic.scores(text, fitted)) for label, texts in held.items() for text in texts]
    return rows


def ranking(rows) -> str:
    from sklearn.metrics import roc_auc_score
    benign = [p for _, label, _, p in rows if label == "benign"]
    out = []
    for label in ("crisis", "abuse", "threat"):
        def read(p: dict[str, float]) -> float:
            return p["crisis"] if label == "crisis" else max(p["abuse"], p["threat"])
        pos = [read(p) for _, lab, _, p in rows if lab == label]
        neg = np.sort([read(p) for p in benign])
        if not pos:
            continue
        auc = roc_auc_score([1] * len(pos) + [0] * len(neg), pos + list(neg))
        cut = neg[int(len(neg) * 0.98)]
        out.append(f"{label} AUC {auc:.3f}, recall at 2 % benign {np.mean(np.array(pos) > cut):.0%}")
    return "; ".join(out)


CUT_GRID = tuple(round(0.55 + 0.05 * i, 2) for i in range(8))        # 0.55 ... 0.9
LAYER_BENIGN_BUDGET = 0.02      # the flag rule: the layer may add at most this share of the benign lines


def split_cuts(rows) -> dict[tuple[float, float], dict[str, int]]:
    """{(abuse cut, threat cut): counts} for the whole screen (classifier + rules + layer) at every pair of CUT_GRID.
    Each text's screen without the layer's flags is taken once (tuning.screen_with with abuse and threat read as 0);
    the layer's own findings at each pair (semantic.readings) then flag it where one reaches the default threshold,
    as core.combine does (check_split_cuts compares both with the whole screen)."""
    base = []
    for _, label, text, p in rows:
        alone = tuning.screen_with(text, {**p, "abuse": 0.0, "threat": 0.0}, semantic.CRISIS_CUT, 0.75)
        base.append((label, alone.flagged, text, p))
    out = {}
    for a in CUT_GRID:
        for t in CUT_GRID:
            counts: dict[str, int] = {}
            for label, flagged, text, p in base:
                layer = any(f.score >= semantic.FLAG_SCORE for f in semantic.readings(
                    text, p, semantic.CRISIS_CUT, {"abuse": a, "threat": t}))
                counts[label] = counts.get(label, 0) + int(flagged or layer)
                counts[label + " n"] = counts.get(label + " n", 0) + 1
                counts[label + " alone"] = counts.get(label + " alone", 0) + int(flagged)
            out[(a, t)] = counts
    return out


def check_split_cuts(rows, pairs=((0.75, 0.75), (0.6, 0.85), (0.85, 0.6))) -> None:
    """The fast path of split_cuts against the whole screen (offline.screen with those cut-offs) on every row."""
    from eval_backend.safety import offline
    fast = split_cuts(rows)
    for a, t in pairs:
        slow: dict[str, int] = {}
        for _, label, text, p in rows:
            r = offline.screen(text, 0.85, read_meaning=lambda x, p=p: semantic.readings(
                x, p, semantic.CRISIS_CUT, {"abuse": a, "threat": t}))
            slow[label] = slow.get(label, 0) + int(r.flagged)
        assert all(fast[(a, t)][k] == v for k, v in slow.items()), ((a, t), fast[(a, t)], slow)


def chosen_cuts(grid: dict[tuple[float, float], dict[str, int]]) -> tuple[float, float]:
    """The flag rule, per class: the pair catching the most abuse and threats at which the layer adds at most
    LAYER_BENIGN_BUDGET of the benign lines to what the classifier and rules flag; ties go to fewer benign lines
    flagged, then to the higher cuts."""
    def added(c: dict[str, int]) -> int:
        return c["benign"] - c["benign alone"]
    allowed = [(k, c) for k, c in grid.items() if added(c) <= LAYER_BENIGN_BUDGET * c["benign n"]]
    return max(allowed, key=lambda kc: (kc[1]["abuse"] + kc[1]["threat"], -kc[1]["benign"], kc[0]))[0]


if __name__ == "__main__":
    rows = leave_one_source_out()
    check_split_cuts(rows)
    grid = split_cuts(rows)
    for (a, t), c in grid.items():
        print(f"abuse {a} threat {t}: abuse {c['abuse']}/{c['abuse n']}, threat {c['threat']}/{c['threat n']}, "
              f"benign {c['benign']}/{c['benign n']} (alone {c['benign alone']})")
    print(f"chosen by the flag rule: {chosen_cuts(grid)}")
    triples = [(label, text, p) for _, label, text, p in rows]
    for cc in (0.3, 0.35, 0.4, 0.5):
        for fc in (0.6, 0.7, 0.75, 0.8, 0.85):
            print(f"crisis {cc} flag {fc}: {tuning.line(tuning.figures(triples, cc, fc))}")
    print(f"all sources (layer alone): {ranking(rows)}")
    for name in dict.fromkeys(source for source, *_ in rows):
        part = [r for r in rows if r[0] == name]
        print(f"{name} at {semantic.CRISIS_CUT}/{semantic.FLAG_CUTS['abuse']}: "
              f"{tuning.line(tuning.figures([(lb, t, p) for _, lb, t, p in part], semantic.CRISIS_CUT, None))}"
              f" | {ranking(part)}")
