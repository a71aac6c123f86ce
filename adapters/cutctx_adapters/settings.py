"""One frozen, typed settings value for sessions, wrapped clients, ``compact`` and agent hooks.

``CompactionSettings`` holds every setting as a typed keyword with its default, and is checked
once, when it is made: a misspelt name, ``trigger`` at or below ``target``, a fraction outside
(0, 1], a class where an instance belongs or a callback that cannot be called is refused there,
naming the setting, never on the first call.

>>> settings = CompactionSettings(window=32_000, target=0.4)
>>> settings.replace(keep_recent=6).keep_recent, settings.trigger
(6, None)
>>> CompactionSettings(windw=6000)
Traceback (most recent call last):
cutctx.errors.ValidationError: unknown setting 'windw' (did you mean 'window'?)
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, fields
from typing import Any, Generic, Literal, Self, TypedDict, TypeVar, Unpack, overload

from cutctx import CompactionBudget, CompactionPolicy, TokenEstimator, ValidationError

from .counting import chosen_estimator, prompt_budget
from .fulfil import AnySummarizer, SummaryCache
from .history import Conversion, ObservationRule, PinSpec
from .planning import (
    DigestStyle,
    GiveWay,
    Job,
    OnSummaryError,
    PolicyOptions,
    deferral,
    deferred_budget,
    resolve_budget,
    start,
)
from .reports import CallReport
from .stores import Store

__all__ = [
    "MIN_TOKENS",
    "CompactKeywords",
    "CompactionSettings",
    "Counter",
    "Goal",
    "PlanKeywords",
    "PlanningKeywords",
    "PrefixCheck",
    "ReportCallback",
    "Setting",
    "SettingsKeywords",
    "budget_or_window",
    "call_budget",
    "check_default_trigger",
    "fraction_or_tokens",
    "goal_of",
    "planning_settings",
    "settings_of",
    "started",
]

Counter = Literal["estimate", "provider"]
"""Where a wrapped client's counts come from near its limits (``counter``)."""
PrefixCheck = Literal["identity", "content"]
"""How a session tells that a call's history extends the last one it read (``check_prefix``)."""
ReportCallback = Callable[[CallReport], object]
"""``on_compaction`` / ``on_call``: called with a call's ``CallReport``."""


class PlanningKeywords(TypedDict, total=False):
    """The settings ``compact``/``acompact``/``plan`` of every format take as keywords."""

    window: int | None
    windows: Mapping[str, int] | None
    reserve: int
    policy: CompactionPolicy | None
    summarizer: AnySummarizer | None
    keep_recent: int
    keep_recent_results: int
    pin: PinSpec
    on_summary_error: OnSummaryError
    estimator: TokenEstimator | None
    keep_task: bool
    keep_user_turns: bool
    digest_tokens: int
    max_result_tokens: int | None
    max_result_share: float
    strict: bool
    defer_to_server: bool
    observations: ObservationRule
    digest: DigestStyle
    give_way: GiveWay


class SettingsKeywords(PlanningKeywords, total=False):
    """Every setting, as keywords: what sessions and wrapped clients take."""

    trigger: float | int | None
    target: float | int
    counter: Counter
    sticky: bool
    max_views: int
    max_view_bytes: int
    summary_cache_size: int
    store: Store | None
    summary_timeout: float
    check_prefix: PrefixCheck
    on_compaction: ReportCallback | None
    on_call: ReportCallback | None


class PlanKeywords(PlanningKeywords, total=False):
    """What every format's ``plan`` takes besides the history: the request's model, budget,
    tools, the role a summary speaks in, and the settings (a value, with keywords over it)."""

    model: str | None
    budget: int | CompactionBudget | None
    tools: Sequence[Any] | None
    summary_role: str
    settings: CompactionSettings | None


class CompactKeywords(PlanKeywords, total=False):
    """What every format's ``compact``/``acompact`` takes: ``plan``'s keywords and a cache of
    summaries already paid for."""

    summary_cache: SummaryCache | None


