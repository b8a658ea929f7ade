#!/usr/bin/env bash
# Sets up everything the tests need (Debian + Python packages), runs `ruff check .` (ruff.toml) and mypy over the
# pure cores (mypy.ini), then the test suite on SQLite (the embedded default: every test) and on PostgreSQL (a
# throwaway cluster the tests start on loopback with Debian's postgresql binaries; no system service is used): the
# tests that used the store on the SQLite pass. EMPATHY_ARENA_TEST_DB=sqlite|postgresql runs one pass only.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
took() { echo "=== $1 took $((SECONDS / 60)) min $((SECONDS % 60)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"; SECONDS=0; }
bash scripts/setup.sh --test
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset DATABASE_URL
# Python keeps compiled modules (and pytest its assertion-rewritten test modules) in __pycache__ (git ignores it):
# with PYTHONDONTWRITEBYTECODE set, as on some machines, every pytest process re-rewrote all ~110 test modules on
# collection (12.5 s against 7.7 s here, per xdist worker and per part) and every started app recompiled ours.
unset PYTHONDONTWRITEBYTECODE
. scripts/python_env.sh
# The safety screen's per-machine cache (its model unpacked and its example bank embedded into ~/.cache/empathy-arena:
# ~2.5 CPU-minutes on a machine that has none, seconds after) is made once here, beside the lint: on a new machine
# the first tests that screened all waited on that one embedding at once, past their own deadlines (docs/benchmarks.md,
# "A new machine's first run"); the offline screen's, which the tests use, by screening one sentence
EMPATHY_ARENA_MODERATION_URL= "$PY" -m eval_backend screen --text "a sentence long enough to load the whole screen" \
    > /dev/null & warming=$!
echo "=== ruff check ==="
"$PY" -m ruff check .            # lint first: a finding fails the run before any test starts
echo "=== mypy (pure cores, mypy.ini) ==="
"$PY" -m mypy
wait "$warming" || { echo "the safety screen's command failed (above)"; exit 1; }
took "set-up, ruff, mypy and the safety screen's cache"
databases="${EMPATHY_ARENA_TEST_DB:-sqlite postgresql}"
# Each pass in three parts: every test that may share the two cores, the browser tests (chromium) among them, on
# two xdist workers (tests/conftest.py groups a module's tests, and a shared session fixture's, on one worker; a
# browser test mostly waits on playback, timers and its started app, and the CPU-bound tests fill those waits:
# docs/benchmarks.md, "Test suite"); the `exclusive` tests (a module that times something: tests/conftest.py
# TIMED_MODULES), one module at a time on each worker, each worker and all it starts pinned to a core of its own
# (EMPATHY_ARENA_TEST_PIN), so no other test's CPU skews a timing (with fewer cores than workers: in one process,
# alone); last the `machine` tests (the Space's own start, timed on the whole machine: WHOLE_MACHINE_MODULES) alone,
# unpinned. EMPATHY_ARENA_TEST_WORKERS=0 runs every part in one process.
workers="${EMPATHY_ARENA_TEST_WORKERS:-2}"
parallel=(); [ "$workers" != 0 ] && parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
pinned=(env); timed=(); if [ "$workers" != 0 ] && [ "$(nproc)" -ge "$workers" ]; then
    pinned=(env EMPATHY_ARENA_TEST_PIN=1); timed=("${parallel[@]}"); fi
# The SQLite pass records which tests used the store (tests/support/storage_probe); a PostgreSQL pass after it
# runs those, but for the tests that use the store on the way to what they check (a browser test's page; a test
# marked `store_incidental`: a pipeline's output, Gradio's routes) each store statement of which (noted on the
# SQLite pass: EMPATHY_ARENA_STORE_SQL=1) a test of the store that runs there issued too. A PostgreSQL pass alone
# (EMPATHY_ARENA_TEST_DB=postgresql) runs every test.
record=$(mktemp -d)
# Whisper's transcripts of the demo pipeline's clips and the real-voice recordings, kept for the second pass
# (tests/support/demo_pipeline.py) and seeded with the committed ones this machine's decoder made before
# (tests/support/whisper_seed.py: a clip whose samples, model, libraries or processor differ is decoded), and the
# demo pipeline's demo builds (files only, no store: the second pass copies them; tests/support/demo_pipeline.py)
# and the 200-battle tests' heard clips (files named by source and recipe; tests/support/battle_sample.py)
export EMPATHY_ARENA_TEST_CACHE; EMPATHY_ARENA_TEST_CACHE=$(mktemp -d)
trap 'rm -rf "$record" "$EMPATHY_ARENA_TEST_CACHE"' EXIT
"$PY" -m tests.support.whisper_seed --into "$EMPATHY_ARENA_TEST_CACHE/asr"
failed=""
for db in $databases; do
    if [ "$db" = sqlite ] || [ -n "$(ls -A "$record")" ]; then
        uses=(env EMPATHY_ARENA_TEST_STORE_RECORD="$record" EMPATHY_ARENA_STORE_SQL=1)
    else uses=(env); fi
    if [ "$db" = postgresql ] && [ -n "$(ls -A "$record")" ]; then
        "$PY" -m tests.support.storage_probe "$record" || echo "(the record could not be described)"; fi
    collected=0
    for part in shared timed machine; do
        echo "=== tests on $db: $part ==="
        pin=(env)
        case "$part" in
            shared) how=("${parallel[@]}" -m "not exclusive") ;;
            timed) how=("${timed[@]}" -m "exclusive and not machine"); pin=("${pinned[@]}") ;;
            machine) how=(-m machine) ;;
        esac
        set +e
        "${pin[@]}" "${uses[@]}" EMPATHY_ARENA_TEST_DB="$db" "$PY" -m pytest "${how[@]}" --durations=15 "$@"   # where the time went
        rc=$?
        set -e
        took "the $part tests on $db"
        if [ "$rc" = 5 ]; then rc=0; else collected=1; fi      # a part may select nothing; the pass may not
        if [ "$rc" != 0 ]; then failed="$failed $db/$part(exit $rc)"; fi
    done
    if [ "$collected" = 0 ]; then echo "pytest collected no tests on $db: that is a failure here"; failed="$failed $db(none)"; fi
done
# EMPATHY_ARENA_TEST_HARVEST=1: add this machine's Whisper transcripts of the run to the committed seed (a machine
# whose decoder the seed does not hold decodes every fixed clip: ~570 CPU-s more; docs/benchmarks.md)
if [ "${EMPATHY_ARENA_TEST_HARVEST:-}" = 1 ]; then "$PY" -m tests.support.whisper_seed --harvest "$EMPATHY_ARENA_TEST_CACHE/asr"; fi
if [ -n "$failed" ]; then echo "test suite failed on:$failed"; exit 1; fi
echo "test suite passed on: $databases"
