"""Which votes should not count, and why: voter reliability (gold checks, agreement with the consensus) and the
periodic sweeps (cadence, one-model bias, rings). Pure functions over plain facts; arena/services/vote_flags.py loads the
facts, runs `flag_votes` and keeps its result in the database.

    flags = flag_votes(votes, gold, Rules())    # -> [Flag(vote_id, kind, weight, subject, detail)]

A flag sets a vote's weight: 0 (excluded from the public fit) or `DOWN_WEIGHT` (counts half); a vote with several
flags takes the smallest weight. Flagged votes stay in the log; the operator can reverse a flag (per kind and
subject: a voter or an address), which then stays reversed.

The rules and the sources of their thresholds (docs in arena/README.md, "Votes that count"):

* **Reliability from gold battles** (arena/services/gold.py). A gold check is passed when the real reply wins, failed when
  the known-bad clip wins or the voter calls it a tie, neutral on "both bad" (the real reply may be bad too).
  Excluded: at least 2 failed checks and no more passed than failed. Down-weighted: any failed check while fewer
  than 3 passes per failure. Why: an honest listener who misclicks 5% of the time is ever excluded with
  probability 1.45% however many checks they meet (5.6% at a 10% misclick rate; failing two of the first four is
  the likeliest way, and later passes lift it), while a voter clicking at random (pass 1/4, fail 1/2 of the time)
  is excluded after 3 decisive checks with probability 74%. One failure alone never excludes: anybody can
  misclick once.
* **Agreement with the consensus.** On a pair where the other voters' decisive votes (at least
  `consensus_min_votes`) favour one model at least `consensus_share` (70%) of the time, a vote for that model
  agrees. With at least `consensus_min_clear` (20) such votes, a voter agreeing less than half the time is
  down-weighted (no better than a coin), less than 30% of the time excluded (votes against what everyone hears).
  For an honest voter who agrees 70% of the time, the chance of under half in 20 votes is 1.7%, of under 30%
  0.004%; a coin-flipper is under half 41% of the time. Pairs that are not clear carry no weight at all: honest
  people disagree about close pairs.
* **Cadence** (TTS Arena V2's sweep): more than 30 votes in an hour or more than 100 in three hours from one
  voter (every vote in such a stretch; over sliding windows the hourly rule already caps three hours at 90, so
  the second one only matters with a raised hourly limit), or a vote less than 2 s after the same voter's previous one (TTS Arena
  V2 flags 1-3 s; our listening rule already needs >= 1.5 s of each clip at the fastest playback, so 2 s is at
  the floor of what a person can do). Excluded.
* **One-model bias** (TTS Arena V2: 80% or more for one model): a voter with at least 10 decisive votes in
  battles of one model who picks it in >= 80% of them, where the other voters pick it far less often (a
  one-sided binomial test against their rate, p < 0.001, so the fans of a model everyone prefers are not
  flagged). The voter's votes in that model's battles are excluded.
* **Rings** (many sessions behind one address): an address hash with votes from at least 5 voters in one UTC
  day whose pooled votes show the one-model bias above. The address's votes in that model's battles that day are
  excluded. A busy shared address (a campus, a proxy) with varied votes is never flagged: the sessions alone do
  not make a ring, their agreement on one model does.

Why sweep at all: LMArena found that 10% bad votes can move a model five ranks, so the health view also warns
when more than `max_excluded_share` of the accepted votes are excluded (an attack, or a rule gone wrong).
"""
from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from scipy.stats import binom

DOWN_WEIGHT = 0.5
KINDS = ("gold", "consensus", "cadence", "one_model", "ring")


@dataclass(frozen=True)
class Rules:
    # gold checks
    gold_exclude_fails: int = 2             # excluded from this many failures, when passes <= fails
    gold_clear_ratio: int = 3               # a failure is forgiven (full weight) once passes >= 3 x fails
    # agreement with the consensus
    consensus_min_votes: int = 10           # other voters' decisive votes on a pair before it can be clear
    consensus_share: float = 0.7            # ... and the share one side must get
    consensus_min_clear: int = 20           # a voter's votes on clear pairs before agreement is judged
    consensus_down: float = 0.5             # agreement below this: down-weighted
    consensus_exclude: float = 0.3          # below this: excluded
    # cadence (TTS Arena V2)
    per_hour: int = 30
    per_3_hours: int = 100
    min_gap_s: float = 2.0
    # one-model bias (TTS Arena V2: 80%) and rings
    bias_share: float = 0.8
    bias_min_votes: int = 10
    bias_p: float = 0.001
    ring_min_voters: int = 5
    # the health view's warning (LMArena: 10% bad votes can move a model five ranks)
    max_excluded_share: float = 0.10


