"""`python -m tests.support.storage_probe RECORD_DIR`: what the PostgreSQL pass will run from a SQLite pass's record,
and why each incidental test (`store_incidental`: a browser test, a marked one) that stays there stays
(scripts/test.sh prints it before that pass)."""
from __future__ import annotations

import sys

from . import covered_incidental_tests, read_record, read_statements


def describe(record_dir: str, shown: int = 8) -> str:
    record = read_record(record_dir)
    if record is None:
        return f"no SQLite record in {record_dir}"
    ran, storage = record
    found = read_statements(record_dir)
    lines = [f"the SQLite pass ran {len(ran)} tests; {len(storage)} used the store"]
    if found is None:
        return "\n".join(lines + ["no statement trace: every test that used the store runs on PostgreSQL"])
    covered, kept = covered_incidental_tests(record_dir)
    seen = {t for t in kept if kept[t]}
    # (an incidental test with a child the probe cannot see into is in `unseen`, never in `incidental`)
    lines.append(f"{len(found.incidental) + len(found.unseen)} tests used it on the way to what they check (a page, "
                 f"a pipeline's output, Gradio's routes): {len(covered)} {'does' if len(covered) == 1 else 'do'} "
                 f"not run on PostgreSQL (each store statement they issued, a test of the store that runs there "
                 f"issued too; {len(found.covering)} statements in all), {len(kept) + len(found.unseen)} do "
                 f"({len(seen)} issued a statement no test of the store there issued, "
                 f"{len(found.unseen)} started a child the probe cannot see into)")
    only = sorted({k for keys in kept.values() for k in keys})
    for k in only[:shown]:
        users = sum(k in keys for keys in kept.values())
        lines.append(f"  {users} test(s): {found.shapes.get(k, k)[:160]}")
    if len(only) > shown:
        lines.append(f"  ... {len(only) - shown} more statements")
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe(sys.argv[1]))