_HINTS = {
    "budget": "a session or wrapped client sizes itself from the model's context window: pass "
              "window= (and reserve= for the reply)",
    "max_tokens": "the reply's allowance is reserve= (a request's own max_tokens overrides it)",
    "model": "the model comes from each request (or CompactionSession's model argument)",
    "summary_role": "summary_role is an option of compact/plan, not of sessions",
}
"""Why a name people guess is not a setting, and what to pass instead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings(PolicyOptions):
    """How compaction sizes, triggers, plans and reports; shared by every entry point.

    Sizing: the prompt budget is ``window`` (else ``windows`` by model-name prefix, else the
    built-in table) less the reply allowance (a request's ``max_tokens``, else ``reserve``).
    Hysteresis (sessions): nothing happens below ``trigger`` (None: the budget less the format's
    margin for estimate error); over it, compaction goes down to ``target``; each a fraction of
    the budget in (0, 1] or a token count. Planning: ``policy`` (else the default chain),
    ``summarizer``, ``keep_recent``, ``pin`` and the chain's options (``PolicyOptions``' fields,
    which are these settings' own).
    Reporting: ``on_compaction(report)`` when a call's request was changed (compacted,
    recompacted) or could not be (not possible); ``on_call(report)`` on every call.
    """

    window: int | None = None
    windows: Mapping[str, int] | None = None
    trigger: float | int | None = None
    target: float | int = 0.5
    reserve: int = 4096
    policy: CompactionPolicy | None = None
    summarizer: AnySummarizer | None = None
    keep_recent: int = 4
    pin: PinSpec = None
    estimator: TokenEstimator | None = None
    counter: Counter = "estimate"
    """Wrapped clients: ``"provider"`` asks the provider's count endpoint
    (``messages.count_tokens``, ``responses.input_tokens.count``) for a request whose estimate
    is within 10% of the trigger or the budget, and corrects the model's estimates by it;
    ``"estimate"`` (the default) never does. A count that fails or is refused (Bedrock has no
    endpoint) leaves the estimate; Chat Completions, which has none, is counted exactly anyway."""
    sticky: bool = True
    max_views: int = 64
    """Compacted views a session keeps (least recently used go first); as many histories are
    kept as read, so that each of the conversations one session serves reads only what it
    appends."""
    max_view_bytes: int = 64 * 1024 * 1024
    """Bytes of text the views may hold; the histories read, and the session's remembered token
    counts, as many again each (the estimators a process shares hold no text)."""
    summary_cache_size: int = 1024
    store: Store | None = None
    """Where summaries are kept and claimed: by default a session's own ``MemoryStore``;
    share a ``SQLiteStore`` or ``RedisStore`` across processes and machines."""
    summary_timeout: float = 120.0
    """Seconds to wait for a summary another session (or worker) is producing."""
    check_prefix: PrefixCheck = "content"
    """How a call's history is told to extend the last one read. ``"content"`` (the default):
    each mapping already read (a dict or any other ``Mapping``) is compared with what was read,
    so an edit made in place (a redaction, say) is seen; this costs a comparison per item,
    growing with the history. ``"identity"``: items that are the very objects read last time
    are taken as unchanged, so a call costs only what it appends, flat in the history's length
    (replace an item, ``history[i] = {...}``, rather than edit it in place).

    What each mode takes as unchanged (the same words as the README): by content, a mapping
    sent the same — 1, True and 1.0 differ, and so do keys in another order — except that a
    key moved within the very mapping read before is not seen; an SDK object is recognised by
    identity in both modes. By identity, an item that is the very object read before is
    unchanged whatever was done to it in place, and so is one that replaced it, in the very
    list passed before, if Python takes it as equal (1 for True). What a mode does not see is
    sent as it was read; whatever it sees as changed is sent as the history holds it, its key
    order included, as a fresh worker sends it."""
    defer_to_server: bool = True
    """When a request turns the provider's own compaction on (Responses ``context_management``
    compaction or a ``compaction_trigger`` item, Anthropic ``compact_20260112`` or
    ``compaction``), leave its history to the server while it fits the model's own limit (the
    provider's window for the model, ``windows`` if given, never the smaller ``window``):
    only what the latest compaction covers is left out, and the report says ``deferred``.
    Over that limit the request is fitted without summaries. False: compact as usual."""
    on_compaction: ReportCallback | None = None
    on_call: ReportCallback | None = None

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def of(cls, settings: CompactionSettings | None = None, /,
           **keywords: Unpack[SettingsKeywords]) -> CompactionSettings:
        """``settings`` (default: the defaults) with ``keywords`` over it; unknown names are
        refused by name, with the nearest setting."""
        if settings is None:
            return cls(**keywords)
        if not isinstance(settings, CompactionSettings):
            raise ValidationError(
                f"settings must be a CompactionSettings, got {kind_of(settings)}",
                {"field": "settings"})
        return settings.replace(**keywords) if keywords else settings

    def replace(self, **keywords: Unpack[SettingsKeywords]) -> CompactionSettings:
        """A copy with ``keywords`` changed, checked like a new value."""
        _refuse_unknown(keywords, SETTING_NAMES)
        values = {name: getattr(self, name) for name in SETTING_NAMES}
        values.update(keywords)
        return CompactionSettings(**values)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values for logs: objects (policy, summarizer, store,
        estimator, callbacks, a pin predicate) by their type name."""
        return {name: _plain(getattr(self, name)) for name in SETTING_NAMES}


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(CompactionSettings))
_generated_init = CompactionSettings.__init__


