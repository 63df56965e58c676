"""Where a reply's candidate picks can be: reasoning dropped, wrappers found, fences split.

Fences are read as CommonMark reads them: an opening line of at least three backticks or
tildes (up to three spaces of indent), closed by a line of the same character, at least as
long, with nothing after it; an unclosed fence runs to the end. ``json`` and untagged
fences are candidate regions, other fences are skipped, the rest is bare text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["drop_reasoning", "regions", "wrapper_ranges"]

_THINK = re.compile(r"<(/?)think\s*+>", re.I)
_WRAPPER = re.compile(r"<(/?)tool_call\s*+>", re.I)
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.M)
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t\r]*$", re.M)


def drop_reasoning(text: str) -> str:
    if _THINK.search(text) is None:
        return text
    parts: list[str] = []
    cursor, inside = 0, False
    for tag in _tags(text):
        closing = bool(tag.group(1))
        if inside and closing:
            inside, cursor = False, tag.end()
        elif closing:  # a lone closer: the model's reasoning began before the reply did
            parts.clear()
            cursor = tag.end()
        elif not inside:
            parts.append(text[cursor : tag.start()])
            inside = True
    if not inside:
        parts.append(text[cursor:])
    return "".join(parts)


def _tags(text: str) -> Iterator[re.Match[str]]:
    """Yield the reasoning tags of ``text`` that are not inside a quoted string.

    A tag after an odd number of (unescaped) double quotes on its line sits in a JSON
    string, a pick's argument perhaps: it is text, not reasoning. One pass: each stretch
    between two tags is counted once.
    """
    cursor, quoted = 0, False
    for tag in _THINK.finditer(text):
        start = tag.start()
        line = text.rfind("\n", cursor, start)
        if line >= 0:
            cursor, quoted = line + 1, False
        quotes = text.count('"', cursor, start) - text.count('\\"', cursor, start)
        quoted ^= quotes % 2 == 1
        cursor = start
        if not quoted:
            yield tag


def wrapper_ranges(text: str) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for tag in _WRAPPER.finditer(text):
        if not tag.group(1) and len(starts) == len(ends):
            starts.append(tag.end())
        elif tag.group(1) and len(starts) > len(ends):
            ends.append(tag.start())
    if len(starts) > len(ends):
        ends.append(len(text))
    return starts, ends


def regions(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Split ``text`` into candidate fence bodies and bare-text stretches, in order."""
    fenced: list[tuple[int, int]] = []
    bare: list[tuple[int, int]] = []
    cursor, pos = 0, 0 if "```" in text or "~~~" in text else len(text)
    while (line := _FENCE_OPEN.search(text, pos)) is not None:
        pos = line.end()
        marker, info = line.group(1), line.group(2)
        if marker[0] == "`" and "`" in info:
            continue  # CommonMark: a backtick info string cannot hold a backtick
        bare.append((cursor, line.start()))
        body = min(pos + 1, len(text))
        closer = _fence_closer(text, body, marker)
        words = info.split(maxsplit=1)
        if not words or words[0].lower() == "json":
            fenced.append((body, closer.start() if closer else len(text)))
        cursor = pos = closer.end() if closer else len(text)
    bare.append((cursor, len(text)))
    return fenced, bare


def _fence_closer(text: str, start: int, marker: str) -> re.Match[str] | None:
    for line in _FENCE_CLOSE.finditer(text, start):
        run = line.group(1)
        if run[0] == marker[0] and len(run) >= len(marker):
            return line
    return None
