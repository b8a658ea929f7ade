"""The About tab: what is measured and how, how ratings work, and the data policy (static text)."""
from __future__ import annotations

import gradio as gr

from arena.config import ArenaSettings, listen_from_env
from eval_backend.baselines.engine import contestants_sentence
from eval_backend.inert import md
from eval_backend.safety import crisis_notice_markdown
from eval_backend.scoring.judge_env import describe
from eval_backend.scoring.judges import JudgeCache, judge_settings
from space_shell.tab_contract import PageLoad, TabHandles

from .results_table import load_result_docs

ABOUT = """
## The default contestants

Unless the operator adds real models, the contestants you hear are offline stand-ins, not speech language
models: each one transcribes the clip with a small speech recogniser (Whisper tiny.en), fills a fixed reply
template and speaks it with a speech synthesiser, so that the arena works with no network and the metrics can be
checked on models whose behaviour we know. __CONTESTANTS__

## What is measured

**Benchmarks.** Empathy Arena asks a spoken-language model the questions of two benchmark families and scores
the replies it gets back (every request is a real HTTP call to an OpenAI-compatible endpoint, or a line of an
uploaded predictions file):

- **EchoMind-style levels.** *Level 1, understanding*: transcribe the user's speech (WER after a documented
  normaliser) and answer multiple-choice questions about *how* it was said (voice, emotion, pace, environment).
  *Level 2, reasoning*: multiple-choice questions that need both the words and the voice. *Level 3,
  conversation*: reply to the user; the words are compared with reference replies (BLEU, ROUGE-L, METEOR,
  BERTScore) and rated by an LLM judge (C1 context fit, C2 naturalness, C3 colloquialism, C4 relevance to the
  speech information), and the reply's audio is rated for vocal empathy (VES, an audio-capable judge),
  quality (DNSMOS) and prosody (does the delivery change the way the user's state calls for).
- **AEQ-Bench-style context and tone groups**: the same utterance under different contexts or tones; a judge
  rates coherence, supportiveness, naturalness, delivery, whether the replies differ the way the variants call
  for, and whether they use both the voice and the context.
- **EmpathyEval-style selection**: choose the fitting reply among spoken candidates (final score with a group
  bonus).

**Leaderboard boards.** LB1 = mean of understanding and reasoning accuracy; LB2 = vocal empathy (VES, rated by
an audio-capable judge; without one LB2 is *not computed: no VES judge configured*: DNSMOS OVRL measures speech
quality, a different quantity, and keeps its own column); LB3 = (C1 + C4) / 2; AEQ metrics are shown apart;
Selection = the EmpathyEval final score. A board's column only ever holds that board's metric. Every headline
carries a 95% bootstrap interval over items (LB1 resamples the understanding and the reasoning questions apart;
LB3 resamples each reply's C1 and C4 together), or says why it has none. A cell that could not be computed (no
judge configured, failed replies, a missing model) says why instead of showing a number. Models are ranked only
against models measured on the same benchmark version. Each result records its manifest: benchmark hash, scorer
version (git commit), judge models and prompt hashes, package versions. The EchoMind paper's own figures
(*reported, not reproduced here*, converted to our units) were measured on the paper's benchmark, not ours: they
appear in a section of their own below the table, for context, and are not ranked with the models measured here.

## How ratings work

In the **arena** you hear the user's clip and two anonymous replies to it (which model is A is drawn at random;
the reply you start first is recorded with the vote), listen to all of them, and vote
A, B, tie or both bad; the names are revealed after the vote. Optional separate votes for *what was said* and *how it sounded*.
A battle you cannot judge can be **skipped**: a skip is no vote, counts in no rating, and brings the next battle.

- **Listening rule** (one rule, applied by the page and by the server to the same numbers): a vote counts once you
  have heard __LISTEN__. The page measures what actually played, so
  playing clips together or faster (up to __RATE__×) counts honestly, and shows how long is left ("Vote in 4 s").
  An early vote is answered "not yet" and is not counted as abuse; the server refuses as impossible only a vote on
  audio it never sent, or more listening than the time since it sent the audio allows at __RATE__× speed.

- **Bradley–Terry** is the headline: fitted on all votes at once (order-free; ties count half a win each,
  both-bad votes are left out) with 95% bootstrap intervals. The board is ranked and sorted by it: rank = 1 + the
  number of models whose lower bound is above this model's upper bound, so models whose intervals overlap share a
  rank. The scale's reference is the mean of the ranked models (= 1000; 400 points = 10:1 odds). The score is the
  fit on all the ranked models' votes with each other, and its interval always contains it.
- **Vote floor.** A model with fewer than __FLOOR__ rated votes on an axis (wins, losses, ties) is *provisional*: listed
  below the ranked models with "too few votes" instead of a score and an interval, and left out of the other
  models' fit and of the reference, so a newcomer's first votes do not move anyone else's interval. Established
  arenas use floors of 30 to 300 votes; the default, 30, is the low end, chosen because a young arena has a few hundred votes in
  all (at 300 nobody would be ranked) and because an interval from 30 even battles (about ±125 points) can already
  separate a clearly better model.
- **TrueSkill** (μ 25, σ 25/3, draw probability 0.10) is updated with every vote and picks the next battles
  (matchmaking). It depends on the order of the votes, so the vote log is append-only and replayed in a fixed
  order (vote id). Its μ, σ and conservative μ − 3σ are under *All columns* on the board and in the API; they do
  not order the board.
- **Position bias**: the share of decisive votes won by the reply the voter started first (recorded by the page),
  with its interval, and apart from it the share won by slot A; if either is far from ½, listeners favour an order
  or a slot rather than a reply.
- The Benchmark tab compares both worlds: the rank correlation between arena score and a benchmark board,
  and which automatic measures prefer the reply people voted for (per axis, from stored scores). How often
  the scorer's pairwise judge (asked in both orders) agrees with the human vote costs judge calls, so only
  the operator computes it (`python -m leaderboard agreement --judge-config FILE`).

## Data policy

**Stored** (in the Space's private database): the votes (battle, models, choice, the reply heard first,
optional reason, time); a *salted hash* of the voter's IP address (never the address itself), used for rate
limits; the session id; and, when you sign in with Hugging Face, your user name (for per-account limits and
submissions). Submissions store the form (display name, organisation, link, licence, endpoint URL, model id)
and the model's replies and scores.

**Exported publicly**: the vote log without session ids, IP hashes or user names (models, outcome, slot
heard first, attribute, request id, time), the leaderboards, and the results files with their manifests.

**API keys** given with a submission are encrypted with a key held in the operator's environment, kept only in
the private store, never shown, logged or exported, and deleted when the evaluation job ends (a retry asks for
the key again), unless the submitter let the model battle live: then it is kept until the model leaves live battles.

Failed evaluations are listed with their reason on the Submit tab; nothing is silently dropped.

## Safety

Every reply the arena can play is screened when it is stored, not when you vote: our own transcript of its audio
(Whisper) and the words the model says it spoke go through the safety screen (abuse, hate, sexual content,
self-harm, violence, personal data). A reply that is flagged, or could not be screened, is never played in a
battle, shown in Browse or on a model page; it waits for the operator, who releases it or keeps it hidden (every
decision is logged). Voters' reasons are screened after the vote and left out of the public vote log and data
releases unless the screen clears them (the vote itself always counts); submitted model names and organisations
are screened before a submission is queued. The offline screen misses things (sarcasm, coded language, other
languages): it is a first line, not a guarantee. If a recording or a reply reads as someone in crisis, the page
shows the help notice below; it never blocks you or diagnoses anything.
"""


