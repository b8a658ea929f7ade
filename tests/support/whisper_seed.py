"""Whisper's transcripts of the suite's fixed clips, committed, so a fresh clone's first pass decodes what changed only.

The suite transcribes the same clips on every run: the real-voice validation recordings (tests/test_real_cues.py,
from Debian packages) and the demo pipeline's request clips and replies (tests/support/demo_pipeline.py: espeak-ng and
the baselines' voices, the same samples from the same seed). Whisper costs ~0.47 CPU-s a clip whatever its length,
~6 CPU-min a run for these alone. `whisper_transcripts.json` holds them as eval_backend/audio/asr.py keeps them on
disk: under the decoder's fingerprint (weights' sha256, library versions, settings, threads, processor kind and
instruction sets) and each clip's key (that fingerprint's and the samples' sha256). scripts/test.sh writes the
entries of this machine's fingerprint into the run's transcript folder before the first pass; a clip whose samples,
model, libraries or processor differ has another key and is decoded, so the seed can make a run slower to go stale,
never wrong. tests/test_whisper_seed.py decodes a sample of the clips afresh and compares.

    python -m tests.support.whisper_seed --into FOLDER      # what scripts/test.sh runs
    python -m tests.support.whisper_seed --harvest FOLDER   # after a run on this machine: add its transcripts
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from eval_backend.audio.asr import DiskTranscripts, decoder_fingerprint

SEED = Path(__file__).with_name("whisper_transcripts.json")
THREADS = 2          # the Transcriber's default, which every Whisper user in the pipeline runs with


def load(path: Path = SEED) -> dict[str, dict[str, str]]:
    """{decoder fingerprint: {key: transcript}}"""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def for_this_machine(path: Path = SEED) -> tuple[str, dict[str, str]]:
    decoder = decoder_fingerprint(THREADS)
    return decoder, load(path).get(decoder, {})


def seed_into(folder: Path, path: Path = SEED) -> int:
    """Write this machine's transcripts into a transcript folder (those it lacks); how many were written."""
    _, entries = for_this_machine(path)
    written = 0
    for key, text in entries.items():
        target = folder / key[:2] / f"{key}.txt"
        if not target.is_file():
            DiskTranscripts.write(target, text)
            written += 1
    return written


def harvest(folder: Path, path: Path = SEED) -> tuple[int, int]:
    """Add a transcript folder's entries, made on this machine, to the seed under this machine's fingerprint;
    (added, now held for it)."""
    decoder = decoder_fingerprint(THREADS)
    seed = load(path)
    entries = seed.setdefault(decoder, {})
    before = len(entries)
    for f in sorted(folder.glob("*/*.txt")):
        entries[f.stem] = f.read_text(encoding="utf-8")
    seed[decoder] = dict(sorted(entries.items()))
    path.write_text(json.dumps(seed, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return len(entries) - before, len(entries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--into", type=Path, help="a transcript folder (EMPATHY_ARENA_ASR_CACHE) to seed")
    what.add_argument("--harvest", type=Path, help="a transcript folder whose entries join the seed")
    args = ap.parse_args()
    if args.into:
        decoder, entries = for_this_machine()
        written = seed_into(args.into)
        print(f"Whisper seed: {written} of {len(entries)} transcripts for this machine's decoder written"
              + ("" if entries else f" (the seed holds none for {decoder.rsplit('|', 3)[-2:]}: every clip is decoded)"))
    else:
        added, held = harvest(args.harvest)
        print(f"Whisper seed: {added} transcripts added, {held} held for this machine's decoder ({SEED})")


if __name__ == "__main__":
    main()
