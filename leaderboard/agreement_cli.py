"""`python -m leaderboard agreement`: metric-human agreement on the arena's votes (and, with --judge-config,
the pairwise judge's agreement). The computation is eval_backend/scoring/human_agreement.py; this CLI reads the
arena's votes (arena/tables/storage.py) and sits above both, so eval_backend does not import the arena.
"""
from __future__ import annotations

import json
import sys

from arena.tables import storage
from eval_backend import config
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.scoring.human_agreement import Row, agreement_rows, read_result_docs, scores_from_docs
from eval_backend.scoring.settings import build_settings
from eval_backend.store import Store

from .agreement import judge_agreement


def compute(store, docs: list[dict] | None = None) -> list[Row]:
    """Agreement rows from a Store's arena votes and the results documents under its data dir."""
    if not storage.has_votes_table(store):
        return []
    scores, direction = scores_from_docs(read_result_docs(store.root) if docs is None else docs)
    return agreement_rows(storage.load_votes(store), scores, direction)


# ---------------------------------------------------------------- CLI
def add_arguments(p) -> None:
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--judge-config", help="also ask this judge (YAML as for score) on the arena's battles; operator only")
    p.add_argument("--benchmark", default="demo", help="benchmark spec the battles are on (with --judge-config)")
    p.add_argument("--judge-limit", type=int, default=200, help="battles the judge is asked about (default 200)")


def _judge_row(store, args) -> Row | str:
    """The pairwise judge-human agreement on overall votes as a row, or why it is not computed."""

    if args.judge_limit is not None and args.judge_limit < 1:
        return "not computed: --judge-limit must be at least 1"
    try:
        settings = build_settings(args.judge_config, store.root)
        bench = load_benchmark(args.benchmark, store.root)
    except (ValueError, OSError) as exc:
        return f"not computed: {exc}"
    votes = storage.load_votes(store) if storage.has_votes_table(store) else []
    st = judge_agreement(store, bench, votes, settings, limit=args.judge_limit)
    if st.value is None:
        return st.reason or "not computed"
    return Row("judge.pairwise", "overall", st.value, st.n, st.low, st.high, 0)


def main(args) -> int:
    store = Store(args.data_dir)
    rows = compute(store)
    if getattr(args, "judge_config", None):
        judged = _judge_row(store, args)
        if isinstance(judged, Row):
            rows.append(judged)
        else:
            print(f"judge: {judged}", file=sys.stderr)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    if not rows:
        print("no decisive arena vote on a pair of replies that an automatic metric scored")
        return 0
    print(f"{'axis':8} {'metric':40} {'agree':>6} {'95% CI':>15} {'n':>6} {'ties':>5}")
    for r in rows:
        print(f"{r.axis:8} {r.metric:40} {r.agree:6.2f} [{r.low:.2f}, {r.high:.2f}] {r.n:6d} {r.ties:5d}")
    return 0

