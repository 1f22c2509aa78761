"""Reading a chat model's answer: the first JSON value in it, checked against a small JSON-schema subset, and
its text made storable. Plain Python: no Django import, no network.

- `extract_json(text, expect=None)`: the first JSON object or array in the answer; code fences, prose around
  it and <think> blocks are tolerated. None there: EvalsiteError("llm-unreadable", status 502).
- `validate(data, schema)`: type, required, properties, items, enum, minLength; the first misfit raises
  EvalsiteError("llm-unreadable") naming its path ("$.answer").
- `storable(text)`: NUL removed and lone surrogates replaced, so every database and JSON encoder takes it;
  strings read by `extract_json` are made storable already.

evalsite.llm.client's ChatClient.complete_json reads its answers with these; callers that take the plain text of
`complete` (the answer writer, the question writer, the judge) call them directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from evalsite.errors import EvalsiteError

__all__ = ["extract_json", "storable", "validate"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_decoder = json.JSONDecoder()


def extract_json(text: str, *, expect: str | None = None) -> Any:
    """The first JSON object or array in a model's answer.

    Fenced blocks (```json ... ``` or plain ```) are tried first, then the text itself from each `{` or `[`
    on; prose before and after is ignored, as are <think>...</think> blocks. With `expect` ("object" or
    "array") only a value of that kind counts. Raises EvalsiteError("llm-unreadable") when there is none."""
    cleaned = _THINK.sub("", text or "")
    wanted: tuple[type, ...] = {"object": (dict,), "array": (list,)}.get(expect or "", (dict, list))
    fenced = [body for _, body in _FENCE.findall(cleaned)]
    for source in [*fenced, cleaned]:
        for match in re.finditer(r"[{\[]", source):
            try:
                value, _ = _decoder.raw_decode(source, match.start())
            except ValueError:
                continue
            if isinstance(value, wanted):
                return _storable_json(value)
    kind = expect or "object or array"
    raise EvalsiteError(
        "llm-unreadable",
        f"The model's answer holds no JSON {kind}.",
        details={"path": "$", "answer": (text or "")[:200]},
        status=502,
    )


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(data: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Check data against a JSON-schema subset: type (a name or a list of names), required, properties,
    items, enum, minLength. Raises EvalsiteError("llm-unreadable") naming the first offending path."""
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        unknown = [n for n in names if n not in _TYPES]
        if unknown:
            raise ValueError(f"unsupported schema type {unknown} at {path}")
        if not any(_TYPES[n](data) for n in names):
            _unreadable(path, f"expected {' or '.join(names)}, got {_type_name(data)}")
    if "enum" in schema and data not in schema["enum"]:
        _unreadable(path, f"expected one of {list(schema['enum'])!r}, got {data!r}"[:300])
    if "minLength" in schema and isinstance(data, str) and len(data) < schema["minLength"]:
        _unreadable(path, f"expected at least {schema['minLength']} characters, got {len(data)}")
    if isinstance(data, dict):
        for key in schema.get("required", ()):
            if key not in data:
                _unreadable(f"{path}.{key}", "required property missing")
        for key, subschema in (schema.get("properties") or {}).items():
            if key in data:
                validate(data[key], subschema, f"{path}.{key}")
    if isinstance(data, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(data):
            validate(item, schema["items"], f"{path}[{index}]")


def _unreadable(path: str, problem: str) -> NoReturn:
    raise EvalsiteError(
        "llm-unreadable",
        f"The model's answer does not fit the schema at {path}: {problem}.",
        details={"path": path},
        status=502,
    )


def _type_name(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


_UNSTORABLE = re.compile("\x00|[\ud800-\udfff]")


def storable(text: str) -> str:
    """A model's text as every database and JSON encoder takes it: NUL removed, a lone surrogate (from a JSON
    escape such as \\ud800) replaced by U+FFFD. A model's output is stored and rendered, so it is cleaned here."""
    return _UNSTORABLE.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", text)


def _storable_json(value: Any) -> Any:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [_storable_json(v) for v in value]
    if isinstance(value, dict):
        return {storable(str(k)): _storable_json(v) for k, v in value.items()}
    return value
