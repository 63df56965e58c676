"""Find the model's pick, the JSON object that names the next call, in a reply.

A reply mixes prose, reasoning, Markdown fences and JSON objects; the *last* pick wins:

1. Reasoning is dropped: ``<think>...</think>``, everything before a lone ``</think>``,
   everything after an unclosed ``<think>``.
2. Fences are read as CommonMark reads them (the closer repeats the opening character, at
   least as many times, nothing after). ``json`` and untagged fences are candidate regions,
   other fences are skipped, the rest is bare text. A fenced pick beats any bare one.
3. A region naming no call key is skipped. Otherwise one compiled regex cuts it into coarse
   events: a run of flat objects (no nested braces) as one event, a run of ``{``, a run of
   ``}``, and a string, which starts only at a JSON token position (after ``{ [ , :``)
   inside an open brace, is skipped whole, and counts only when ``, : } ]`` follows it, so
   a stray quote cannot swallow a pick. A stack of open runs pairs the braces; each closed
   object holding a key becomes a node over the keyed objects closed inside it. A stray
   ``{`` stays on the stack without nesting what follows.
4. Nodes are resolved from the last: parse (json, json without trailing commas, then
   ``ast.literal_eval`` limited to JSON types) and search the value for its last pick; if
   it does not parse, search its children, unless it is itself a pick (its inner objects
   are its data). Nothing is closed for the model: a truncated pick stays unparsed.
5. If a region still gives nothing, it is read again with apostrophes as plain text.

Why it is linear: every regex is possessive, so a match consumes its text or fails without
backtracking. A string is read once: no quote at a token position can sit inside another
string (it would have closed it), so a string that runs out, or is dropped for what
follows it, is read at most once more as plain text. A failed flat-object attempt stops at
the first brace outside its strings, the next event anyway. Each node moves into its parent
once; a region is scanned at most twice. Objects nested deeper than ``MAX_DEPTH`` never
reach a parser, and every parse is charged to a budget proportional to the reply.
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["MAX_DEPTH", "RawPick", "extract_action", "find_pick"]

MAX_DEPTH = 64
"""Objects and lists nested deeper than this are a parse failure."""

_CALL_KEYS = ("call", "action", "function", "tool")
_ARGS_KEYS = ("args", "arguments", "parameters", "input")
_KEYS = frozenset((*_CALL_KEYS, "name"))
_HAS_KEY, _PICKLIKE, _GROUP = 1, 2, 4
_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
# Parse work allowed per character of reply, in json parses of one character.
_BUDGET_PER_CHAR, _BUDGET_FLOOR, _LITERAL_COST = 4, 1 << 16, 4

_WORDS = "call|action|function|tool|name"
_ANY_KEY = re.compile(rf"[\"'](?:{_WORDS})[\"']\s*+:")
_DQ = r'"(?:[^"\\]++|\\.)*+"'
_INERT = r"[^{}\"'\\,:\[]"
_FLAT_BODY = rf"\s*+(?:{_DQ})?(?:{_INERT}++|[,:\[]\s*+(?:{_DQ})?)*+\}}"
_FLAT_RE = re.compile(r"\{" + _FLAT_BODY, re.S)
_STRING_BODY = r"""(?:(?<=")(?:[^"\\]++|\\.)*+"|(?<=')(?:[^'\\]++|\\.)*+')"""


def _token_regex(quotes: str, *, inside: bool) -> re.Pattern[str]:
    """Compile the event regex; only characters in ``quotes`` open strings.

    Every event starts with one of ``{ } [ , :``, so the search skips to them at C speed,
    and the alternatives look back at that character. Outside any object only ``{`` starts
    one. ``last`` is the last member of a flat run. A string counts (``od``, ``sd``) only
    when a JSON delimiter follows it.
    """

    def string(kind: str) -> str:
        body = rf"{_STRING_BODY}(?=\s*+(?P<{kind}d>[,:}}\]]))"
        return rf"\s*+(?P<{kind}q>[{quotes}])(?:{body})?"

    opening = (
        rf"(?P<run>{_FLAT_BODY}(?:[^{{}}\"'\\]*+(?P<last>\{{{_FLAT_BODY}))*+)"
        rf"|(?P<open>(?:{_INERT}*+\{{)*+)(?:{string('o')})?"
    )
    if not inside:
        return re.compile(rf"\{{(?:{opening})", re.S)
    return re.compile(
        rf"[{{}}\[,:](?:(?<=\{{)(?:{opening})"
        rf"|(?<=\}})(?P<close>(?:{_INERT}*+\}})*+)"
        rf"|(?<=[\[,:]){string('s')})",
        re.S,
    )