@functools.wraps(_generated_init)
def _named_init(self: CompactionSettings, **keywords: Any) -> None:
    # The generated __init__ would refuse a misspelt name with a TypeError; say which setting
    # was meant instead, as every other entry point does.
    _refuse_unknown(keywords, SETTING_NAMES)
    _generated_init(self, **keywords)


CompactionSettings.__init__ = _named_init  # type: ignore[method-assign]
PLANNING_NAMES: frozenset[str] = frozenset(PlanningKeywords.__annotations__)
"""The settings ``compact`` and ``plan`` use (the rest belong to sessions)."""


def planning_settings(settings: CompactionSettings | None, keywords: Mapping[str, Any],
                      where: str) -> CompactionSettings:
    """The settings a ``compact``/``plan`` call runs with: ``settings`` with ``keywords`` over
    it, where a keyword must be one of the planning settings (a session's ``trigger`` is
    refused, saying it belongs to sessions)."""
    for name in keywords:
        if name in SETTING_NAMES and name not in PLANNING_NAMES:
            raise ValidationError(
                f"{name} is a session setting; {where} compacts once, to its budget "
                "(pass it to CompactionSession or a wrapped client instead)",
                {"field": name, "rule": "session_setting"})
    return CompactionSettings.of(settings, **keywords)


# --- checks ---------------------------------------------------------------------------------


def _refuse_unknown(keywords: Iterable[str], known: Iterable[str]) -> None:
    known = tuple(known)
    for name in keywords:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = _HINTS.get(name) or (f"did you mean {close[0]!r}?" if close else
                                    "see CompactionSettings for the settings")
        raise ValidationError(f"unknown setting {name!r} ({hint})",
                              {"field": name, "rule": "unknown_setting"})


def kind_of(value: object) -> str:
    """How an error names a wrong value: its type, or the class itself when one was passed."""
    if isinstance(value, type):
        return f"the class {value.__name__} (pass an instance: {value.__name__}(...))"
    return type(value).__name__


def _plain(value: object) -> object:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return type(value).__name__


MIN_TOKENS = 128
"""The fewest tokens ``trigger`` or ``target`` may name: no request is smaller. An int is a
token count, so ``target=2`` (two tokens, not twice the budget) is refused, not obeyed."""


def fraction_or_tokens(value: float | int, budget: int, name: str) -> int:
    """A float in (0, 1] is a share of ``budget``; an int >= 0 is tokens (at most ``budget``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a fraction of the budget or a token count, got "
                              f"{kind_of(value)}", {"field": name})
    if isinstance(value, float) and 0 < value <= 1:
        return int(budget * value)
    if isinstance(value, int) and value >= 0:
        return min(value, budget)
    raise ValidationError(f"{name} must be a float in (0, 1] or an int >= 0, got {value!r}",
                          {"field": name})


def whole(value: Any, name: str, minimum: int) -> None:
    """Refuse anything but an int (not a bool) of at least ``minimum``, naming the setting."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an int >= {minimum}, got {kind_of(value)}",
                              {"field": name})
    if value < minimum:
        raise ValidationError(f"{name} must be an int >= {minimum}, got {value}",
                              {"field": name})


def _no_class(settings: CompactionSettings, *names: str) -> None:
    """A class where an instance belongs (``summarizer=OpenAISummarizer``) is refused: it would
    only fail on the first call, with a message about arguments the caller never wrote."""
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, type):
            raise ValidationError(f"{name} must be an instance, got {kind_of(value)}",
                                  {"field": name, "rule": "class_not_instance"})


