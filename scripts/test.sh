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
. scripts/python_env.sh
echo "=== ruff check ==="
"$PY" -m ruff check .            # lint first: a finding fails the run before any test starts
echo "=== mypy (pure cores, mypy.ini) ==="
"$PY" -m mypy
took "set-up, ruff and mypy"
databases="${EMPATHY_ARENA_TEST_DB:-sqlite postgresql}"
# Each pass in three parts: every test that may share the two cores, on two xdist workers (tests/conftest.py
# groups a module's tests, and a shared session fixture's, on one worker); the browser tests (chromium), two modules
# at a time (they mostly wait on playback, timers and their started app); then the `exclusive` tests (a module that
# times something: tests/conftest.py TIMED_MODULES) in one process, alone, so no other test's CPU skews a timing.
# EMPATHY_ARENA_TEST_WORKERS=0 runs every part in one process.
workers="${EMPATHY_ARENA_TEST_WORKERS:-2}"
parallel=(); [ "$workers" != 0 ] && parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
# The SQLite pass records which tests used the store (tests/support/storage_probe); a PostgreSQL pass after it
# runs those. A PostgreSQL pass alone (EMPATHY_ARENA_TEST_DB=postgresql) runs every test.
record=$(mktemp -d)
# Whisper's transcripts of the demo pipeline's clips, kept for the second pass (tests/support/demo_pipeline.py)
export EMPATHY_ARENA_TEST_CACHE; EMPATHY_ARENA_TEST_CACHE=$(mktemp -d)
parts_dir=$(mktemp -d)      # each part's output, and the SQLite browser part's record while it runs beside another part
trap 'rm -rf "$record" "$EMPATHY_ARENA_TEST_CACHE" "$parts_dir"' EXIT
failed=""
collected_sqlite=0; collected_postgresql=0
# run_part DB PART RECORD [pytest arguments]: one part of a pass, its output to $parts_dir/DB-PART.log and its exit
# code beside it. Parts may run two at a time (below), so each gets its own pytest temp dir (--basetemp).
run_part() {
    local db=$1 part=$2 rec=$3 how uses rc start=$SECONDS
    shift 3
    case "$part" in
        shared) how=("${parallel[@]}" -m "not exclusive and not browser") ;;
        browser) how=("${parallel[@]}" -m "browser and not exclusive") ;;
        exclusive) how=(-m exclusive) ;;
    esac
    if [ "$db" = sqlite ] || [ -n "$(ls -A "$record")" ]; then uses=(env EMPATHY_ARENA_TEST_STORE_RECORD="$rec")
    else uses=(env); fi
    set +e
    "${uses[@]}" EMPATHY_ARENA_TEST_DB="$db" "$PY" -m pytest "${how[@]}" --basetemp="$parts_dir/tmp-$db-$part" \
        --durations=15 "$@" > "$parts_dir/$db-$part.log" 2>&1      # --durations: where the time went
    rc=$?
    set -e
    echo "=== the $part tests on $db took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s" \
        "(load average $(cut -d' ' -f1-3 /proc/loadavg))" >> "$parts_dir/$db-$part.log"
    echo "$rc" > "$parts_dir/$db-$part.rc"
}
# show_part DB PART: print the part's output and count its outcome in `collected_DB` and `failed`
show_part() {
    local db=$1 part=$2 rc
    echo "=== tests on $db: $part ==="
    cat "$parts_dir/$db-$part.log"
    rc=$(cat "$parts_dir/$db-$part.rc")
    if [ "$rc" = 5 ]; then rc=0; else eval "collected_$db=1"; fi    # a part may select nothing; the pass may not
    if [ "$rc" != 0 ]; then failed="$failed $db/$part(exit $rc)"; fi
}
if [ "$databases" = "sqlite postgresql" ]; then
    # Both passes. The PostgreSQL pass selects its tests from the SQLite pass's record, so its shared part can start
    # once the SQLite shared part has ended: it runs beside the SQLite browser part, whose tests mostly wait on
    # playback, timers and their apps while the shared ones compute (measured: docs/benchmarks.md, "Test suite").
    # That browser part keeps its record apart until it ends, so the running PostgreSQL part reads a finished one.
    # The timed parts still run alone, last.
    run_part sqlite shared "$record" "$@"; show_part sqlite shared
    browser_record="$parts_dir/browser-record"; mkdir "$browser_record"
    run_part sqlite browser "$browser_record" "$@" &
    beside=$!
    run_part postgresql shared "$record" "$@"
    wait "$beside"
    mv "$browser_record"/* "$record"/ 2>/dev/null || true
    show_part sqlite browser; show_part postgresql shared
    run_part postgresql browser "$record" "$@"; show_part postgresql browser
    run_part sqlite exclusive "$record" "$@"; show_part sqlite exclusive
    run_part postgresql exclusive "$record" "$@"; show_part postgresql exclusive
else
    for db in $databases; do
        for part in shared browser exclusive; do
            run_part "$db" "$part" "$record" "$@"; show_part "$db" "$part"
        done
    done
fi
for db in $databases; do
    if [ "$(eval echo "\$collected_$db")" = 0 ]; then
        echo "pytest collected no tests on $db: that is a failure here"; failed="$failed $db(none)"
    fi
done
if [ -n "$failed" ]; then echo "test suite failed on:$failed"; exit 1; fi
echo "test suite passed on: $databases"
