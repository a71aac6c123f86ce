"""Text from the input made safe to print: no markup, no terminal control, always encodable.

Tool names, model names and file names come from the file being read. Printed as they are, a
name like ``[/bold]`` is rich markup, an ANSI escape sequence drives the terminal, and a lone
surrogate cannot be encoded at all. Every such name goes through ``visible`` first.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    r"""``text`` with control characters and lone surrogates written as escapes.

    >>> visible("bash\x1b[31m\ud800")
    'bash\\x1b[31m\\ud800'
    """
    return _UNPRINTABLE.sub(_escape, text)
