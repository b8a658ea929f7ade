"""The demo's sizes: which of demo_content's scripts and groups a build speaks (kept apart from demo.py, which
pulls in the audio code, so that settings can check a size name at start-up)."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DemoSize:
    """Which of demo_content's scripts and groups a build speaks. `attributes`: one script per listed target
    attribute (the first script the seed gives it), in script order. Groups: the first n. None: all of them."""
    attributes: tuple[str, ...] | None
    context_groups: int | None
    tone_groups: int | None

    def choose(self, assigned: list[str]) -> list[tuple[int, str]]:
        """(script index, target attribute) of the scripts this size speaks, given each script's attribute."""
        every = list(enumerate(assigned))
        if self.attributes is None:
            return every
        first = {a: i for i, a in reversed(every)}
        missing = [a for a in self.attributes if a not in first]
        if missing:
            raise ValueError(f"no demo script has the target attribute(s) {missing}")
        return sorted((first[a], a) for a in self.attributes)


# why two sizes: every contestant on every request, run, scored (DNSMOS, Distill-MOS, Whisper per reply clip) and
# screened costs ~6 CPU-s per spoken request on 2 cores, so the full demo's 208 spoken requests take ~14 min to
# bootstrap (docs/benchmarks.md). The Space's embedded default is the compact size (sixteen cues across speaker,
# pace, volume, emotion, non-verbal sounds and background; 4 + 4 groups: 70 spoken requests), which a fresh Space
# bootstraps in under 6 min; `demo build` and the tests' known-groups runs use the full one, whose 48 scripts give
# those tests their power. EMPATHY_ARENA_DEMO_SIZE picks the Space's (eval_backend/config.py: demo_size).
DEMO_SIZES = {
    "full": DemoSize(None, None, None),
    "compact": DemoSize(("male", "female", "child", "elderly", "fast", "slow", "shout", "whisper", "sobbing",
                         "happy", "sad", "angry", "laughter", "sigh", "rain", "crowd chatter"), 4, 4),
}