def _check_windows(windows: object) -> None:
    if not isinstance(windows, Mapping):
        raise ValidationError("windows must map model-name prefixes to token counts, got "
                              f"{kind_of(windows)}", {"field": "windows"})
    for prefix, tokens in windows.items():
        if not isinstance(prefix, str) or not prefix:
            raise ValidationError("windows keys must be non-empty model-name prefixes",
                                  {"field": "windows"})
        whole(tokens, f"windows[{prefix!r}]", 1)


def _check_hysteresis(trigger: float | int | None, target: float | int) -> None:
    """Both a share or a token count (of at least ``MIN_TOKENS``); the trigger above the target
    when they can be compared without a budget (both shares, both token counts, or a share
    target against the default trigger, which is at most the whole budget)."""
    for name, value in (("target", target), ("trigger", trigger)):
        if value is None:
            continue
        fraction_or_tokens(value, 1, name)
        if isinstance(value, int) and value < MIN_TOKENS:
            raise ValidationError(
                f"{name}={value} is a token count ({value} tokens), too small for any request "
                f"(at least {MIN_TOKENS}); a share of the budget is a float in (0, 1], e.g. "
                "0.5", {"field": name, "rule": "too_few_tokens"})
    if trigger is None:
        check_default_trigger(target, 0.0)
        return
    if isinstance(trigger, float) == isinstance(target, float) and trigger <= target:
        raise ValidationError(
            f"trigger ({trigger}) must be above target ({target}): compaction starts over the "
            "trigger and goes down to the target, so later calls append to a cached prefix",
            {"field": "trigger", "rule": "trigger_above_target"})


def check_default_trigger(target: float | int, margin: float) -> None:
    """Refuse a share ``target`` at or above the default trigger (the budget less ``margin``,
    a format's allowance for estimate error); a token target is compared at each call."""
    if isinstance(target, float) and target >= 1 - margin:
        raise ValidationError(
            f"target ({target}) must be below the default trigger ({1 - margin:g} of the "
            "budget): compaction starts over the trigger and goes down to the target, so later "
            "calls append to a cached prefix (pass a lower target, or a trigger)",
            {"field": "target", "rule": "trigger_above_target"})


def _check_callables(settings: CompactionSettings) -> None:
    for name, what in (("on_compaction", "a callable taking the CallReport"),
                       ("on_call", "a callable taking the CallReport"),
                       ("summarizer", "a callable (request, turns) -> summary text")):
        value = getattr(settings, name)
        if value is not None and not callable(value):
            raise ValidationError(f"{name} must be {what}, got {kind_of(value)}",
                                  {"field": name, "rule": "not_callable"})
    policy = settings.policy
    if policy is not None and not callable(getattr(policy, "decide", None)):
        raise ValidationError("policy must have a decide(transcript, budget) method, got "
                              f"{kind_of(policy)}", {"field": "policy"})


def _check_pins(pin: object) -> None:
    """Indexes (ints, not bools; whether each is in range is told by the history)."""
    if isinstance(pin, str | bytes | Mapping) or not isinstance(pin, Sequence | Set):
        raise ValidationError("pin must be message indexes (a list) or a predicate (message, "
                              f"index), got {kind_of(pin)}", {"field": "pin", "rule": "pin_type"})
    for position, index in enumerate(pin):
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValidationError(
                f"pin: entry {position} is a {type(index).__name__}, not an index (an int)",
                {"field": "pin", "rule": "pin_index", "position": position,
                 "type": type(index).__name__})


def _check(settings: CompactionSettings) -> None:
    """Every rule a setting has, in the order of the fields (the first failure is named)."""
    _no_class(settings, "policy", "summarizer", "estimator", "store", "on_compaction",
              "on_call")
    if settings.window is not None:
        whole(settings.window, "window", 1)
    if settings.windows is not None:
        _check_windows(settings.windows)
    _check_hysteresis(settings.trigger, settings.target)
    for name in ("reserve", "keep_recent", "max_views", "max_view_bytes", "summary_cache_size"):
        whole(getattr(settings, name), name, 0)
    _check_callables(settings)
    PolicyOptions.__post_init__(settings)  # the chain's options, checked where defined
    if settings.counter not in ("estimate", "provider"):
        raise ValidationError('counter must be "estimate" or "provider"', {"field": "counter"})
    if settings.check_prefix not in ("identity", "content"):
        raise ValidationError('check_prefix must be "identity" or "content"',
                              {"field": "check_prefix"})
    for name in ("sticky", "defer_to_server"):
        if not isinstance(getattr(settings, name), bool):
            raise ValidationError(f"{name} must be True or False", {"field": name})
    if settings.pin is not None and not callable(settings.pin):
        _check_pins(settings.pin)
    if settings.estimator is not None:
        chosen_estimator(settings.estimator, None)  # refuses one without estimate_tokens
    if settings.store is not None and not isinstance(settings.store, Store):
        raise ValidationError("store must be a cutctx_adapters.stores store (get, put, claim, "
                              f"...), got {kind_of(settings.store)}", {"field": "store"})
    timeout = settings.summary_timeout
    if (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
            or timeout == float("inf")):
        raise ValidationError("summary_timeout must be a positive number of seconds",
                              {"field": "summary_timeout"})