def about_text(floor: int | None = None, settings=None) -> str:
    """ABOUT with the arena's vote floor (ArenaSettings.provisional_votes) and listening rule filled in
    (`settings`: the arena's ArenaSettings; default: the defaults and the environment's listening rule)."""
    import math

    settings = settings or ArenaSettings(**listen_from_env())
    floor = settings.provisional_votes if floor is None else floor
    s = settings.min_listen_s
    listen = ("each clip in full" if math.isinf(s) else "nothing (this arena asks for no listening time)" if s == 0
              else f"the first {s:g} s of each clip (all of a shorter clip)")
    return (ABOUT.replace("__FLOOR__", str(floor)).replace("__LISTEN__", listen)
            .replace("__RATE__", f"{settings.max_playback_rate:g}")
            .replace("__CONTESTANTS__", contestants_sentence()))


JUDGE_COLUMNS = ["model", "benchmark", "text judge", "audio judge", "judge failures", "stopped by the budget"]


def judge_rows(store) -> list[list]:
    """Which judge scored which rows: per model, its newest results document's judge and judge failures."""
    docs = load_result_docs(store.root / "results")
    newest: dict[tuple, dict] = {}
    for d in docs:
        man = d["manifest"]
        key = (man.get("model"), (man.get("benchmark") or {}).get("hash"))
        if key not in newest or man.get("timestamp", "") > newest[key]["manifest"].get("timestamp", ""):
            newest[key] = d
    out = []
    for (model, h), d in sorted(newest.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        judge = d["manifest"].get("judge") or {}
        names = [(judge.get(k) or {}).get("model") if isinstance(judge.get(k), dict) else None
                 for k in ("text_judge", "audio_judge")]
        fails = budget = 0
        for e in d["metrics"].values():
            if e.get("family") in ("judge_text", "judge_audio", "aeq"):
                fails += int((e.get("failures") or {}).get("judge_failure", 0))
                budget += int((e.get("failures") or {}).get("judge_budget", 0))
        out.append([str(model), str(h)[:12], names[0] or "none", names[1] or "none", fails, budget])
    return out


def judge_status(ctx) -> str:
    """The Space's judges and today's budget use (a visible note when the budget stops calls)."""
    error = getattr(ctx, "judge_error", None)
    if error:
        return f"⚠️ The judge settings were rejected at start-up, so nothing is judged: {error}"
    cfg = getattr(getattr(ctx, "submissions", None), "judge_config", None)
    lines = [describe(cfg)]
    if cfg:
        cache_path = ctx.store.root / "cache" / "judge_cache.sqlite3"
        try:
            text, audio = judge_settings({"judge_config": cfg})
            cache = JudgeCache(cache_path) if cache_path.exists() else None
        except (OSError, ValueError):
            text = audio = cache = None
        for js in (text, audio):
            if js is None or not js.calls_per_day:
                continue
            used = cache.calls_today(js.model) if cache else 0
            note = (" — **the budget is reached: judge calls are stopped until 00:00 UTC**; judge metrics of rows "
                    "scored meanwhile count `judge_budget` failures" if used >= js.calls_per_day else "")
            lines.append(f"Judge `{js.model}`: {used} of {js.calls_per_day} calls used today (UTC){note}.")
    return "\n\n".join(lines)


def help_notice() -> str:
    """The crisis notice with its help resources (eval_backend.safety; the operator may replace the list with
    EMPATHY_ARENA_HELP_RESOURCES). Always on this tab; a broken list is named, never a blank section."""
    try:
        return crisis_notice_markdown()
    except ValueError as exc:
        return f"⚠️ The help resources cannot be shown: {md(str(exc))}. Please call your local emergency number."


def build_about_tab(ctx=None) -> TabHandles:
    arena = getattr(ctx, "arena", None)
    gr.Markdown(about_text(arena.settings.provisional_votes if arena is not None else None,
                           arena.settings if arena is not None else None), elem_id="about-text")
    gr.Markdown("## If you need someone to talk to\n\n" + help_notice(), elem_id="about-help")
    if ctx is None or getattr(ctx, "store", None) is None:
        return TabHandles()
    gr.Markdown("## Judges", elem_id="about-judges-head")
    status = gr.Markdown(elem_id="about-judges")
    table = gr.Dataframe(headers=JUDGE_COLUMNS, interactive=False, elem_id="about-judge-rows", wrap=True)

    def render():
        return judge_status(ctx), judge_rows(ctx.store) or [["—", "—", "no results yet", "—", 0, 0]]
    return TabHandles(loads=(PageLoad(render, None, [status, table]),))
