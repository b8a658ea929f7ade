"""The address policy: internal addresses in every spelling, allowlists, and the connection-time check
(DNS rebinding, redirects) against real loopback servers."""
from __future__ import annotations

import asyncio
import socket
import threading

import pytest
import uvicorn
from aiohttp.abc import AbstractResolver
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from eval_backend.clients.failures import CallFailure
from eval_backend.clients.openai_chat import call
from eval_backend.config import ModelSpec
from eval_backend.submissions.netguard import AddressPolicy, guarded_session, parse_ip
from eval_backend.tasks import Request
from tests.support.fault_server import FaultServer, free_port

INTERNAL = [
    "http://127.0.0.1/v1", "http://127.0.0.1./v1", "http://127.0.0.1../v1", "http://2130706433/",
    "http://0x7f000001/", "http://0X7F000001/", "http://0177.0.0.1/", "http://017700000001/", "http://127.1/",
    "http://127.000.000.001/", "http://0x7f.0x0.0x0.0x1/", "http://0/", "http://0.0.0.0:8080/", "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::]/",
    "http://[::127.0.0.1]/", "http://[2002:7f00:1::]/", "http://[64:ff9b::a9fe:a9fe]/", "http://10.0.0.1/",
    "http://10.255.255.254:443/v1", "http://192.168.1.1:8080/", "http://172.16.0.5/", "http://172.31.255.255/",
    "http://169.254.169.254/latest/meta-data", "http://0xA9FEA9FE/", "http://2852039166/",
    "http://169.254.170.2/v2/credentials", "http://[fd00:ec2::254]/", "http://[FD00:EC2::254]/",
    "http://[::ffff:169.254.169.254]/", "http://100.100.100.200/", "http://metadata.google.internal/",
    "http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1", "http://metadata/", "http://instance-data/",
    "http://localhost/", "http://LOCALHOST:8000/", "http://api.localhost/", "http://printer.local/",
    "http://224.0.0.1/", "http://[ff02::1]/", "http://100.64.0.1/", "http://[fe80::1%25eth0]/",
    "http://[fc00::1]/", "http://240.0.0.1/", "http://255.255.255.255/", "http://198.18.0.1/",
    "http://%31%32%37.0.0.1/", "https://192.0.0.192/opc/v2/",
]


@pytest.mark.parametrize("url", INTERNAL)
def test_internal_addresses_are_refused_in_every_spelling(url):
    reason = AddressPolicy.from_strings([], resolve=lambda h, p: ["127.0.0.1"]).check_url(url)
    assert reason, url


def test_numeric_spellings_mean_what_getaddrinfo_means():
    for spelling in ("2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.0.1.", "[::ffff:7f00:1]"):
        ip = parse_ip(spelling)
        assert ip is not None and (ip.ipv4_mapped if getattr(ip, "ipv4_mapped", None) else ip).compressed == "127.0.0.1"
    assert parse_ip("example.com") is None and parse_ip("cafe") is None


def test_public_addresses_pass_and_any_internal_answer_refuses_a_name():
    p = AddressPolicy.from_strings([], resolve=lambda h, port: ["93.184.216.34", "2606:2800:220:1::1"])
    assert p.check_url("https://1.1.1.1/v1") is None
    assert p.check_url("https://api.example.com/v1") is None
    mixed = AddressPolicy.from_strings([], resolve=lambda h, port: ["93.184.216.34", "10.1.2.3"])
    assert "10.1.2.3" in mixed.check_url("https://api.example.com/v1")     # ANY address refuses

    def nxdomain(h, port):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert "does not resolve" in AddressPolicy.from_strings([], resolve=nxdomain).check_url("https://nx.example/v1")


def test_allowlist_by_address_port_and_network_but_never_metadata():
    p = AddressPolicy.from_strings(["127.0.0.1:8765"])
    assert p.check_url("http://127.0.0.1:8765/v1") is None
    assert p.check_url("http://127.0.0.1:8766/v1")                     # another port of the same host
    assert p.check_url("http://2130706433:8765/v1") is None            # same address, other spelling
    assert p.check_url("http://[::1]:8765/v1")                         # not the allowlisted address
    wide = AddressPolicy.from_strings(["169.254.0.0/16", "10.0.0.0/8"])
    assert wide.check_url("http://10.2.3.4/v1") is None
    assert "metadata" in wide.check_url("http://169.254.169.254/")
    with pytest.raises(ValueError):
        AddressPolicy.from_strings(["not-an-address"])


# --- connection time -----------------------------------------------------------------------

class FixedResolver(AbstractResolver):
    """A DNS answer chosen by the test (the rebinding attacker's second answer)."""

    def __init__(self, address: str):
        self.address = address
        self.calls = 0

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.calls += 1
        return [{"hostname": host, "host": self.address, "port": port, "family": socket.AF_INET, "proto": 0,
                 "flags": socket.AI_NUMERICHOST}]

    async def close(self):
        pass


REQ = Request(id="conversation/x/-", task="conversation", item_id="x", variant="-", system="", text="hello",
              audios=(), wants_audio=False)


def _call(policy: AddressPolicy, base_url: str, resolver=None):
    spec = ModelSpec(name="m", base_url=base_url, model="fault", timeout_s=5)

    async def go():
        async with guarded_session(policy, 2, resolver=resolver) as session:
            return await call(session, spec, REQ, [])
    return asyncio.run(go())


def test_dns_rebinding_is_refused_when_connecting():
    with FaultServer() as srv:
        validation = AddressPolicy.from_strings([], resolve=lambda h, p: ["93.184.216.34"])
        url = f"http://rebind.example:{srv.port}/v1"
        assert validation.check_url(url) is None                        # first answer: public
        resolver = FixedResolver("127.0.0.1")                           # second answer: loopback
        with pytest.raises(CallFailure) as err:
            _call(validation, url, resolver)
        assert "address policy" in err.value.message and resolver.calls >= 1
        assert sum(srv.counts.values()) == 0                            # nothing reached the server
        allowed = AddressPolicy.from_strings([f"127.0.0.1:{srv.port}"])
        answer = _call(allowed, url, FixedResolver("127.0.0.1"))        # the operator's allowlist still works
        assert answer.text and sum(srv.counts.values()) == 1


class Redirector:
    def __init__(self, target: str):
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/chat/completions", lambda r: RedirectResponse(target, 307),
                                      methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        while not self.server.started:
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(5)


def test_redirect_to_an_internal_address_is_not_followed():
    # Redirects are never followed (a submitted endpoint redirecting to the app's own file route read the
    # salt back): even a target the policy allows is not reached; the class says why.
    with FaultServer() as inner:
        target = f"http://127.0.0.1:{inner.port}/v1/chat/completions"
        with Redirector(target) as outer:
            for allow in ([f"127.0.0.1:{outer.port}"], [f"127.0.0.1:{outer.port}", f"127.0.0.1:{inner.port}"]):
                with pytest.raises(CallFailure) as err:
                    _call(AddressPolicy.from_strings(allow), f"http://127.0.0.1:{outer.port}/v1")
                assert err.value.error_class == "redirect" and "307" in err.value.message
                assert target not in err.value.message
            assert sum(inner.counts.values()) == 0
