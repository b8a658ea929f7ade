"""The pure parts of the edge: client-address resolution (space_shell/client_address.py) and the in-memory
limits (arena/core/abuse.py), with a controlled clock. The same code against a real nginx: tests/test_edge.py."""
from __future__ import annotations

import threading

import pytest

from arena.core.abuse import BattleGate, Refused, TokenBuckets, address_key
from space_shell.client_address import ProxyTrust, from_request, parse_ip, parse_networks


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


# ------------------------------------------------------------------ client addresses

def test_no_trusted_proxy_means_the_peer_whatever_the_header():
    trust = ProxyTrust()
    assert trust.resolve("127.0.0.1", ["6.6.6.6"]) == "127.0.0.1"
    assert trust.resolve("203.0.113.9", ["6.6.6.6, 7.7.7.7"]) == "203.0.113.9"


def test_right_most_untrusted_hop_is_the_client():
    trust = ProxyTrust.from_spec("10.0.0.0/8, 192.0.2.1")
    # the client forged "6.6.6.6"; the edge proxy appended the real client, an inner proxy the edge proxy
    assert trust.resolve("10.1.2.3", ["6.6.6.6, 198.51.100.7, 10.9.9.9"]) == "198.51.100.7"
    assert trust.resolve("192.0.2.1", ["198.51.100.7"]) == "198.51.100.7"
    # repeated headers count as one list, in order
    assert trust.resolve("10.1.2.3", ["6.6.6.6", "198.51.100.7"]) == "198.51.100.7"
    # an untrusted peer's header is never read
    assert trust.resolve("198.51.100.8", ["10.0.0.1"]) == "198.51.100.8"
    # a trusted peer with no header: the peer itself
    assert trust.resolve("10.1.2.3", []) == "10.1.2.3"
    # every hop trusted: the left-most one
    assert trust.resolve("10.1.2.3", ["10.0.0.5, 10.0.0.6"]) == "10.0.0.5"


def test_hop_formats_and_garbage():
    trust = ProxyTrust.from_spec("10.0.0.1, ::1")
    assert trust.resolve("10.0.0.1", ["198.51.100.7:5555"]) == "198.51.100.7"
    assert trust.resolve("::1", ["[2001:db8::5]:443"]) == "2001:db8::5"
    assert trust.resolve("::ffff:10.0.0.1", ["2001:db8::6"]) == "2001:db8::6"      # v4-mapped peer
    # "unknown" written by a trusted proxy: stop at the last address we know (the safe side)
    assert trust.resolve("10.0.0.1", ["6.6.6.6, unknown"]) == "10.0.0.1"
    assert parse_ip("not an ip") is None and parse_ip("") is None
    # a header stuffed with thousands of hops: only the right-most are read
    assert trust.resolve("10.0.0.1", [", ".join(["10.0.0.1"] * 5000 + ["198.51.100.7"])]) == "198.51.100.7"


def test_bad_trusted_proxy_setting_is_refused_by_name():
    with pytest.raises(ValueError, match="EMPATHY_ARENA_TRUSTED_PROXIES.*'10.0.0.300'"):
        parse_networks("10.0.0.0/8, 10.0.0.300")


def test_from_request_reads_starlette_and_gradio_shapes(monkeypatch):
    from starlette.requests import Request

    scope = {"type": "http", "method": "GET", "path": "/", "client": ("10.0.0.1", 1234),
             "headers": [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"198.51.100.7")]}
    trust = ProxyTrust.from_spec("10.0.0.1")
    assert from_request(Request(scope), trust) == "198.51.100.7"
    monkeypatch.setenv("EMPATHY_ARENA_TRUSTED_PROXIES", "")
    assert from_request(Request(scope)) == "10.0.0.1"
    monkeypatch.setenv("EMPATHY_ARENA_TRUSTED_PROXIES", "10.0.0.0/8")
    assert from_request(Request(scope)) == "198.51.100.7"

    import gradio as gr
    assert from_request(gr.Request(Request(scope)), trust) == "198.51.100.7"
    # a gr.Request restored from a pickle holds plain dicts
    restored = gr.Request(headers={"X-Forwarded-For": "198.51.100.9"}, client={"host": "10.0.0.1", "port": 1})
    assert from_request(restored, trust) == "198.51.100.9"
    assert from_request(None) is None


# ------------------------------------------------------------------ limits

def test_token_bucket_bursts_then_refills_at_the_rate():
    clock = Clock()
    b = TokenBuckets(60, clock)
    assert [b.take("k") for _ in range(60)] == [0.0] * 60
    wait = b.take("k")
    assert wait == pytest.approx(1.0)           # 60 a minute: one a second
    assert b.take("other") == 0.0               # keys are independent
    clock.t += 1.0
    assert b.take("k") == 0.0 and b.take("k") > 0
    clock.t += 3600
    assert sum(b.take("k") == 0.0 for _ in range(100)) == 60   # refills up to the burst, not beyond


