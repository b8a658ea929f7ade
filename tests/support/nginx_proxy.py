"""A real reverse proxy for tests: Debian's nginx on a loopback port, in front of an app on loopback.

    with nginx_proxy("127.0.0.1:7870") as proxy:      # upstream host:port
        httpx.get(proxy.url + "/api/arena/health")
        proxy.source                                    # "127.0.0.254": the app's peer, to trust

The config is written per proxy into its own folder (pid, logs and every temp path inside it) and nginx runs
in the foreground (`nginx -c FILE -p DIR -g 'daemon off;'`) on an unprivileged port. It forwards the client's
address the way production proxies do: `X-Forwarded-For $proxy_add_x_forwarded_for` (the client's header, if
any, with the peer address appended). Run as root (a container), nginx's workers drop to nobody, so the folder
is made readable to them. Needs the Debian package nginx (packages-test.txt).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


from tests.support.processes import free_port, wait_until_answers

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONFIG = """
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size {max_body};
    upstream app {{ server {upstream}; keepalive 32; }}
    server {{
        listen {address}:{port};
        location / {{
            proxy_pass http://app;
            proxy_bind {source};                # the proxy's address as the app sees it
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;     # with the port: Gradio builds its URLs from it
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;               # Gradio streams server-sent events
            proxy_request_buffering off;       # bodies reach the app as they arrive (its caps apply)
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


def available() -> bool:
    return Path(NGINX).is_file()


@dataclass
class NginxProxy:
    url: str
    address: str            # where clients connect
    source: str             # the proxy's address as the app's peer: the one to list as trusted
    port: int
    dir: Path
    proc: subprocess.Popen

    def error_log(self) -> str:
        path = self.dir / "error.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@contextlib.contextmanager
def nginx_proxy(upstream: str, address: str = "127.0.0.1", source: str = "127.0.0.254", max_body: str = "0",
                timeout: float = 20.0):
    """nginx on `address`:<free port> forwarding everything to `upstream` ("host:port") from `source` (a
    loopback address of its own, so the app can trust the proxy without trusting every local client).
    `max_body`: nginx's client_max_body_size ("0" = no limit of its own: the app's caps are what is tested)."""
    folder = Path(tempfile.mkdtemp(prefix="nginx_"))
    folder.chmod(0o755)                  # workers running as nobody read and create temp files in here
    port = free_port(address)
    user = "user nobody nogroup;" if os.geteuid() == 0 else ""
    conf = folder / "nginx.conf"
    conf.write_text(CONFIG.format(user=user, dir=folder, max_body=max_body, upstream=upstream,
                                  address=address, port=port, source=source))
    log = open(folder / "stderr.log", "wb")
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(folder), "-g", "daemon off;"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proxy = NginxProxy(f"http://{address}:{port}", address, source, port, folder, proc)
    try:
        try:           # any answer (even a 502) means nginx listens
            wait_until_answers(proxy.url + "/", proc, timeout, folder / "stderr.log", ready=lambda r: True,
                               what="nginx")
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}{proxy.error_log()}") from None
        yield proxy
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)              # graceful: workers finish, the master exits
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
