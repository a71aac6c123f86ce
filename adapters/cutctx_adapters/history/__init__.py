"""A provider history as parts and turns: what every format shares to read and render one.

A format's codec splits a history into ``Part`` values; ``convert``/``extend`` make the engine's
``Transcript`` of them and ``Conversion.render`` turns a view back into the provider's shape.
Plain JSON copies, the invalid-history error, content keys and observations live here too.
"""

from . import _conversion, _plain
from ._conversion import *  # noqa: F403  (reading and rendering: _conversion.__all__)
from ._grown import GrownList, GrownMap
from ._keys import content_bytes, content_key, span_key
from ._observations import OBSERVATION_RULES, ObservationRule, check_rule, marked
from ._plain import *  # noqa: F403  (plain JSON copies, the invalid-history error: _plain.__all__)

__all__ = [
    "OBSERVATION_RULES",
    "GrownList",
    "GrownMap",
    "ObservationRule",
    "check_rule",
    "content_bytes",
    "content_key",
    "marked",
    "span_key",
]
__all__ += _conversion.__all__
__all__ += _plain.__all__