def test_token_bucket_table_is_bounded():
    b = TokenBuckets(1, Clock(), max_keys=100)
    for k in range(1000):
        b.take(str(k))
    assert len(b._items) == 100


def test_ipv6_clients_share_their_64():
    assert address_key("2001:db8:1:2::5") == address_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::5") != address_key("2001:db8:1:2::5")
    assert address_key("198.51.100.7") == "198.51.100.7"
    assert address_key(None) == "-"


def gate(clock, **kw):
    args = {"ip_battles_per_minute": 100, "session_open_battles": 3, "ip_vote_attempts_per_minute": 100,
            "battle_ttl_s": 1800.0}
    return BattleGate(**{**args, **kw}, clock=clock)


def test_open_battles_cap_counts_reservations_and_frees_on_vote_release_and_expiry():
    clock = Clock()
    g = gate(clock)
    tickets = [g.admit_battle("s", "1.2.3.4") for _ in range(3)]
    with pytest.raises(Refused) as exc:
        g.admit_battle("s", "1.2.3.4")
    assert exc.value.reason_code == "too_many_open" and exc.value.retry_after_s > 0
    g.opened(tickets[0], "b0", clock.t + 1800)
    g.release(tickets[1])                       # not served (no battle available): the slot comes back
    t = g.admit_battle("s", "1.2.3.4")
    g.opened(t, "b1", clock.t + 1800)
    with pytest.raises(Refused):
        g.admit_battle("s", "1.2.3.4")
    g.closed("s", "b0")                         # voted
    g.admit_battle("s", "1.2.3.4")
    assert g.open_count("s") == 3
    clock.t += 1801                             # everything expired
    assert g.open_count("s") == 0
    g.admit_battle("s", "1.2.3.4")
    assert g.refused["open_battles"] == 2


def test_concurrent_admissions_of_one_session_cannot_exceed_the_cap():
    g = gate(Clock(), session_open_battles=5)
    admitted, refused = [], []
    barrier = threading.Barrier(20)

    def one():
        barrier.wait()
        try:
            admitted.append(g.admit_battle("s", "1.2.3.4"))
        except Refused:
            refused.append(1)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(admitted) == 5 and len(refused) == 15


def test_battle_and_vote_rates_per_address():
    clock = Clock()
    g = gate(clock, ip_battles_per_minute=2, ip_vote_attempts_per_minute=3, session_open_battles=100)
    g.admit_battle("s1", "1.2.3.4")
    g.admit_battle("s2", "1.2.3.4")            # a new session does not reset the address's bucket
    with pytest.raises(Refused) as exc:
        g.admit_battle("s3", "1.2.3.4")
    assert exc.value.reason_code == "rate_limited" and exc.value.retry_after_s == pytest.approx(30)
    g.admit_battle("s3", "1.2.3.5")
    for _ in range(3):
        g.admit_vote("1.2.3.4")
    with pytest.raises(Refused):
        g.admit_vote("1.2.3.4")
    for _ in range(3):                        # skips have their own budget: the spent votes do not touch it
        g.admit_skip("1.2.3.4")
    with pytest.raises(Refused) as skip:
        g.admit_skip("1.2.3.4")
    assert "skips" in skip.value.message and g.early_refusal("skip", "1.2.3.4") is not None
    assert g.refused == {"battle_rate": 1, "open_battles": 0, "vote_rate": 1, "skip_rate": 2,   # the early one too
                         "challenge_rate": 0}


def test_a_battle_that_cannot_be_served_gives_its_slot_back(tmp_path):
    from arena.config import ArenaSettings
    from arena.services.service import ArenaService, NoBattleAvailable
    from eval_backend.store import Store

    svc = ArenaService(Store(tmp_path), ArenaSettings(session_open_battles=1), benchmarks=[])
    session = svc.new_session()
    assert svc.session_valid(session) and not svc.session_valid(session + "x") and not svc.session_valid(None)
    for _ in range(3):                        # no models yet: refused each time, never held open
        ticket = svc.admit_battle(session, "1.2.3.4")
        with pytest.raises(NoBattleAvailable):
            svc.serve_battle(session, "1.2.3.4", ticket=ticket)
    assert svc.gate.open_count(session) == 0


def test_early_refusal_peeks_without_taking():
    clock = Clock()
    g = gate(clock, ip_battles_per_minute=2, session_open_battles=100)
    assert g.early_refusal("battle", "1.2.3.4") is None          # unknown address: budget left
    g.admit_battle("s", "1.2.3.4")
    assert g.early_refusal("battle", "1.2.3.4") is None          # one token left, and peeking keeps it
    assert g.early_refusal("battle", "1.2.3.4") is None
    g.admit_battle("s", "1.2.3.4")
    refusal = g.early_refusal("battle", "1.2.3.4")
    assert refusal.reason_code == "rate_limited" and refusal.retry_after_s == pytest.approx(30)
    assert g.early_refusal("vote", "1.2.3.4") is None            # votes have their own budget
    clock.t += 30
    assert g.early_refusal("battle", "1.2.3.4") is None
