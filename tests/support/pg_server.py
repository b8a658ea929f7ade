"""A throwaway PostgreSQL server on loopback for tests (Debian's `postgresql` package, no system service).

    with postgres_server() as dsn:          # postgresql://postgres@127.0.0.1:<port>/postgres
        psycopg.connect(dsn)

initdb + pg_ctl in a temp dir, listening on 127.0.0.1 only (unix socket in the same dir), trust auth for the
local superuser, fsync off (a test cluster: speed over durability). initdb refuses to run as root, so as
root the server runs as the `postgres` system user the Debian package creates (subprocess user=).
Stopped (fast) and removed on exit.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tests.support.processes import free_port


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextmanager
def postgres_server(timeout_s: float = 60.0, max_connections: int = 100, durable: bool = False):
    """`durable=True` keeps fsync on (benchmarks compare it with SQLite's synchronous=FULL)."""
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    as_root = os.geteuid() == 0
    run_as = {"user": "postgres", "group": "postgres"} if as_root else {}
    tmp = Path(tempfile.mkdtemp(prefix="pgtest-"))
    data = tmp / "data"
    if as_root:
        pw = pwd.getpwnam("postgres")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
    port = free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    started = False
    try:
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                        "--encoding=UTF8", "--no-instructions"], check=True, capture_output=True, env=env,
                       timeout=timeout_s, **run_as)
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp} -c max_connections={max_connections}"
        if not durable:
            opts += " -c fsync=off -c full_page_writes=off"
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(tmp / "log"), "-w",
                        "-t", str(int(timeout_s)), "start"], check=True, capture_output=True, env=env,
                       timeout=timeout_s + 5, **run_as)
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    except subprocess.CalledProcessError as exc:
        log = (tmp / "log").read_text() if (tmp / "log").exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr.decode(errors='replace')}\n{log}") from None
    finally:
        if started:
            subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                           capture_output=True, env=env, timeout=timeout_s, **run_as)
        shutil.rmtree(tmp, ignore_errors=True)
