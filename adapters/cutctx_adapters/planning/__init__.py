"""Planning a compaction, format-independent: the policy chosen, the plan fitted to the budget,
summaries fulfilled and checked, the view applied and rendered.

A format fills in a ``HistoryFormat`` and builds a ``Job`` with ``start``; ``run``/``arun``
finish it into a ``CompactionResult``. The default chain and how hard it may try to fit are
``PolicyOptions``.
"""

from ._format import (
    DEFAULT_RESERVE,
    HistoryFormat,
    deferral,
    deferred_budget,
    given,
    reply_allowance,
    server_held,
)
from ._pipeline import (
    Job,
    acompacted,
    arun,
    compacted,
    length_check,
    planned,
    resolve_budget,
    run,
    stand_in,
    start,
    stub_estimator,
    summary_check,
    with_room_for_note,
)
from ._policy import (
    DEFAULT_DIGEST_TOKENS,
    DigestStyle,
    GiveWay,
    OnSummaryError,
    PolicyOptions,
    choose_policy,
)
from ._prefix import keeping_prefix, no_worse
from ._results import CompactionResult, FormatResult, Replacement, narrowed, short_tokens

__all__ = [
    "DEFAULT_DIGEST_TOKENS",
    "DEFAULT_RESERVE",
    "CompactionResult",
    "DigestStyle",
    "FormatResult",
    "GiveWay",
    "HistoryFormat",
    "Job",
    "OnSummaryError",
    "PolicyOptions",
    "Replacement",
    "acompacted",
    "arun",
    "choose_policy",
    "compacted",
    "deferral",
    "deferred_budget",
    "given",
    "keeping_prefix",
    "length_check",
    "narrowed",
    "no_worse",
    "planned",
    "reply_allowance",
    "resolve_budget",
    "run",
    "server_held",
    "short_tokens",
    "stand_in",
    "start",
    "stub_estimator",
    "summary_check",
    "with_room_for_note",
]
