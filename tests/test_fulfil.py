"""cutctx_adapters.fulfil / afulfil: summaries for a plan's requests, through any summarizer."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Callable, Sequence

import pytest

from cutctx import (
    Action,
    CompactionBudget,
    CompactionExecutor,
    CompactionPlan,
    Role,
    SummarizationRequest,
    Transcript,
    TranscriptTurn,
    TurnAction,
)
from cutctx_adapters import SummarizationFailed, afulfil, fulfil

SECRET = "do-not-leak-4711"
GROUPS = {"g1": (1, 2, 3), "g2": (5, 6), "g3": (8, 9, 10)}


def make_transcript(prefix: str = "t", texts: Sequence[str] | None = None) -> Transcript:
    """A system turn and ten user/assistant turns; positions 4 and 7 separate the groups."""
    texts = texts or [f"turn {n} says something" for n in range(11)]
    turns = [TranscriptTurn(f"{prefix}0", Role.SYSTEM, texts[0], 5)]
    for n in range(1, 11):
        role = Role.USER if n % 2 else Role.ASSISTANT
        turns.append(TranscriptTurn(f"{prefix}{n}", role, texts[n], 10))
    return Transcript(tuple(turns))


def make_plan(transcript: Transcript, groups: dict[str, tuple[int, ...]] | None = None,
              target: int = 3, prompt_id: str = "cutctx/summary@1") -> CompactionPlan:
    groups = GROUPS if groups is None else groups
    group_of = {position: group for group, positions in groups.items() for position in positions}
    actions = [
        TurnAction(turn.turn_id, Action.SUMMARIZE, summary_group=group_of[position])
        if position in group_of else TurnAction(turn.turn_id, Action.KEEP)
        for position, turn in enumerate(transcript.turns)
    ]
    requests = [SummarizationRequest(group, tuple(transcript.turns[p].turn_id for p in positions),
                                     target, prompt_id)
                for group, positions in groups.items()]
    kept = sum(t.token_estimate for p, t in enumerate(transcript.turns) if p not in group_of)
    return CompactionPlan(
        actions=tuple(actions), summarization_requests=tuple(requests),
        tokens_before=transcript.token_estimate(),
        tokens_after_estimate=kept + target * len(requests),
        policy_name="test", policy_version="1", transcript=transcript,
        budget=CompactionBudget(1000, 0),
    )


TRANSCRIPT = make_transcript()
PLAN = make_plan(TRANSCRIPT)


def naming(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
    return f"{request.group_id}:" + ",".join(turn.turn_id for turn in turns)


# --- fulfil --------------------------------------------------------------------------------

def test_fulfil_returns_one_summary_per_request_in_plan_order() -> None:
    seen: list[tuple[str, list[str]]] = []

    def recording(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        seen.append((request.group_id, [turn.turn_id for turn in turns]))
        return naming(request, turns)

    summaries = fulfil(PLAN, TRANSCRIPT, recording)
    assert list(summaries) == ["g1", "g2", "g3"]
    assert seen == [("g1", ["t1", "t2", "t3"]), ("g2", ["t5", "t6"]), ("g3", ["t8", "t9", "t10"])]
    assert summaries["g2"] == "g2:t5,t6"


def test_the_summarizer_gets_the_transcript_turns_themselves() -> None:
    got: list[TranscriptTurn] = []

    def recording(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        got.extend(turns)
        return "s"

    fulfil(PLAN, TRANSCRIPT, recording)
    assert got == [TRANSCRIPT.turns[p] for p in (1, 2, 3, 5, 6, 8, 9, 10)]


def test_fulfilled_summaries_apply() -> None:
    summaries = fulfil(PLAN, TRANSCRIPT, naming)
    view = CompactionExecutor().apply(TRANSCRIPT, PLAN, summaries)
    assert [turn.content for turn in view.transcript.turns if turn.turn_id.startswith("summary:")
            ] == [summaries["g1"], summaries["g2"], summaries["g3"]]


def test_summary_text_is_returned_as_given() -> None:
    text = "  Kept: spacing\nand lines.  "
    assert fulfil(PLAN, TRANSCRIPT, lambda r, t: text) == {"g1": text, "g2": text, "g3": text}


def test_a_plan_without_requests_needs_no_summarizer_call() -> None:
    plan = make_plan(TRANSCRIPT, groups={})

    def never(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        raise AssertionError("called")

    assert fulfil(plan, TRANSCRIPT, never) == {}
    assert asyncio.run(afulfil(plan, TRANSCRIPT, never)) == {}


# --- afulfil -------------------------------------------------------------------------------

def test_afulfil_runs_requests_concurrently() -> None:
    active = 0
    peak = 0

    async def slow(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return naming(request, turns)

    summaries = asyncio.run(afulfil(PLAN, TRANSCRIPT, slow))
    assert peak == 3
    assert summaries == fulfil(PLAN, TRANSCRIPT, naming)
    assert list(summaries) == ["g1", "g2", "g3"]


def test_afulfil_accepts_a_sync_summarizer() -> None:
    assert asyncio.run(afulfil(PLAN, TRANSCRIPT, naming)) == fulfil(PLAN, TRANSCRIPT, naming)


def test_an_async_summarizer_in_sync_fulfil_fails_without_a_dangling_coroutine() -> None:
    async def summarizer(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        return "never used"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(SummarizationFailed) as error:
            fulfil(PLAN, TRANSCRIPT, summarizer)
        gc.collect()
    assert error.value.details["cause"] == "AsyncSummarizerInSyncPath"
    assert error.value.details["group_id"] == "g1"
    assert not [w for w in caught if "never awaited" in str(w.message)]


# --- failures -------------------------------------------------------------------------------

def test_an_exception_is_wrapped_naming_the_group_and_keeping_the_cause() -> None:
    original = ValueError(SECRET)

    def failing_second(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        if request.group_id == "g2":
            raise original
        return "fine"

    with pytest.raises(SummarizationFailed) as caught:
        fulfil(PLAN, TRANSCRIPT, failing_second)
    error = caught.value
    assert error.__cause__ is original
    assert error.details == {"group_id": "g2", "turn_count": 2, "prompt_id": "cutctx/summary@1",
                             "cause": "ValueError"}
    assert SECRET not in str(error) and SECRET not in repr(error.to_dict())
    assert error.code == "SUMMARIZATION_FAILED"


@pytest.mark.parametrize("asynchronous", [True, False])
def test_afulfil_wraps_exceptions_too(asynchronous: bool) -> None:
    original = TimeoutError(SECRET)

    async def async_failing(request: SummarizationRequest,
                            turns: Sequence[TranscriptTurn]) -> str:
        await asyncio.sleep(0)
        raise original

    def sync_failing(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        raise original

    with pytest.raises(SummarizationFailed) as caught:
        asyncio.run(afulfil(PLAN, TRANSCRIPT, async_failing if asynchronous else sync_failing))
    assert caught.value.__cause__ is original
    assert caught.value.details["cause"] == "TimeoutError"
    assert caught.value.details["group_id"] in GROUPS
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("text", ["", " ", "\n\t"])
def test_empty_summaries_fail(text: object) -> None:
    async def async_text(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> object:
        return text

    with pytest.raises(SummarizationFailed) as caught:
        fulfil(PLAN, TRANSCRIPT, lambda r, t: text)  # type: ignore[arg-type, return-value]
    assert caught.value.details["cause"] == "EmptySummary"
    with pytest.raises(SummarizationFailed) as caught:
        asyncio.run(afulfil(PLAN, TRANSCRIPT, async_text))  # type: ignore[arg-type]
    assert caught.value.details["cause"] == "EmptySummary"


@pytest.mark.parametrize("text", [None, 0, 123, b"bytes", {"text": "a summary"}, ["a"]],
                         ids=["None", "zero", "int", "bytes", "dict", "list"])
def test_a_summary_that_is_not_text_is_named_as_such(text: object) -> None:
    """Not an empty summary: the wrong type, named (issue 39, item 23)."""
    async def async_text(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> object:
        return text

    def sync_text(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> object:
        return text

    runs: list[Callable[[], object]] = [
        lambda: fulfil(PLAN, TRANSCRIPT, sync_text),  # type: ignore[arg-type]
        lambda: asyncio.run(afulfil(PLAN, TRANSCRIPT, async_text))]  # type: ignore[arg-type]
    for run in runs:
        with pytest.raises(SummarizationFailed) as caught:
            run()
        kind = type(text).__name__
        assert caught.value.details["cause"] == "SummaryNotText"
        assert caught.value.details["returned"] == kind
        assert f"the summarizer returned {kind}, not str" in str(caught.value)


# --- the cache ------------------------------------------------------------------------------

class Counting:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        self.calls.append(request.group_id)
        return naming(request, turns)


def test_the_cache_saves_repeated_spans() -> None:
    cache: dict[str, str] = {}
    summarizer = Counting()
    first = fulfil(PLAN, TRANSCRIPT, summarizer, cache=cache)
    assert len(cache) == 3 and set(cache.values()) == set(first.values())
    again = fulfil(PLAN, TRANSCRIPT, summarizer, cache=cache)
    assert again == first
    assert summarizer.calls == ["g1", "g2", "g3"]
    asyncio.run(afulfil(PLAN, TRANSCRIPT, summarizer, cache=cache))
    assert len(summarizer.calls) == 3


def test_afulfil_fills_the_cache_for_fulfil() -> None:
    cache: dict[str, str] = {}
    summarizer = Counting()
    asyncio.run(afulfil(PLAN, TRANSCRIPT, summarizer, cache=cache))
    fulfil(PLAN, TRANSCRIPT, summarizer, cache=cache)
    assert len(summarizer.calls) == 3


def test_the_cache_is_keyed_by_content_not_by_ids() -> None:
    cache: dict[str, str] = {}
    summarizer = Counting()
    fulfil(PLAN, TRANSCRIPT, summarizer, cache=cache)
    renamed = make_transcript(prefix="other")
    fulfil(make_plan(renamed), renamed, summarizer, cache=cache)
    assert len(summarizer.calls) == 3  # same roles and texts: all hits


@pytest.mark.parametrize("change", ["text", "target", "prompt"])
def test_a_changed_span_misses_the_cache(change: str) -> None:
    cache: dict[str, str] = {}
    summarizer = Counting()
    fulfil(PLAN, TRANSCRIPT, summarizer, cache=cache)
    transcript = TRANSCRIPT
    plan_options: dict[str, object] = {}
    if change == "text":
        texts = [turn.content for turn in TRANSCRIPT.turns]
        texts[5] = "a different turn"
        transcript = make_transcript(texts=texts)
    elif change == "target":
        plan_options["target"] = 4
    else:
        plan_options["prompt_id"] = "team/other@1"
    fulfil(make_plan(transcript, **plan_options), transcript, summarizer,  # type: ignore[arg-type]
           cache=cache)
    expected = ["g2"] if change == "text" else ["g1", "g2", "g3"]
    assert summarizer.calls[3:] == expected


def test_failures_are_not_cached() -> None:
    cache: dict[str, str] = {}

    def failing_last(request: SummarizationRequest, turns: Sequence[TranscriptTurn]) -> str:
        if request.group_id == "g3":
            raise RuntimeError("boom")
        return "ok"

    with pytest.raises(SummarizationFailed):
        fulfil(PLAN, TRANSCRIPT, failing_last, cache=cache)
    assert len(cache) == 2 and set(cache.values()) == {"ok"}
