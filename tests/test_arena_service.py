"""ArenaService on a real Store with real (espeak-ng) clips: battles, forged votes, replay, import/export."""
import hashlib
import json
import random
import threading

import pytest
import soundfile as sf

from arena.core import matchmaking
from arena.config import ArenaSettings
from arena.core.ratings import Rating
from arena.services.service import ArenaService, NoBattleAvailable, NotYet, SkipRefused, VoteRefused
from arena.tables.storage import AXES, vote_log_version
from arena.core.votes_io import VoteImportError
from eval_backend.store import Reply, Store
from tests.support.arena_fixtures import copy_data_dir, seed
from tests.support.integrity import fetch_all, heard, vote_after_listening  # noqa: F401  (the listening helpers)

MODELS = ("warm-model", "flat-model", "third-model")


class Clock:
    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("arena_seed")
    info = seed(root, MODELS, n_scripts=2)
    return root, info


@pytest.fixture
def make(seeded, tmp_path, copy_database, module_database_url):
    """A fresh copy of the seeded data dir (and database) and a service on it with a controllable clock."""
    def _make(**overrides):
        dest = tmp_path / f"data{len(list(tmp_path.iterdir()))}"
        copy_data_dir(seeded[0], dest)
        clock = Clock()
        store = Store(dest, database_url=copy_database(module_database_url))
        svc = ArenaService(store, ArenaSettings(**overrides), clock=clock, rng=random.Random(5))
        return svc, clock
    return _make




def test_battle_view_is_blind_and_sets_listening_floor(make):
    svc, clock = make()
    view = svc.serve_battle("s1", "10.0.0.1")
    public = " ".join(str(x) for x in (view.battle_id, view.context_text, view.user_audio, view.audio_a,
                                       view.audio_b))
    assert not any(m in public for m in MODELS)
    assert "sounds like a lot" not in public            # no transcript either
    for key in ("user", "A", "B"):
        assert view.min_listen_s[key] == min(3.0, sf.info(svc.battle_clip(view.battle_id, key)).duration)
    row = svc.store.query("SELECT * FROM arena_battles WHERE id=?", (view.battle_id,))[0]
    assert row["model_a"] in MODELS and row["model_b"] in MODELS and row["model_a"] != row["model_b"]
    assert row["ip_hash"] != "10.0.0.1" and "10.0.0.1" not in row["ip_hash"] and len(row["ip_hash"]) == 64
    assert len(view.battle_id) >= 32
    # both sides get served over many battles; sides are random
    firsts = set()
    for _ in range(30):
        v = svc.serve_battle("s1", "10.0.0.1")
        firsts.add(svc.store.query("SELECT model_a FROM arena_battles WHERE id=?", (v.battle_id,))[0][0])
    assert firsts == set(MODELS)


def test_vote_reveals_names_transcripts_and_ratings(make):
    svc, clock = make()
    view = svc.serve_battle("s1", "10.0.0.1")
    res = vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "A", said="A", sounded="B", reason="kinder")
    assert {res.a.model, res.b.model} <= set(MODELS) and res.winner == res.a.model
    assert res.a.transcript and res.b.transcript
    assert res.a.rating.mu > 25 > res.b.rating.mu
    assert res.a.votes == 1
    stored = svc.stored_ratings()
    assert stored[res.a.model] == res.a.rating
    assert set(svc.stored_ratings("said")) == {res.a.model, res.b.model}


def test_the_boards_recompute_when_a_vote_is_stored_and_only_then(make):
    """The arena board's cache (leaderboard and public API) keys on the vote log's version: it moves with a stored
    vote, not with a refused one, and the board is computed again only when it moved."""
    from leaderboard.arena_leaderboard_tab import BoardCache

    svc, clock = make()
    computed: list[str] = []
    cache = BoardCache(lambda axis: computed.append(axis) or len(computed), lambda: vote_log_version(svc.store),
                       min_age_s=0.0)
    assert vote_log_version(svc.store) == (0, None)
    assert cache.get("overall") == cache.get("overall") == 1
    view = svc.serve_battle("s1", "10.0.0.1")
    vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "A")
    count, last = vote_log_version(svc.store)
    assert count == 1 and last is not None
    with pytest.raises(VoteRefused):
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "B", listen=heard(view))   # the same battle again
    assert vote_log_version(svc.store) == (1, last)
    assert cache.get("overall") == cache.get("overall") == 2 and computed == ["overall", "overall"]