# The event regexes, by (inside an object, single quotes open strings).
_TOKENS = {
    (inside, literals): _token_regex("\"'" if literals else '"', inside=inside).search
    for inside in (False, True)
    for literals in (False, True)
}
_ONE_CLOSE = re.compile(r"\}")
_TRAILING_HINT = re.compile(r",\s*+[}\]]")
_TRAILING_COMMA = re.compile(r'("(?:[^"\\]++|\\.)*+(?:"|\Z))|,(?=\s*+[}\]])', re.S)
# literal_eval warns on these escapes; such a chunk is not a pick worth reading anyway.
_ODD_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*+\\[^\n\\'\"abfnrtvx0-7NuU]")
_THINK = re.compile(r"<(/?)think\s*+>", re.I)
_WRAPPER = re.compile(r"<(/?)tool_call\s*+>", re.I)
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.M)
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t\r]*$", re.M)
_DECODER = json.JSONDecoder(strict=False)


@dataclass(frozen=True, slots=True)
class RawPick:
    """A pick as found in the reply, before validation against the menu.

    Attributes:
        call: The value of the call key; may be a non-string (reported as unknown_call).
        args: The args value (a JSON string holding an object is decoded); None when absent.
        has_args: Whether an args key (or alias) was present.
        extras: Every other top-level key of the pick, for flattened arguments.
    """

    call: object
    args: object
    has_args: bool
    extras: dict[str, object]


def find_pick(reply: str, names: Collection[str] | None = None) -> RawPick | None:
    """Return the last pick in ``reply``, or None when it holds none.

    Args:
        reply: The model's reply text.
        names: The option names; ``{"name": N, ...}`` is a pick when N is one of them
            (when None, it needs an arguments key).

    Raises:
        TypeError: ``reply`` is not a str.
    """
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a str, got {type(reply).__name__}")
    text = _drop_reasoning(reply)
    key = _ANY_KEY.search(text)
    if key is None:  # every pick names a key: skip fences and scans
        return None
    starts, ends = _wrapper_ranges(text)
    budget = _BUDGET_PER_CHAR * len(text) + _BUDGET_FLOOR
    ctx = _Context(text, names, key.start(), starts, ends, budget)
    for regions in _regions(text):
        for start, end in reversed(regions):
            pick = ctx.region_pick(start, end)
            if pick is not None:
                return pick
    return None


def extract_action(reply: str, names: Collection[str] | None = None) -> dict[str, object] | None:
    """Return the last pick as ``{"call": ..., "args": ...}``, or None.

    ``args`` is the pick's args value when it has one, else its other top-level keys
    (flattened arguments).
    """
    pick = find_pick(reply, names)
    if pick is None:
        return None
    return {"call": pick.call, "args": pick.args if pick.has_args else dict(pick.extras)}


def _drop_reasoning(text: str) -> str:
    if _THINK.search(text) is None:
        return text
    parts: list[str] = []
    cursor, inside = 0, False
    for tag in _THINK.finditer(text):
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


def _wrapper_ranges(text: str) -> tuple[list[int], list[int]]:
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


