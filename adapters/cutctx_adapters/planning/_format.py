"""The one description of a provider format that sessions, wrappers and the CLI read.

Each format module (``openai.chat``, ``openai.responses``, ``anthropic.messages``) fills in a
``HistoryFormat``: where a request keeps its history, how to convert and render it, and what the
request spends outside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cutctx import TokenEstimator, ValidationError

from ..counting import estimator_for, prompt_budget
from ..history import Conversion, Growing, PinSpec

__all__ = ["DEFAULT_RESERVE", "HistoryFormat", "deferral", "deferred_budget", "given",
           "reply_allowance", "server_held"]

DEFAULT_RESERVE = 4096
"""Tokens kept for the reply where a request does not say (a session's ``reserve``)."""


def given(value: Any) -> Any:
    """``value``, or None for the SDKs' "not given" sentinels (``NOT_GIVEN``, ``omit``)."""
    return None if type(value).__name__ in ("NotGiven", "Omit") else value


def server_held(field: str) -> str:
    """The ``not_possible`` reason for a request whose ``field`` continues a history the
    provider holds: only the new items are sent, so there is nothing here to compact."""
    return (f"the request continues a server-held history ({field}); only the server can "
            "compact it")


def deferral(request: Mapping[str, Any], server_compaction: Callable[[Mapping[str, Any]],
             str | None], defer: bool) -> str | None:
    """Why a ``compact`` call defers to the provider's compaction (``server_compaction`` of
    the request fields it was given), or None; ``defer`` is the caller's ``defer_to_server``."""
    if not isinstance(defer, bool):
        raise ValidationError("defer_to_server must be True or False",
                              {"field": "defer_to_server"})
    return server_compaction(request) if defer else None


def deferred_budget(budget: Any, model: str | None, reserve: int = DEFAULT_RESERVE) -> Any:
    """The budget a ``compact`` call plans for when it defers to the provider's compaction:
    the model's own prompt budget (its window less ``reserve``) where that is known and larger
    than the caller's int ``budget``; the caller's budget otherwise."""
    if isinstance(budget, int) and not isinstance(budget, bool):
        own = prompt_budget(model, reserve)
        if own is not None and own > budget:
            return own
    return budget


def reply_allowance(*keys: str) -> Callable[[Mapping[str, Any]], int | None]:
    """A format's ``output_allowance``: the first of ``keys`` the request sets to an int."""

    def allowance(request: Mapping[str, Any]) -> int | None:
        for key in keys:
            value = given(request.get(key))
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    return allowance


@dataclass(frozen=True, slots=True)
class HistoryFormat:
    """How a request of one API carries its history: what a session needs from a format."""

    name: str
    list_key: str
    """The request field holding the list that grows by appending (messages, input)."""
    side_key: str | None
    """A request field converted with it (system, instructions), or None."""
    to_transcript: Callable[[Any, Any, TokenEstimator, PinSpec, bool], Conversion[Any]]
    """(items, side value, estimator, pin, keep_task) -> Conversion."""
    split: Callable[[Any], tuple[Any, list[dict[str, Any]]]]
    """Rendered output -> (side value, items)."""
    overhead: Callable[[Mapping[str, Any], TokenEstimator], int]
    """Prompt tokens outside the history: tool definitions, priming."""
    output_allowance: Callable[[Mapping[str, Any]], int | None]
    """Tokens the request reserves for the reply, if it says."""
    unsupported: Callable[[Mapping[str, Any]], str | None] = lambda request: None
    """Why a request's history cannot be compacted here (server-held history), or None."""
    estimator_for: Callable[[str | None], TokenEstimator] = estimator_for
    """The text estimator for a model (Anthropic: tiktoken, calibrated inside the format)."""
    planning: Callable[[Conversion[Any], TokenEstimator, int], Mapping[str, Any]] = (
        lambda conv, estimator, overhead: {})
    """Extra ``start`` keywords (stub estimator, ``stub_pad``, ``measure``), as the format's own
    ``plan`` passes them, so a session plans exactly like the functional API."""
    extend: Callable[[Conversion[Any] | Growing[Any], Any, int, TokenEstimator, PinSpec, bool],
                     Growing[Any] | None] | None = None
    """(previous conversion of ``items[:known]``, items, known, estimator, pin, keep_task) ->
    the conversion of all items as a ``Growing`` one, reading only the new ones; None when
    it cannot (then the whole list is converted). Formats without it are converted whole on
    every call."""
    read_item: Callable[[Any, int], Any] = lambda item, index: item
    """An item as the caller gave it, made ready for ``to_plain`` (Anthropic reads base64 data
    given as files, as its SDK does); the identity elsewhere."""
    safety_margin: float = 0.0
    """Share of the prompt budget a session's default trigger leaves free for estimate error:
    0 where counts are exact (Chat Completions), more where they are estimates."""
    server_compaction: Callable[[Mapping[str, Any]], str | None] = lambda request: None
    """Why a request leaves compaction to the provider (it turns the server's own compaction
    on), or None; a session then defers to it (``defer_to_server``)."""
    boundary_first: bool = False
    """The provider takes its compaction only as the first block of the conversation
    (Anthropic): what the latest one covers is never sent, whatever the budget."""
    check_request: Callable[[Mapping[str, Any], Growing[Any]], None] = (
        lambda request, conv: None)
    one_item_per_turn: bool = False
    """Every item sent renders one turn (Chat Completions, Responses): a session can then say
    which given items each comes from (``Prepared.sources``)."""
    """Refuse what the provider would refuse about the request as a whole, beyond its history
    (Anthropic: ``cache_control`` markers on tools count toward the four)."""
    protect: Callable[[Conversion[Any], int], Conversion[Any]] = lambda conv, allowance: conv
    """(conversion, the history's allowance) -> the conversion with the newest turns the
    provider wants untouched pinned, where they fit (Gemini: its current turn). A session
    passes the whole budget's allowance, so a compaction toward its target keeps them too."""