def test_skip_closes_the_battle_without_a_vote_a_refusal_or_an_open_slot(make):
    """Skip (issue 15): no vote row, no rating, no refusal row; the session's open-battle slot is freed; skipping
    again is a no-op; a later vote on the skipped battle is refused `skipped`; skips of others' or voted battles
    are refused without a refusal row (a skip is not a vote)."""
    svc, clock = make(session_open_battles=1)
    view = svc.serve_battle("s1", "10.0.0.1", ticket=svc.admit_battle("s1", "10.0.0.1"))
    with pytest.raises(Exception, match="open"):                  # the one open slot is taken
        svc.admit_battle("s1", "10.0.0.1")
    with pytest.raises(SkipRefused) as other:
        svc.skip_battle(view.battle_id, "s2")
    assert other.value.reason_code == "wrong_session"
    fetch_all(svc, view)
    svc.skip_battle(view.battle_id, "s1")
    svc.skip_battle(view.battle_id, "s1")                        # again: nothing changes
    row = svc.store.query("SELECT voted, skipped_at FROM arena_battles WHERE id=?", (view.battle_id,))[0]
    assert (row["voted"], row["skipped_at"]) == (0, clock.t)
    assert svc.store.query("SELECT COUNT(*) AS n FROM arena_votes")[0]["n"] == 0
    assert svc.store.query("SELECT COUNT(*) AS n FROM arena_ratings")[0]["n"] == 0
    assert svc.store.query("SELECT COUNT(*) AS n FROM arena_refused_votes")[0]["n"] == 0
    nxt = svc.serve_battle("s1", "10.0.0.1", ticket=svc.admit_battle("s1", "10.0.0.1"))   # the slot is free
    clock.t += view.total_min_listen_s + 0.5
    with pytest.raises(VoteRefused) as late:
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A", listen=heard(view))
    assert late.value.reason_code == "skipped"
    vote_after_listening(svc, clock, nxt, "s1", "10.0.0.1", "B")
    with pytest.raises(SkipRefused) as voted:
        svc.skip_battle(nxt.battle_id, "s1")
    assert voted.value.reason_code == "already_voted"
    with pytest.raises(SkipRefused):
        svc.skip_battle("no-such-battle", "s1")
    reasons = [r["reason"] for r in svc.store.query("SELECT reason FROM arena_refused_votes")]
    assert reasons == ["skipped"]                    # only the vote on the skipped battle; no skip is logged


def test_forged_votes_are_refused_and_logged(make):
    svc, clock = make(session_votes_per_minute=100, ip_votes_per_minute=100)
    codes = []

    def refused(code, *args, **kw):
        with pytest.raises(VoteRefused) as exc:
            svc.submit_vote(*args, **kw)
        assert exc.value.reason_code == code, exc.value.message
        assert exc.value.message
        codes.append(code)

    view = svc.serve_battle("s1", "10.0.0.1")
    refused("impossible", view.battle_id, "s1", "10.0.0.1", "A", listen=heard(view))    # audio never fetched
    fetch_all(svc, view)
    with pytest.raises(NotYet):                       # fetched, not yet heard: answered, not logged
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A")
    clock.t += view.total_min_listen_s + 1
    refused("unknown_battle", "forged-" + view.battle_id, "s1", "10.0.0.1", "A")
    refused("wrong_session", view.battle_id, "s2", "10.0.0.1", "A")
    refused("bad_value", view.battle_id, "s1", "10.0.0.1", "C")
    refused("bad_value", view.battle_id, "s1", "10.0.0.1", "A", said="both")
    row = svc.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (view.battle_id,))[0]
    refused("tampered", view.battle_id, "s1", "10.0.0.1", "A", claimed_models=(row[1], row[0]))
    ok = svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "B", claimed_models=(row[0], row[1]),
                         listen=heard(view))
    assert ok.winner == row[1]
    refused("already_voted", view.battle_id, "s1", "10.0.0.1", "A")
    late = svc.serve_battle("s1", "10.0.0.1")
    clock.t += svc.settings.battle_ttl_s + 1
    refused("expired", late.battle_id, "s1", "10.0.0.1", "A")
    # one vote counted, all refusals logged with their reasons
    assert len(svc.votes()) == 1
    logged = [r[0] for r in svc.store.query("SELECT reason FROM arena_refused_votes ORDER BY id")]
    assert logged == codes
    health = svc.integrity_health()
    assert health["accepted"] == 1 and health["refused"]["bad_value"] == 2 and health["alert"]


