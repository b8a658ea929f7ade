"""The semantic layer's labelled example bank: plain text files in bank_data/ (one sentence a line, `#` starts a
comment), written for this project, not taken from any data set.

This is the layer's *tuning* set: the classifiers (semantic.py) are fitted on it and their cut-offs chosen by
cross-validation over it (and checked on tests/support/safety_sentences.py's DEV set). It was written after the
held-apart evaluation set (tests/support/safety_held_apart.py) was committed and shares no sentence with it; the
same person wrote both, and both cover the kinds of statement issue 26 names (giving things away, researching
means, saying goodbye, "won't be a problem much longer"), so the held-apart figures measure unseen *wordings*, not
unseen ideas (docs/security.md says so).

Labels:
- "crisis": first-person statements of suicidal intent, planning, preparation or farewell, direct and indirect;
- "abuse": contempt and insults addressed to the listener, with and without swear words;
- "threat": threats of violence against the listener or people close to them;
- "benign": what must pass — empathetic replies (grief, anger, illness, crisis-line advice: many use the harmful
  sets' words), a person's everyday sadness or anger that is not a crisis, voters' reasons, neutral talk.
Two parts per label: `{label}.txt`, written for the bank (WRITTEN: what cross-validation folds,
tests/support/safety_tuning.py), and `pooled_{label}.txt` (bank-11), every sentence of the evaluation sets whose
readings are spent — held-apart v1, v2, v5, v6, the dev sets of tests/support/safety_sentences.py and the benign
probe, written by other authors — pooled in because a layer fitted on more authors read the next author's set better
(leave-one-source-out, tests/support/safety_pooled_cv.py; docs/security.md). Those sets' figures are fit figures
from bank-11 on. bank-12 pools held-apart v7 and v8 too (read for semantic-11-bank-11, now spent) and adds 973
written lines by three more helpers who saw no file of the repository, written after held-apart v9 was committed (v9
is not in the bank): 120 crisis, 199 abuse, 197 threat, 298 benign, and 159 benign lines in short registers (remarks
on how someone sounds, annotation labels, fillers) added after the first draft flagged 17 of the 521 reply lines of
tests/test_safety_generalises.py — so that test's figure is a development figure from bank-12 on. bank-13 pools
held-apart v9 (read for bank-12) and adds 622 lines by another such helper, written after held-apart v10 was
committed (80 crisis, 150 abuse, 144 threat, 248 benign; replies a badly behaved voice model gives a user who just
shared something, and what must pass beside them). bank-14 pools held-apart v10 (read for bank-13), bank-15 v11
(read for bank-14), bank-16 v12 (read for bank-14 and bank-15) and 150 kind replies that open with a remark on
how the person sounds ("Ha, you sound amused!"), by another helper who saw no file of the repository: pooling v12
alone made the layer read one such baseline reply as abuse.
Adding a sentence changes what the layer learns: bump `VERSION` (stored decisions name the screen that made them);
`digest()` changes by itself (the cache of the fitted layer is keyed by it: semantic.Layer, semantic_cache.fitted).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

VERSION = "bank-16"
LABELS = ("crisis", "abuse", "threat", "benign")
FOLDER = Path(__file__).with_name("bank_data")


def _read(name: str) -> list[str]:
    lines = (FOLDER / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


WRITTEN: dict[str, list[str]] = {label: _read(label) for label in LABELS}
POOLED: dict[str, list[str]] = {label: _read(f"pooled_{label}") for label in LABELS}
BANK: dict[str, list[str]] = {label: WRITTEN[label] + POOLED[label] for label in LABELS}


def digest(examples: dict[str, list[str]] | None = None) -> str:
    """sha256 over the labelled sentences, in order: what a fitted layer was fitted on."""
    h = hashlib.sha256()
    for label, texts in (examples or BANK).items():
        for text in texts:
            h.update(f"{label}\t{text}\n".encode())
    return h.hexdigest()
