"""Issue 22, point 1, on the embedded default itself: the demo a fresh Space builds (its size, EMPATHY_ARENA_DEMO_SIZE,
compact by default) run through every contestant the default models file declares (what the bootstrap runs and live
mode serves), then 200 battles served as the arena serves them: no battle plays one clip twice, at most 2% have the
same words on both sides, and every pair of contestants meets.

Real parts: the demo built by `python -m eval_backend demo build`, the baseline server on loopback, the runner CLI,
the arena service measuring every clip as heard. Only the spoken tasks are run: they are what battles play.
"""
from __future__ import annotations

import itertools

import pytest

from arena.core import distinct
from arena.services.service import ArenaService
from eval_backend import config
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.store import Store
from eval_backend.tasks import SPOKEN_TASKS
from tests.support.battle_sample import sample_battles
from tests.support.demo_pipeline import run_demo_pipeline

MODULE_DATABASE_FIXTURES = ("default_run",)


def default_contestants() -> tuple[str, ...]:
    return tuple(s.name for s in config.load_models(None).values() if s.baseline)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, module_database_url):
    run = run_demo_pipeline(tmp_path_factory.mktemp("default_run"), database_url=module_database_url,
                            demo_args=("--size", config.demo_size()), tasks=",".join(SPOKEN_TASKS),
                            models=default_contestants())
    for code, out in zip(run.returncodes, run.outputs):
        assert code == 0, out
    return run


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.store_incidental("the clips and words of the battles served: the serving's queries are the arena tests'")
def test_two_hundred_battles_on_the_embedded_default(default_run):
    contestants = default_contestants()
    assert len(contestants) >= 4
    bench = load_benchmark("demo", default_run.data)
    assert bench.version.endswith(f"+{config.demo_size()}") or config.demo_size() == "full", bench.version
    sample = sample_battles(ArenaService(Store(default_run.data)))
    print(f"\n200 battles on {bench.version} with {', '.join(contestants)}: {sample.identical} identical clips, "
          f"{sample.same_words} with the same words; pairs {sample.pairs}; met {dict(sample.met)}")
    assert sample.pairs["servable"] > 0 and sample.pairs["left_out"][distinct.NOT_MEASURED] == 0
    assert sample.identical == 0
    assert sample.same_words <= 200 * 0.02
    assert set(sample.met) == {frozenset(p) for p in itertools.combinations(contestants, 2)}