def call_budget(budget: object) -> int | None:
    """A call's own prompt budget (``prepare(budget=...)``, a hook's ``with_budget``): None,
    or an int >= 1, else refused by name."""
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 1):
        raise ValidationError(f"budget must be an int >= 1 (prompt tokens), got {budget!r}",
                              {"field": "budget", "rule": "call_budget"})
    return budget


def budget_or_window(budget: int | CompactionBudget | None, settings: CompactionSettings,
                     model: str | None) -> int | CompactionBudget:
    """``budget`` as given, else the prompt budget of ``model``'s window less ``reserve``."""
    if budget is not None:
        return budget
    found = prompt_budget(model, settings.reserve, window=settings.window,
                          overrides=settings.windows)
    if found is None:
        raise ValidationError(
            f"no budget: pass budget= (prompt tokens) or window= (the context window of "
            f"{model!r} is not in the built-in table)", {"field": "budget"})
    return found


T = TypeVar("T")


class Setting(Generic[T]):
    """A read-only attribute holding the owner's ``settings`` field of the same name."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any]) -> Self | T:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self._name)  # type: ignore[attr-defined]
        return value

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self._name} is a setting: make a new session with "
                             "settings.replace(...) to change it")


REQUEST_NAMES: frozenset[str] = frozenset(CompactKeywords.__annotations__) - frozenset(
    SettingsKeywords.__annotations__) - {"settings"}
"""The keywords of ``plan``/``compact`` that are the request's, not settings."""


def settings_of(options: Mapping[str, Any], where: str,
                own: Iterable[str] = ()) -> CompactionSettings:
    """The settings a ``plan``/``compact`` call runs with: its ``settings`` value with the
    keywords that are settings over it; the request's keywords (``REQUEST_NAMES``, and a
    format's ``own``) are not, and any other name is refused by name."""
    request = REQUEST_NAMES.union(own)
    keywords = {name: value for name, value in options.items()
                if name not in request and name != "settings"}
    return planning_settings(options.get("settings"), keywords, where)


# --- a format's plan, from the settings ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Goal:
    """What a ``plan`` call plans toward: its budget, its summarizer, and why its history is
    left to the provider's own compaction (None: it is not)."""

    budget: int | CompactionBudget
    summarizer: AnySummarizer | None
    deferred: str | None = None


def goal_of(settings: CompactionSettings, budget: int | CompactionBudget | None,
            model: str | None, request: Mapping[str, Any] | None = None,
            server_compaction: Callable[[Mapping[str, Any]], str | None] | None = None) -> Goal:
    """``budget`` (else the model's window less ``reserve``) and the settings' summarizer;
    when ``server_compaction`` says the ``request`` turns the provider's compaction on (and
    ``defer_to_server``), the model's own budget and no summarizer."""
    goal = budget_or_window(budget, settings, model)
    deferred = (None if server_compaction is None else
                deferral(request or {}, server_compaction, settings.defer_to_server))
    if deferred is None:
        return Goal(goal, settings.summarizer)
    return Goal(deferred_budget(goal, model, settings.reserve), None, deferred)


def started(conversion: Conversion[Any], settings: CompactionSettings, goal: Goal, *,
            overhead: int, estimator: TokenEstimator,
            result_fields: Callable[[Any], Mapping[str, Any]], **planning: Any) -> Job:
    """A format's job: its history planned toward ``goal`` less ``overhead``, with the
    settings' policy, protection and chain options (``planning``: the format's own ``start``
    keywords)."""
    return start(conversion, resolve_budget(goal.budget, overhead, settings.keep_recent),
                 policy=settings.policy, summarizer=goal.summarizer, estimator=estimator,
                 overhead=overhead, result_fields=result_fields, options=settings,
                 deferred=goal.deferred, **planning)