def _regions(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
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


@dataclass(slots=True)
class _Span:
    """A keyed object (or, with ``_GROUP``, a run of flat objects) found by the scan."""

    start: int
    end: int
    depth: int
    flags: int
    children: list[_Span]


class _Scan:
    """Pair the braces of ``text[start:end]``; ``nodes`` are the outermost keyed objects.

    No key lies before ``first_key``. With ``literals`` off, single quotes open no string.
    """

    __slots__ = ("first_key", "nodes", "stack", "text")

    def __init__(
        self, text: str, start: int, end: int, first_key: int, *, literals: bool = True
    ) -> None:
        self.text, self.first_key = text, first_key
        self.nodes: list[_Span] = []
        # One entry per run of opens: innermost open, run size, opens left, len(nodes) at
        # push, then flags and inner depth of the innermost open still unmatched.
        self.stack: list[list[int]] = []
        stack, pos = self.stack, start
        outside, inside = _TOKENS[False, literals], _TOKENS[True, literals]
        while (token := (inside if stack else outside)(text, pos, end)) is not None:
            pos = token.end()
            kind = token.lastgroup or ""
            if kind == "close":
                self.close(token.start(), pos)
            elif kind == "run":
                self.add_run(token)
            else:
                if kind[0] == "o":  # a run of opens; only its innermost `{` can start an object
                    a, b = token.start(), token.end("open")
                    size = 1 if b - a == 1 else text.count("{", a, b)
                    stack.append([b - 1, size, size, len(self.nodes), 0, 0])
                if kind[1] == "d" and pos - token.start(kind[0] + "q") <= 10:
                    self.flag_key(token, kind[0])
        if stack:
            _drop_truncated_data(text, stack, self.nodes)

    def add_run(self, token: re.Match[str]) -> None:
        """Record a run of flat objects: its last member, and the rest as a group read lazily."""
        a, b = token.span()
        keyed = b > self.first_key and bool(_ANY_KEY.search(self.text, max(a, self.first_key), b))
        if self.stack:
            top = self.stack[-1]
            top[4] |= _HAS_KEY if keyed else 0
            top[5] = max(top[5], 1)
        if not keyed:
            return
        last = token.start("last")
        if last > a:
            if _ANY_KEY.search(self.text, a, last) is not None:
                self.nodes.append(_Span(a, last, 1, _HAS_KEY | _GROUP, []))
            a = last
        if _ANY_KEY.search(self.text, a, b) is not None:
            self.nodes.append(_Span(a, b, 1, _HAS_KEY, []))

    def flag_key(self, token: re.Match[str], kind: str) -> None:
        """Flag the innermost open object when this short string is one of its call keys."""
        word = self.text[token.start(kind + "q") + 1 : token.end() - 1]
        if word in _KEYS and token.group(kind + "d") == ":" and self.text[token.start()] in "{,":
            self.stack[-1][4] |= _HAS_KEY if word == "name" else _HAS_KEY | _PICKLIKE

    def close(self, a: int, b: int) -> None:
        """Match the closes in ``text[a:b]`` against the open runs, innermost first."""
        stack, nodes = self.stack, self.nodes
        count = 1 if b - a == 1 else self.text.count("}", a, b)
        closed = 0
        positions: Sequence[int] | None = None
        while closed < count and stack:
            entry = stack[-1]
            start, size, left, mark, flags, depth = entry
            used = left if left <= count - closed else count - closed
            # Only the innermost open of a run can start an object: `{{` parses as nothing.
            if left == size and flags & _HAS_KEY:
                if positions is None:
                    found = _ONE_CLOSE.finditer(self.text, a, b)
                    positions = range(a, b) if count == b - a else [m.start() for m in found]
                nodes[mark:] = [_Span(start, positions[closed] + 1, depth + 1, flags, nodes[mark:])]
            closed += used
            depth += used
            if used < left:
                entry[2], entry[4], entry[5] = left - used, flags & _HAS_KEY, depth
                return
            stack.pop()
            if stack:
                parent = stack[-1]
                parent[4] |= flags & _HAS_KEY
                if depth > parent[5]:
                    parent[5] = depth


def _drop_truncated_data(text: str, stack: list[list[int]], done: list[_Span]) -> None:
    """Forget objects that are values inside an unclosed pick: they are its data."""
    for entry in stack:
        if entry[4] & _PICKLIKE:
            mark = entry[3]
            done[mark:] = [span for span in done[mark:] if not _after_separator(text, span.start)]
            return


def _after_separator(text: str, pos: int) -> bool:
    """Tell whether the object at ``pos`` is a JSON value: after ``[``, ``,`` or ``"key":``."""
    pos = _before_space(text, pos)
    if pos >= 0 and text[pos] == ":":
        pos = _before_space(text, pos)
        return pos >= 0 and text[pos] in "\"'"  # a prose colon ("as follows:") is not one
    return pos >= 0 and text[pos] in ",["


def _before_space(text: str, pos: int) -> int:
    pos -= 1
    while pos >= 0 and text[pos] in " \t\r\n":
        pos -= 1
    return pos


@dataclass(slots=True)
class _Context:
    """What one extraction shares: text, names, first key, wrappers and the parse budget."""

    text: str
    names: Collection[str] | None
    first_key: int
    wrap_starts: list[int]
    wrap_ends: list[int]
    budget: int

    def spend(self, cost: int) -> bool:
        self.budget -= cost
        return self.budget >= 0

    def region_pick(self, start: int, end: int) -> RawPick | None:
        key = _ANY_KEY.search(self.text, max(start, self.first_key), end)
        if key is None:
            return None
        raw = self.text[start:end]
        chunk = raw.strip()
        if chunk[:1] == "{" and chunk[-1:] == "}":  # the region may be one object: no scan
            first = start + len(raw) - len(raw.lstrip())
            whole = self.parse(first, first + len(chunk))
            if whole is not None:
                return self.pick_in(whole, first)
        pick = self.resolve(_Scan(self.text, start, end, key.start()).nodes)
        if pick is None and self.text.find("'", start, end) >= 0:
            # An apostrophe read as opening a Python string may have hidden the pick.
            pick = self.resolve(_Scan(self.text, start, end, key.start(), literals=False).nodes)
        return pick

    def resolve(self, nodes: list[_Span]) -> RawPick | None:
        todo = list(nodes)
        while todo:
            node = todo.pop()
            if node.flags & _GROUP:
                todo.extend(self.group_members(node))
                continue
            if node.depth <= MAX_DEPTH:
                value = self.parse(node.start, node.end)
                if value is not None:
                    pick = self.pick_in(value, node.start)
                    if pick is not None:
                        return pick
                    continue
                if self.budget < 0:
                    return None
            if not node.flags & _PICKLIKE:  # a broken pick's inner objects are its data
                todo.extend(node.children)
        return None

    def group_members(self, group: _Span) -> list[_Span]:
        members = _FLAT_RE.finditer(self.text, group.start, group.end)
        return [
            _Span(m.start(), m.end(), 1, _HAS_KEY, [])
            for m in members
            if _ANY_KEY.search(self.text, m.start(), m.end())
        ]

    def parse(self, start: int, end: int) -> dict[str, object] | None:
        """Parse one object: json, then json without trailing commas, then a Python literal."""
        if not self.spend(end - start):
            return None
        chunk = self.text[start:end]
        value, pos = _load_json(chunk)
        source = chunk
        if value is None and _TRAILING_HINT.search(chunk) and self.spend(len(chunk)):
            source = _TRAILING_COMMA.sub(r"\1", chunk)
            value, pos = _load_json(source)
        pythonic = pos >= 0 and source.startswith(("'", "True", "False", "None"), pos)
        if value is None and pythonic and self.spend(_LITERAL_COST * len(chunk)):
            return _load_literal(chunk)
        return value

    def pick_in(self, value: dict[str, object], start: int) -> RawPick | None:
        i = bisect_right(self.wrap_starts, start) - 1
        wrapped = i >= 0 and start < self.wrap_ends[i]
        return _last_pick(value, self.names, wrapped)


def _load_json(chunk: str) -> tuple[dict[str, object] | None, int]:
    """Decode one whole JSON object; on failure return the error position (or -1)."""
    try:
        value, end = _DECODER.raw_decode(chunk)
    except json.JSONDecodeError as exc:
        return None, exc.pos
    except (ValueError, RecursionError):  # an over-long integer; nesting past the C guard
        return None, -1
    if end != len(chunk) or not isinstance(value, dict):
        return None, -1
    # Brace depth is bounded by the scan; only lists (or a whole reply) can nest deeper.
    if ("[" in chunk or chunk.count("{") > MAX_DEPTH) and not _fits(value, literal=False):
        return None, -1
    return value, -1


def _load_literal(chunk: str) -> dict[str, object] | None:
    if _ODD_ESCAPE.search(chunk):
        return None
    try:
        value = ast.literal_eval(chunk)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and _fits(value, literal=True) else None


def _fits(value: dict[str, object], *, literal: bool) -> bool:
    """Tell whether ``value`` nests at most MAX_DEPTH deep (and, for a literal, is JSON)."""
    todo: list[tuple[dict[str, object] | list[object], int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > MAX_DEPTH:
            return False
        if literal and isinstance(item, dict) and not set(map(type, item)) <= {str}:
            return False
        members = item.values() if isinstance(item, dict) else item
        kinds = set(map(type, members))  # in C: the walk itself visits containers only
        if literal and not kinds <= _JSON_TYPES:
            return False
        if dict in kinds or list in kinds:
            todo.extend((m, depth + 1) for m in members if type(m) is dict or type(m) is list)
    return True


def _last_pick(value: object, names: Collection[str] | None, wrapped: bool) -> RawPick | None:
    """Return the last pick in document order in a parsed value, not looking inside picks."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            pick = _as_pick(item, names, wrapped)
            if pick is not None:
                return pick
            todo.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            todo.extend(v for v in item if isinstance(v, dict | list))
    return None


def _as_pick(
    obj: dict[str, object], names: Collection[str] | None, wrapped: bool
) -> RawPick | None:
    inner = obj.get("function")
    if isinstance(inner, dict) and "name" in inner:  # the provider tool-call shape
        return _build(inner, "name")
    for key in _CALL_KEYS:
        if key in obj:
            return _build(obj, key)
    if "name" not in obj:
        return None
    name = obj["name"]
    if wrapped or (names is None and any(key in obj for key in _ARGS_KEYS)):
        return _build(obj, "name")
    if names is not None and isinstance(name, str) and name in names:
        return _build(obj, "name")
    return None


def _build(obj: dict[str, object], call_key: str) -> RawPick:
    args_key = next((key for key in _ARGS_KEYS if key in obj), None)
    extras = {key: v for key, v in obj.items() if key not in (call_key, args_key)}
    if args_key is None:
        return RawPick(obj[call_key], None, False, extras)
    args = obj[args_key]
    if isinstance(args, str):
        decoded, _ = _load_json(args.strip())
        args = decoded if decoded is not None else args
    return RawPick(obj[call_key], args, True, extras)
