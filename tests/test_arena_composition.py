"""ArenaService is composed of parts that receive their state (issue 27), not assembled from mixins: no part reaches
for state another file creates on a shared `self`."""
from __future__ import annotations

import ast
import inspect
import random
import textwrap

from arena.services.battles import Battles
from arena.services.candidates import CandidateIndex
from arena.services.rating_queries import RatingQueries
from arena.services.service import ArenaService
from arena.services.vote_log import VoteLog
from eval_backend.store import Store

PARTS = (CandidateIndex, Battles, VoteLog, RatingQueries)


def _self_attributes(cls: type) -> tuple[set[str], set[str]]:
    """(attributes the class's methods read on self, attributes they set or define) from its source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    read, made = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (made if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    made |= {name for name, _ in inspect.getmembers(cls)}
    return read, made


def test_the_service_is_no_subclass_of_its_parts():
    assert ArenaService.__mro__ == (ArenaService, object)
    assert not any(issubclass(ArenaService, part) for part in PARTS)


def test_each_part_uses_only_state_it_was_given_or_made():
    for part in PARTS:
        read, made = _self_attributes(part)
        assert read <= made, f"{part.__name__} reads {sorted(read - made)} on self without making it"
        assert "__init__" in vars(part), f"{part.__name__} receives no state"


def test_the_service_holds_its_parts_and_they_share_one_state(tmp_path):
    store = Store(tmp_path)
    svc = ArenaService(store, benchmarks=[], rng=random.Random(0))
    assert isinstance(svc.index, CandidateIndex) and isinstance(svc.battles, Battles)
    assert isinstance(svc.vote_log, VoteLog) and isinstance(svc.ratings, RatingQueries)
    assert svc.battles.index is svc.index and svc.battles.vote_log is svc.vote_log is svc.ratings.vote_log
    assert svc.battles.store is svc.index.store is svc.vote_log.store is svc.ratings.store is store
    # the service's public methods are the parts' own (bound to them), so nothing is copied or duplicated
    assert svc.submit_vote.__self__ is svc.battles and svc.board.__self__ is svc.ratings
    assert svc.export_votes.__self__ is svc.vote_log and svc.can_serve.__self__ is svc.index