def test_rate_limits_per_session_and_per_ip(make):
    svc, clock = make(session_votes_per_minute=2, ip_votes_per_minute=3)
    for _ in range(2):
        v = svc.serve_battle("s1", "10.0.0.1")
        vote_after_listening(svc, clock, v, "s1", "10.0.0.1", "A")
    v = svc.serve_battle("s1", "10.0.0.1")
    fetch_all(svc, v)
    clock.t += v.total_min_listen_s + 0.5
    with pytest.raises(VoteRefused) as exc:
        svc.submit_vote(v.battle_id, "s1", "10.0.0.1", "A", listen=heard(v))
    assert exc.value.reason_code == "rate_limited" and "session" in exc.value.message
    # another session behind the same address: one more vote fits under the IP limit, then refused
    v2 = svc.serve_battle("s2", "10.0.0.1")
    vote_after_listening(svc, clock, v2, "s2", "10.0.0.1", "B")
    v3 = svc.serve_battle("s3", "10.0.0.1")
    fetch_all(svc, v3)
    clock.t += v3.total_min_listen_s + 0.5
    with pytest.raises(VoteRefused) as exc:
        svc.submit_vote(v3.battle_id, "s3", "10.0.0.1", "A", listen=heard(v3))
    assert exc.value.reason_code == "rate_limited" and "network address" in exc.value.message
    # a minute later the session may vote again (its battle is still valid)
    clock.t += 61
    assert svc.submit_vote(v.battle_id, "s1", "10.0.0.1", "A", listen=heard(v)).vote_id


def test_daily_cap_per_signed_in_user_across_sessions_and_addresses(make):
    svc, clock = make(user_votes_per_day=2)
    for k in range(2):
        v = svc.serve_battle(f"s{k}", f"10.0.1.{k}", user="alice")
        vote_after_listening(svc, clock, v, f"s{k}", f"10.0.1.{k}", "A", user="alice")
    v = svc.serve_battle("s9", "10.0.1.9", user="alice")
    fetch_all(svc, v)
    clock.t += v.total_min_listen_s + 1
    with pytest.raises(VoteRefused) as exc:
        svc.submit_vote(v.battle_id, "s9", "10.0.1.9", "A", listen=heard(v))   # the battle remembers who was served
    assert exc.value.reason_code == "rate_limited" and "account" in exc.value.message
    other = svc.serve_battle("s8", "10.0.1.8", user="bob")
    assert vote_after_listening(svc, clock, other, "s8", "10.0.1.8", "B", user="bob").vote_id
    clock.t += 86401
    v2 = svc.serve_battle("s9", "10.0.1.9", user="alice")
    assert vote_after_listening(svc, clock, v2, "s9", "10.0.1.9", "A", user="alice").vote_id


def test_concurrent_votes_on_one_battle_count_once(make):
    svc, clock = make()
    view = svc.serve_battle("s1", "10.0.0.1")
    fetch_all(svc, view)
    clock.t += view.total_min_listen_s + 1
    results = []

    def go(choice):
        try:
            results.append(svc.submit_vote(view.battle_id, "s1", "10.0.0.1", choice, listen=heard(view)).vote_id)
        except VoteRefused as exc:
            results.append(exc.reason_code)

    threads = [threading.Thread(target=go, args=(c,)) for c in ("A", "B", "tie", "A")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(str, results)) == ["1", "already_voted", "already_voted", "already_voted"]
    assert len(svc.votes()) == 1


