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
reach a parser. The shortcuts (the whole reply, then each region, when it is one JSON
object) try json alone, once each: at most twice the reply's length. The nodes' parses are
charged to budgets proportional to the reply, plus a floor: json may read it four times
over (json without trailing commas is one more read), ``ast.literal_eval``, by far the
slowest, once, and at most 80 KB in all (beyond that, Python-literal objects are not read:
a re-pick asks again). So every object of a reply can go once through json, and one of
Python-literal size through all three parsers; however deep objects that fail to parse
nest, the parsers read a bounded multiple of the reply.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from engine._decision._picks import (
    CALL_KEYS,
    MAX_DEPTH,
    RawPick,
    last_pick,
    load_json,
    load_literal,
    whole_pick,
)
from engine._decision._regions import drop_reasoning, regions, wrapper_ranges

__all__ = ["MAX_DEPTH", "RawPick", "extract_action", "find_pick"]


_KEYS = frozenset((*CALL_KEYS, "name"))
_HAS_KEY, _PICKLIKE, _GROUP = 1, 2, 4
# Characters the parsers may read, per character of reply plus a floor for short replies:
# json (with and without trailing commas) four times over; ast.literal_eval (tens of times
# slower per character, microseconds a character on dense tokens) the reply once, up to a
# cap: Python-literal picks are small, and a reply full of failing literals must not hold
# the event loop for seconds.
_JSON_PER_CHAR, _JSON_FLOOR = 4, 1 << 16
_LITERAL_CAP, _LITERAL_FLOOR = 1 << 16, 1 << 14

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
    # The common case, a reply that is one JSON object: when that object is itself a pick,
    # it is the only candidate there is (what it holds is its data).
    pick = whole_pick(reply.strip(), names)
    if pick is not None:
        return pick
    text = drop_reasoning(reply)
    key = _ANY_KEY.search(text)
    if key is None:  # every pick names a key: skip fences and scans
        return None
    starts, ends = wrapper_ranges(text)
    budget = _JSON_PER_CHAR * len(text) + _JSON_FLOOR
    literal_budget = min(len(text), _LITERAL_CAP) + _LITERAL_FLOOR
    ctx = _Context(text, names, key.start(), starts, ends, budget, literal_budget)
    for group in regions(text):
        for start, end in reversed(group):
            pick = ctx.region_pick(start, end)
            if pick is not None:
                return pick
    return None


def extract_action(reply: str, names: Collection[str] | None = None) -> dict[str, object] | None:
    """Return the last pick, normalised to ``{"call": ..., "args": {...}}``, or None.

    ``args`` is the pick's args value when it has one (or an alias), else its other
    top-level keys (flattened arguments). A missing, null or empty (``""``, ``[]``) args is
    ``{}``, and a JSON string holding an object is that object. Any other value that is no
    object is returned as it is: validation against the options reports it as bad_args.

    Args:
        reply: The model's reply text.
        names: The option names, as for :func:`find_pick`.

    Raises:
        TypeError: ``reply`` is not a str.
    """
    pick = find_pick(reply, names)
    if pick is None:
        return None
    return {"call": pick.call, "args": pick.args if pick.has_args else dict(pick.extras)}


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
                a = token.start()
                if pos - a == 1 and stack:
                    # The usual close: one `}` ends the innermost open, a keyless object.
                    entry = stack[-1]
                    if entry[2] == 1 and not entry[4]:
                        stack.pop()
                        if stack and entry[5] + 1 > stack[-1][5]:
                            stack[-1][5] = entry[5] + 1
                        continue
                self.close(a, pos)
            elif kind == "open":
                a, b = token.start(), token.end("open")
                size = 1 if b - a == 1 else text.count("{", a, b)
                stack.append([b - 1, size, size, len(self.nodes), 0, 0])
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
    """What one extraction shares: text, names, first key, wrappers and the parse budgets."""

    text: str
    names: Collection[str] | None
    first_key: int
    wrap_starts: list[int]
    wrap_ends: list[int]
    budget: int
    literal_budget: int

    def spend(self, cost: int) -> bool:
        self.budget -= cost
        return self.budget >= 0

    def region_pick(self, start: int, end: int) -> RawPick | None:
        key = _ANY_KEY.search(self.text, max(start, self.first_key), end)
        if key is None:
            return None
        raw = self.text[start:end]
        chunk = raw.strip()
        if chunk[:1] == "{" and chunk[-1:] == "}":
            # The region may be one JSON object: no scan. Only json is tried, uncharged (the
            # regions are disjoint); the other parsers are for the scan's nodes.
            whole, _ = load_json(chunk)
            if whole is not None:
                return self.pick_in(whole, start + len(raw) - len(raw.lstrip()))
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
        value, pos = load_json(chunk)
        source = chunk
        if value is None and _TRAILING_HINT.search(chunk) and self.spend(len(chunk)):
            source = _TRAILING_COMMA.sub(r"\1", chunk)
            value, pos = load_json(source)
        pythonic = pos >= 0 and source.startswith(("'", "True", "False", "None"), pos)
        if value is None and pythonic and len(chunk) <= self.literal_budget:
            # Charged only when it runs: an object too large for what is left leaves it to
            # smaller ones.
            self.literal_budget -= len(chunk)
            return load_literal(chunk)
        return value

    def pick_in(self, value: dict[str, object], start: int) -> RawPick | None:
        i = bisect_right(self.wrap_starts, start) - 1
        wrapped = i >= 0 and start < self.wrap_ends[i]
        return last_pick(value, self.names, wrapped)
