"""Text from a file, made safe to print: every invisible character escaped.

A newline, a carriage return or an ANSI escape in a file name, a header
field, a logged value or a database row could otherwise forge lines of
tlasim's output (a fake ACCEPTED) or drive the terminal. Every command
prints such values through `printable`.
"""

from __future__ import annotations

__all__ = ["printable"]

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    """The text with every character that is not plainly visible written as an
    escape (`\\n`, `\\x1b`, `\\u202e`), so it is one line that cannot move the
    cursor, clear the screen or reorder what follows it.

    Python's `isprintable` draws the line: it refuses control characters (C0,
    DEL, C1), line and paragraph separators, format characters (the bidi
    embeddings, overrides, isolates and marks, zero-width spaces), lone
    surrogates (from undecodable file names), and every space but ' '.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)
