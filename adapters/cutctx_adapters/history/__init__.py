"""A provider history as parts and turns: what every format shares to read and render one.

A format's codec splits a history into ``Part`` values; ``convert``/``extend`` make the engine's
``Transcript`` of them and ``Conversion.render`` turns a view back into the provider's shape.
Plain JSON copies, the invalid-history error, content keys and observations live here too.
"""

from ._conversion import (
    BOUNDARY_KIND,
    KIND_KEY,
    SUMMARY_HEADER,
    TOOL_NAME_KEY,
    Codec,
    Conversion,
    CountText,
    Growing,
    Part,
    PinSpec,
    check_call_pairs,
    convert,
    covered_turns,
    extend,
    uncovered,
)
from ._grown import GrownList, GrownMap
from ._keys import content_bytes, content_key, span_key
from ._observations import OBSERVATION_RULES, ObservationRule, check_rule, marked
from ._plain import (
    MAX_DEPTH,
    ToolRule,
    copy_plain,
    invalid,
    not_a_list,
    not_an_entry,
    plain_tools,
    string_field,
    to_plain,
)

__all__ = [
    "BOUNDARY_KIND",
    "KIND_KEY",
    "MAX_DEPTH",
    "OBSERVATION_RULES",
    "SUMMARY_HEADER",
    "TOOL_NAME_KEY",
    "Codec",
    "Conversion",
    "CountText",
    "Growing",
    "GrownList",
    "GrownMap",
    "ObservationRule",
    "Part",
    "PinSpec",
    "ToolRule",
    "check_call_pairs",
    "check_rule",
    "content_bytes",
    "content_key",
    "convert",
    "copy_plain",
    "covered_turns",
    "extend",
    "invalid",
    "marked",
    "not_a_list",
    "not_an_entry",
    "plain_tools",
    "span_key",
    "string_field",
    "to_plain",
    "uncovered",
]