def test_replay_equals_stored_ratings_exactly_on_every_axis(make):
    svc, clock = make(session_votes_per_minute=1000, ip_votes_per_minute=1000)
    rng = random.Random(11)
    for i in range(60):
        view = svc.serve_battle(f"s{i % 4}", f"10.0.0.{i % 3}")
        vote_after_listening(svc, clock, view, f"s{i % 4}", f"10.0.0.{i % 3}",
                             rng.choice(["A", "B", "tie", "both_bad", "A"]),
                             said=rng.choice(["A", "B", "tie", None]), sounded=rng.choice(["A", "B", None]))
    votes = svc.votes()
    assert [v.id for v in votes] == list(range(1, 61))
    assert any(v.dimension == "paralinguistic" for v in votes)    # the seeded scripts are 'sad'
    for axis in AXES:
        assert svc.replay_ratings(axis) == svc.stored_ratings(axis), axis      # exact float equality
    table = svc.ratings_table(rounds=50)
    assert {r["model"] for r in table} == set(MODELS)
    assert sum(r["votes"] for r in table) == 120
    assert all(r["provisional"] == (r["bt_votes"] < svc.settings.provisional_votes) for r in table)
    assert sum(r["both_bad"] for r in table) == 2 * sum(v.winner == "both_bad" for v in votes)
    assert all(r["bt_low"] <= r["bt"] <= r["bt_high"] for r in table if not r["provisional"])
    mats = svc.pairwise_matrices()
    assert sum(map(sum, mats["battles"])) == 2 * sum(v.winner != "both_bad" for v in votes)
    bias = svc.position_bias()
    assert bias.n == sum(v.slot in ("A", "B") for v in votes) and 0 <= bias.low <= bias.share <= bias.high <= 1
    hist = svc.rating_history(points=6)
    last = {h["model"]: Rating(h["mu"], h["sigma"]) for h in hist if h["vote_id"] == votes[-1].id}
    assert last == svc.replay_ratings()
    # the Bradley-Terry fit is cached per log state and refitted when a vote arrives
    before = svc.bradley_terry(rounds=30)
    assert svc.bradley_terry(rounds=30) is before
    view = svc.serve_battle("s0", "10.0.0.0")
    vote_after_listening(svc, clock, view, "s0", "10.0.0.0", "tie")
    assert svc.bradley_terry(rounds=30).battles == before.battles + 1
    assert len(svc.votes()) == 61 and svc.replay_ratings() == svc.stored_ratings()
    # the log is append-only
    with pytest.raises(svc.store.DatabaseError, match="append-only"):
        svc.store.connect().execute("UPDATE arena_votes SET winner='tie' WHERE id=1")
    with pytest.raises(svc.store.DatabaseError, match="append-only"):
        svc.store.connect().execute("DELETE FROM arena_votes WHERE id=1")


def test_paused_model_is_never_served(make):
    svc, clock = make()
    svc.pause_model("flat-model", "outage")
    for _ in range(25):
        v = svc.serve_battle("s1", "10.0.0.1")
        row = svc.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (v.battle_id,))[0]
        assert "flat-model" not in tuple(row)
    svc.pause_model("warm-model")
    with pytest.raises(NoBattleAvailable):
        svc.serve_battle("s1", "10.0.0.1")
    svc.unpause_model("warm-model")
    assert svc.serve_battle("s1", "10.0.0.1").battle_id


def test_replies_naming_a_model_or_vendor_are_never_served(make, seeded):
    svc, clock = make()
    store = svc.store
    clean = store.replies(model="warm-model")
    leaky = {"I'm Claude, made by Anthropic. That sounds hard.", "As flat model I would say: cheer up.",
             "Honestly, ChatGPT would agree with me."}
    # a fourth model whose replies all leak except one
    for k, r in enumerate(clean):
        text = sorted(leaky)[k % len(leaky)] if k else "That must have been a long month."
        store.put_reply(Reply(model="leaky-model", benchmark_hash=r.benchmark_hash, request_id=r.request_id,
                              task=r.task, item_id=r.item_id, variant=r.variant, status="ok", text=text,
                              transcript=text, audio_path=r.audio_path))
    served = set()
    for _ in range(60):
        v = svc.serve_battle("s1", "10.0.0.1")
        row = svc.store.query("SELECT * FROM arena_battles WHERE id=?", (v.battle_id,))[0]
        if "leaky-model" in (row["model_a"], row["model_b"]):
            served.add(row["request_id"])
    assert served == {clean[0].request_id}