@dataclass(frozen=True)
class VoteFacts:
    """An attributable vote (voted live in a battle the server served): who, from where, when, what."""
    id: int
    voter: str              # "user:<name>" or "session:<hash>" (arena/services/vote_flags.py: voter_subject)
    address: str            # "address:<ip hash prefix>"
    created_at: float
    model_a: str
    model_b: str
    slot: str               # A | B | tie | both_bad

    @functools.cached_property
    def winner(self) -> str | None:
        return self.model_a if self.slot == "A" else self.model_b if self.slot == "B" else None


@dataclass(frozen=True)
class GoldRecord:
    passes: int = 0
    fails: int = 0


@dataclass(frozen=True)
class Flag:
    vote_id: int
    kind: str               # one of KINDS
    weight: float           # 0 or DOWN_WEIGHT
    subject: str            # what the operator reverses: a voter, or an address
    detail: str             # why, in words


def short_hash(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


# ---------------------------------------------------------------- reliability
def gold_weight(rec: GoldRecord, rules: Rules = Rules()) -> tuple[float, str] | None:
    """(weight, why) from a voter's gold checks; None when they do not lower it."""
    checks = f"failed {rec.fails} of {rec.passes + rec.fails} gold checks"
    if rec.fails >= rules.gold_exclude_fails and rec.passes <= rec.fails:
        return 0.0, checks
    if rec.fails and rec.passes < rules.gold_clear_ratio * rec.fails:
        return DOWN_WEIGHT, checks
    return None


def clear_pairs_agreement(votes: list[VoteFacts], rules: Rules = Rules()) -> dict[str, tuple[int, int]]:
    """{voter: (votes agreeing with the others' clear preference, votes on clear pairs)}. The consensus on a pair
    is the other voters' share (the voter's own votes taken out), so nobody agrees with themselves."""
    total: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])    # sorted pair -> [wins of first, n]
    own: dict[str, dict[tuple[str, str], list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for v in votes:
        if v.slot not in ("A", "B"):
            continue
        lo, hi = sorted((v.model_a, v.model_b))
        pair = (lo, hi)
        first_won = int(v.winner == pair[0])
        for tally in (total[pair], own[v.voter][pair]):
            tally[0] += first_won
            tally[1] += 1
    out = {}
    for voter, pairs in own.items():
        agree = n = 0
        for pair, (mine_first, mine_n) in pairs.items():
            others_first, others_n = total[pair][0] - mine_first, total[pair][1] - mine_n
            if others_n < rules.consensus_min_votes:
                continue
            share = others_first / others_n
            if share >= rules.consensus_share:
                agree, n = agree + mine_first, n + mine_n
            elif share <= 1 - rules.consensus_share:
                agree, n = agree + (mine_n - mine_first), n + mine_n
        out[voter] = (agree, n)
    return out


def consensus_weight(agree: int, n: int, rules: Rules = Rules()) -> tuple[float, str] | None:
    if n < rules.consensus_min_clear:
        return None
    why = f"agreed with the other voters on {agree} of {n} votes on clearly decided pairs"
    if agree / n < rules.consensus_exclude:
        return 0.0, why
    if agree / n < rules.consensus_down:
        return DOWN_WEIGHT, why
    return None


def reliability_flags(votes: list[VoteFacts], gold: dict[str, GoldRecord], rules: Rules = Rules()) -> list[Flag]:
    by_voter: dict[str, list[int]] = defaultdict(list)
    for v in votes:
        by_voter[v.voter].append(v.id)
    agreement = clear_pairs_agreement(votes, rules)
    out = []
    for voter, ids in by_voter.items():
        for kind, verdict in (("gold", gold_weight(gold.get(voter, GoldRecord()), rules)),
                              ("consensus", consensus_weight(*agreement.get(voter, (0, 0)), rules))):
            if verdict is not None:
                out += [Flag(i, kind, verdict[0], voter, verdict[1]) for i in ids]
    return out


# ---------------------------------------------------------------- sweeps
def _dense_windows(times: list[float], width_s: float, limit: int) -> set[int]:
    """Indices (into sorted `times`) of every event inside some window of `width_s` holding more than `limit`."""
    hit: set[int] = set()
    lo = 0
    for hi in range(len(times)):
        while times[hi] - times[lo] >= width_s:
            lo += 1
        if hi - lo + 1 > limit:
            hit.update(range(lo, hi + 1))
    return hit


def cadence_flags(votes: list[VoteFacts], rules: Rules = Rules()) -> list[Flag]:
    by_voter: dict[str, list[VoteFacts]] = defaultdict(list)
    for v in votes:
        by_voter[v.voter].append(v)
    out = []
    for voter, vs in by_voter.items():
        vs.sort(key=lambda v: (v.created_at, v.id))
        times = [v.created_at for v in vs]
        why: dict[int, str] = {}
        for k in _dense_windows(times, 3 * 3600.0, rules.per_3_hours):
            why[k] = f"more than {rules.per_3_hours} votes in 3 hours"
        for k in _dense_windows(times, 3600.0, rules.per_hour):
            why[k] = f"more than {rules.per_hour} votes in an hour"
        for k in range(1, len(vs)):
            if times[k] - times[k - 1] < rules.min_gap_s:
                why[k] = f"{times[k] - times[k - 1]:.1f} s after the previous vote (under {rules.min_gap_s:g} s)"
        out += [Flag(vs[k].id, "cadence", 0.0, voter, text) for k, text in sorted(why.items())]
    return out


def _biased(votes: Iterable[VoteFacts], all_counts: dict[str, list[int]], rules: Rules
            ) -> dict[str, tuple[int, int, float]]:
    """{model: (picked, decisive votes in its battles, others' pick rate)} for the models these votes favour beyond
    `bias_share` and, by a one-sided binomial test, beyond what everyone else does."""
    mine: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in votes:
        if v.slot in ("A", "B"):
            for m in (v.model_a, v.model_b):
                mine[m][0] += int(v.winner == m)
                mine[m][1] += 1
    out = {}
    for model, (k, n) in mine.items():
        if n < rules.bias_min_votes or k / n < rules.bias_share:
            continue
        ok, on = all_counts[model][0] - k, all_counts[model][1] - n
        rate = (ok + 1) / (on + 2)                 # Laplace: a model nobody else has judged sits at one half
        if binom.sf(k - 1, n, rate) < rules.bias_p:
            out[model] = (k, n, rate)
    return out


def _model_counts(votes: list[VoteFacts]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in votes:
        if v.slot in ("A", "B"):
            for m in (v.model_a, v.model_b):
                counts[m][0] += int(v.winner == m)
                counts[m][1] += 1
    return counts


def one_model_flags(votes: list[VoteFacts], rules: Rules = Rules(), counts: dict | None = None) -> list[Flag]:
    counts = _model_counts(votes) if counts is None else counts
    by_voter: dict[str, list[VoteFacts]] = defaultdict(list)
    for v in votes:
        by_voter[v.voter].append(v)
    out = []
    for voter, vs in by_voter.items():
        for model, (k, n, rate) in _biased(vs, counts, rules).items():
            why = f"picked {model} in {k} of {n} decisive votes in its battles (others: {rate:.0%})"
            out += [Flag(v.id, "one_model", 0.0, voter, why) for v in vs if model in (v.model_a, v.model_b)]
    return out


def utc_day(day: int) -> str:
    return datetime.fromtimestamp(day * 86400, timezone.utc).strftime("%Y-%m-%d")


def ring_flags(votes: list[VoteFacts], rules: Rules = Rules(), counts: dict | None = None) -> list[Flag]:
    counts = _model_counts(votes) if counts is None else counts
    groups: dict[tuple[str, int], list[VoteFacts]] = defaultdict(list)
    for v in votes:
        groups[(v.address, int(v.created_at // 86400))].append(v)      # per UTC day
    out = []
    for (address, day_index), vs in groups.items():
        voters = {v.voter for v in vs}
        if len(voters) < rules.ring_min_voters:
            continue
        day = utc_day(day_index)
        for model, (k, n, rate) in _biased(vs, counts, rules).items():
            why = (f"{len(voters)} voters behind one address on {day} picked {model} in {k} of {n} decisive votes "
                   f"(others: {rate:.0%})")
            out += [Flag(v.id, "ring", 0.0, address, why) for v in vs if model in (v.model_a, v.model_b)]
    return out


def flag_votes(votes: list[VoteFacts], gold: dict[str, GoldRecord], rules: Rules = Rules()) -> list[Flag]:
    """Every flag the rules raise on these votes (a vote may carry several, one per kind)."""
    counts = _model_counts(votes)
    return (reliability_flags(votes, gold, rules) + cadence_flags(votes, rules)
            + one_model_flags(votes, rules, counts) + ring_flags(votes, rules, counts))


def weights(flags: Iterable[Flag]) -> dict[int, float]:
    """{vote id: weight} for the flagged votes (the smallest weight of a vote's flags); unflagged votes weigh 1."""
    out: dict[int, float] = {}
    for f in flags:
        out[f.vote_id] = min(out.get(f.vote_id, 1.0), f.weight)
    return out
