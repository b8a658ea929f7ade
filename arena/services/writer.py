"""The process's one writer thread for arena battles and votes (the HTTP API and the Gradio tab alike).

SQLite takes one writer at a time anyway, and threads racing for its lock fall into its busy handler, which
sleeps up to 100 ms per retry, unfairly. Measured at saturation (50 voters back to back): a 40-thread pool gave
p99 7.7-8.7 s, the single writer 1.4-1.9 s, for ~20% fewer votes/s (see arena/web/http_api.py).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-writer")


def run_write(fn, *args, **kwargs):
    """Run a writing service call on the writer thread and wait for it (for synchronous callers)."""
    return WRITER.submit(fn, *args, **kwargs).result()