def test_export_hides_identities_and_reimports_to_the_same_ratings(make, tmp_path, fresh_database_url):
    svc, clock = make()
    for i in range(12):
        v = svc.serve_battle("secret-session", "192.168.7.7", user="alice")
        vote_after_listening(svc, clock, v, "secret-session", "192.168.7.7", ["A", "B", "tie", "both_bad"][i % 4],
                             said="A" if i % 2 else None)
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"votes.{fmt}"
        text = svc.export_votes(fmt, out)
        assert out.read_text() == text
        for secret in ("secret-session", "192.168.7.7", "alice", "ip_hash", "session_id", svc.ip_hash("192.168.7.7")):
            assert secret not in text
        other = ArenaService(Store(tmp_path / f"fresh_{fmt}", database_url=fresh_database_url()), clock=Clock())
        assert other.import_votes(out) == 12
        assert other.replay_ratings() == svc.replay_ratings()
        assert other.stored_ratings("said") == svc.stored_ratings("said")
        assert {v.source for v in other.votes()} == {"import"}
    stamp = svc.vote_log_hash()
    assert stamp["votes"] == 12 and stamp["last_vote_id"] == 12
    assert stamp["sha256"] == hashlib.sha256((tmp_path / "votes.jsonl").read_bytes()).hexdigest()
    first = json.loads((tmp_path / "votes.jsonl").read_text().splitlines()[0])
    assert first["id"] == 1 and first["first_heard"] == "A"


def test_import_errors_list_line_numbers_and_import_nothing(tmp_path):
    svc = ArenaService(Store(tmp_path / "d"), clock=Clock())
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner,timestamp\n"
                   "x,y,x,2026-01-01T10:00:00Z\n"
                   "x,y,z,\n"                      # line 3: winner not in the battle
                   "x,x,tie,\n"                    # line 4: same model twice
                   "y,x,both_bad,yesterday\n"      # line 5: bad timestamp
                   "x,y,tie,1767261600\n")
    with pytest.raises(VoteImportError) as exc:
        svc.import_votes(bad)
    assert [line for line, _ in exc.value.errors] == [3, 4, 5]
    assert "line 3" in str(exc.value) and "'z'" in str(exc.value) and "nothing imported" in str(exc.value)
    assert svc.votes() == [] and svc.stored_ratings() == {}
    jl = tmp_path / "bad.jsonl"
    jl.write_text('{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": "x"\n\n[1, 2]\n')
    with pytest.raises(VoteImportError) as exc:
        svc.import_votes(jl)
    assert [line for line, _ in exc.value.errors] == [2, 4]
    nohead = tmp_path / "nohead.csv"
    nohead.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(VoteImportError, match="header lacks model_a, model_b, winner"):
        svc.import_votes(nohead)
    good = tmp_path / "good.csv"
    good.write_text("model_a,model_b,winner,timestamp\nx,y,x,2026-01-01T10:00:00Z\ny,x,tie,\n")
    assert svc.import_votes(good) == 2
    votes = svc.votes()
    assert votes[0].created_at == 1767261600.0 and votes[1].winner == "tie"


def test_matchmaking_prefers_new_models_and_bridges_and_skips_paused():
    ratings = {"a": Rating(30, 1.0), "b": Rating(29, 1.0), "c": Rating(25, 25 / 3), "d": Rating(20, 1.0)}
    votes = {"a": 500, "b": 500, "c": 0, "d": 400}
    edges = [("a", "b"), ("b", "d")]
    pairs = [("a", "b"), ("a", "c"), ("b", "d"), ("a", "d")]
    w = matchmaking.pair_weights(pairs, ratings, votes, edges)
    assert w[("a", "c")] > w[("a", "b")] > w[("a", "d")]   # new+uncertain > close > lopsided
    # a pair bridging two components of the comparison graph is boosted
    w2 = matchmaking.pair_weights([("a", "b"), ("a", "d")], ratings, votes, [("a", "b")])
    w3 = matchmaking.pair_weights([("a", "b"), ("a", "d")], ratings, votes, [("a", "b"), ("a", "d")])
    assert w2[("a", "d")] / w2[("a", "b")] > 4 * w3[("a", "d")] / w3[("a", "b")]
    rng = random.Random(0)
    picks = [matchmaking.choose_pair(pairs, ratings, votes, edges, rng, paused={"c"}) for _ in range(200)]
    assert all("c" not in p for p in picks)
    assert matchmaking.choose_pair([("a", "c")], ratings, votes, edges, rng, paused={"c"}) is None


