"""Values that satisfy a JSON Schema, drawn from a seeded random source.

:class:`~engine.models.SimulatedModel` fills the arguments of the option it picks with these,
so a simulated pick validates exactly as a good model's would. The subset covered is what
the menu's choice specs use: the JSON types, ``enum``/``const``, ``anyOf``/``oneOf``, one
``allOf``, nullable types, ``$ref`` into the root's ``$defs``, arrays (``items``,
``prefixItems``, ``uniqueItems``), objects (``properties``, ``required``,
``additionalProperties``), the usual bounds, ``multipleOf`` and string formats. A string
``pattern`` is not followed.
"""

from __future__ import annotations

import decimal
import math
import random
import string
from typing import Any

__all__ = ["fill", "wrong_value"]

_WORDS = (
    "alpha", "amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "harbor", "indigo",
    "juniper", "kestrel", "lumen", "maple", "nectar", "orbit", "pebble", "quartz", "raven",
    "sierra", "tundra", "umber", "violet", "willow", "yonder", "zephyr",
)  # fmt: skip
_FORMATS = {
    "date-time": "2024-05-17T10:30:00Z",
    "date": "2024-05-17",
    "time": "10:30:00",
    "email": "someone@example.com",
    "uri": "https://example.com/item",
    "url": "https://example.com/item",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "duration": "P1D",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
}
_MAX_DEPTH = 6
_OPTIONAL_RATE = 0.5
# Extra draws a ``uniqueItems`` array may make to reach its ``minItems`` once duplicates are
# dropped, per item it needs.
_UNIQUE_DRAWS = 8


def fill(schema: dict[str, Any], rng: random.Random, *, root: dict[str, Any] | None = None) -> Any:
    """Return a value valid under ``schema`` (``root`` holds the ``$defs`` refs point into)."""
    return _Filler(rng, root if root is not None else schema).value(schema, 0)