def test_identity_screen_and_salt(tmp_path, monkeypatch):
    from arena.config import DEFAULT_IDENTITY_PATTERNS, SALT_ENV, load_salt
    from arena.services.service import IdentityScreen
    screen = IdentityScreen(DEFAULT_IDENTITY_PATTERNS, ["Qwen2.5-Omni-7B", "warm-model"])
    for text in ("I am Claude.", "As an OpenAI model", "GPT-4o here", "built by Google", "warm model says hi",
                 "qwen2.5 omni 7b is my name", "I'm an AI assistant called Nova"):
        assert screen.leaks(text), text
    for text in ("That sounds really hard. I'm here for you.", "You sound tired; want to talk?", None, ""):
        assert not screen.leaks(text), text
    monkeypatch.delenv(SALT_ENV, raising=False)
    first = load_salt(tmp_path)
    assert len(first) == 64 and load_salt(tmp_path) == first
    assert (tmp_path / "arena_salt").stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv(SALT_ENV, "from-env")
    assert load_salt(tmp_path) == "from-env"


def test_listening_rule_fetches_seen_by_any_replica_and_first_reply_heard_stored(make):
    """Clip lengths are stored with the battle and fetches in the database, so a vote on one replica sees a
    fetch another served; the reply the voter started first is stored and drives the position-bias figure,
    slot A's share is reported apart; early votes are answered, never logged."""
    svc, clock = make(session_votes_per_minute=100, ip_votes_per_minute=100)
    replica = ArenaService(Store(svc.store.root, database_url=svc.store.database_url), svc.settings, clock=clock)
    first_reply = {}
    for i in range(8):
        view = svc.serve_battle("s1", "10.0.0.1")
        assert view.listening["clips"].keys() == {"user", "A", "B"}
        assert {c: v["need_s"] for c, v in view.listening["clips"].items()} == view.min_listen_s
        fetch_all(replica, view)                       # the audio came from the other replica
        with pytest.raises(NotYet) as early:
            svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A",
                            listen={"played_s": {"user": 0.1}, "order": ["user"]})
        assert early.value.remaining_s.keys() == {"A", "B"} | ({"user"} if view.min_listen_s["user"] > 0.2 else set())
        clock.t += max(view.min_listen_s.values()) / svc.settings.max_playback_rate + 0.01   # all at once, 2x
        order = ["B", "user", "A"] if i % 2 else ["user", "A", "B"]
        first_reply[view.battle_id] = "B" if i % 2 else "A"
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A" if i < 6 else "B",
                        listen={"played_s": dict(view.min_listen_s), "order": order})
    stored = dict(svc.store.query("SELECT battle_id, first_heard FROM arena_votes"))
    assert stored == first_reply
    assert svc.store.query("SELECT COUNT(*) FROM arena_refused_votes")[0][0] == 0
    # slot A won 6 of 8 decisive votes; the reply heard first: where the chosen slot was the first started
    slot, first = svc.slot_bias(), svc.position_bias()
    assert (slot.k, slot.n) == (6, 8)
    assert (first.k, first.n) == (sum(first_reply[b] == s for b, s in
                                      svc.store.query("SELECT battle_id, slot FROM arena_votes")), 8)
    # a battle whose clips were never recorded (served by an older version) cannot take a vote
    view = svc.serve_battle("s1", "10.0.0.1")
    with svc.store.transaction() as conn:
        conn.execute("DELETE FROM arena_battle_clips WHERE battle_id=?", (view.battle_id,))
    with pytest.raises(VoteRefused) as exc:
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A", listen=heard(view))
    assert exc.value.reason_code == "expired" and "new battle" in exc.value.message