class _Filler:
    def __init__(self, rng: random.Random, root: dict[str, Any]) -> None:
        self.rng = rng
        self.defs: dict[str, Any] = root.get("$defs") or {}

    def value(self, schema: object, depth: int) -> Any:
        if not isinstance(schema, dict):
            return None  # the schema `true` (or a malformed one): anything goes
        if "$ref" in schema:
            return self.value(self.defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return self.rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return self.value(self._branch(schema[key], depth), depth)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged.update(part)
            return self.value(merged, depth)
        return self._typed(schema, _pick_type(schema.get("type"), self.rng, depth), depth)

    def _branch(self, branches: list[Any], depth: int) -> Any:
        branches = _numeric_text_dropped(branches)
        # Deep down, prefer null (or the first branch) so recursive models end.
        if depth >= _MAX_DEPTH:
            nulls = [b for b in branches if isinstance(b, dict) and b.get("type") == "null"]
            return nulls[0] if nulls else branches[0]
        return self.rng.choice(branches)

    def _typed(self, schema: dict[str, Any], kind: str | None, depth: int) -> Any:
        if kind == "string":
            return self._string(schema)
        if kind == "integer":
            return self._integer(schema)
        if kind == "number":
            return self._number(schema)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            return self._array(schema, depth)
        if kind == "object" or "properties" in schema:
            return self._object(schema, depth)
        return self.rng.choice(_WORDS)  # untyped: a string is as valid as anything

    def _string(self, schema: dict[str, Any]) -> str:
        fmt = schema.get("format")
        if fmt in _FORMATS:
            return _FORMATS[fmt]
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", max(low, 24)))
        text = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 3)))
        while len(text) < low:
            text += self.rng.choice(string.ascii_lowercase)
        return text[:high]

    def _integer(self, schema: dict[str, Any]) -> int:
        low, high = _bounds(schema, 0, 100)
        low_i = int(low) + (1 if "exclusiveMinimum" in schema and low == int(low) else 0)
        high_i = int(high) - (1 if "exclusiveMaximum" in schema and high == int(high) else 0)
        if high_i < low_i:
            high_i = low_i
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            first = -(-low_i // step) * step
            return first if first <= high_i else low_i
        return self.rng.randint(low_i, high_i)

    def _number(self, schema: dict[str, Any]) -> float:
        low, high = _bounds(schema, 0.0, 100.0)
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and not isinstance(step, bool) and step > 0:
            return self._multiple(schema, low, high, float(step))
        value = round(self.rng.uniform(low, high), 2)
        if value <= low and "exclusiveMinimum" in schema:
            value = (low + high) / 2
        if value >= high and "exclusiveMaximum" in schema:
            value = (low + high) / 2
        return float(value)

    def _multiple(self, schema: dict[str, Any], low: float, high: float, step: float) -> float:
        first = math.ceil(low / step)
        last = math.floor(high / step)
        if "exclusiveMinimum" in schema and first * step <= low:
            first += 1
        if "exclusiveMaximum" in schema and last * step >= high:
            last -= 1
        # Rounded to the step's own decimals, so 3 * 0.1 is written 0.3, not
        # 0.30000000000000004.
        exponent = decimal.Decimal(repr(step)).as_tuple().exponent
        places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return float(round(self.rng.randint(first, max(first, last)) * step, places))

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        if isinstance(schema.get("prefixItems"), list):
            return [self.value(item, depth + 1) for item in schema["prefixItems"]]
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, 3)))
        count = low if depth >= _MAX_DEPTH else self.rng.randint(low, max(low, min(high, low + 3)))
        items = schema.get("items", {})
        if schema.get("uniqueItems"):
            return self._unique(items, count, depth)
        return [self.value(items, depth + 1) for _ in range(count)]

    def _unique(self, items: object, count: int, depth: int) -> list[Any]:
        """Return ``count`` distinct items, or as many as a bounded number of draws finds.

        A ``set`` must not lose items to de-duplication below its ``minItems``; an item type
        with fewer values (``set[bool]`` has two) gets all it has.
        """
        values: list[Any] = []
        for _ in range(count + count * _UNIQUE_DRAWS):
            value = self.value(items, depth + 1)
            if value not in values:
                values.append(value)
                if len(values) == count:
                    break
        return values

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        for name, sub in (schema.get("properties") or {}).items():
            if name in required or (depth < _MAX_DEPTH and self.rng.random() < _OPTIONAL_RATE):
                out[name] = self.value(sub, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not schema.get("properties") and depth < _MAX_DEPTH:
            for _ in range(self.rng.randint(0, 2)):
                out[self.rng.choice(_WORDS)] = self.value(extra, depth + 1)
        return out


def _numeric_text_dropped(branches: list[Any]) -> list[Any]:
    """Drop a plain string branch that sits beside a number branch.

    Pydantic writes a ``Decimal`` as ``anyOf: [number, string]``, where only a string that
    holds a number is valid. A number is valid there, and for ``float | str`` too.
    """
    if len(branches) < 2 or not any(_is_kind(b, "number") for b in branches):
        return branches
    kept = [b for b in branches if not (_is_kind(b, "string") and set(b) <= {"type", "pattern"})]
    return kept or branches


def _is_kind(branch: object, kind: str) -> bool:
    return isinstance(branch, dict) and branch.get("type") == kind


def _pick_type(kind: object, rng: random.Random, depth: int) -> str | None:
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str)]
        if not kinds:
            return None
        if depth >= _MAX_DEPTH and "null" in kinds:
            return "null"
        return rng.choice(kinds)
    return kind if isinstance(kind, str) else None


def _bounds(schema: dict[str, Any], low: float, high: float) -> tuple[float, float]:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if lo is not None and hi is None:
        hi = lo + (high - low)
    if hi is not None and lo is None:
        lo = hi - (high - low)
    return (float(lo if lo is not None else low), float(hi if hi is not None else high))


def wrong_value(schema: object, defs: dict[str, Any] | None = None) -> Any:
    """Return a value whose JSON type ``schema`` rejects (a string for a number, ...)."""
    if not isinstance(schema, dict):
        return {"unexpected": True}
    if "$ref" in schema and defs:
        return wrong_value(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    kinds = _types_of(schema)
    for candidate in ("not a number", 12345, ["unexpected"], {"unexpected": True}):
        if _json_type(candidate) not in kinds:
            return candidate
    return {"unexpected": True}


def _types_of(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        kinds = {kind}
    elif isinstance(kind, list):
        kinds = {k for k in kind if isinstance(k, str)}
    else:
        kinds = set()
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, dict):
                kinds |= _types_of(branch)
    if "enum" in schema:
        kinds |= {_json_type(v) for v in schema["enum"]}
    if kinds & {"integer", "number"}:
        kinds |= {"integer", "number"}  # an integer is a valid number, and the other way
    return kinds


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"
