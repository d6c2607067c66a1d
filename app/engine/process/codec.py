"""The typed values of the engine (engine/types.py and the rest) as JSON, and back, checked
against their own type hints: what the engine's process (#29) and the window's process say to
each other.

Not pickle: the child process runs llama.cpp over a file the user downloaded, and a file that
takes over the child must not take over the window through what the child sends. Reading a
frame here builds only the classes in CLASSES, each field checked against its declared type
(an int where an int is declared, a tuple of ToolCall where that is declared, a Path from a
string), so the worst a hostile child can send is a value of the right shape, and a message of
the wrong shape is a ProtocolError, never an exception from deep inside a constructor.

One rule for every class, read from the dataclass itself, so a field added to ReplyStats or
ModelDescription travels without anyone writing code for it: a dataclass is {"$": its name,
field: value…}, an enum its value, a Path its string, bytes their base64, a tuple a list; None,
bools, ints, floats (finite or not: "nan", "inf") and strings as JSON has them.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import math
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

from ...images.image import Image
from ..gguf.modelfile import ModelInfo, Token
from ..kv.cache import SavedStates
from ..logprobs import Alternative, TokenLogprob
from ..options import LoadOptions
from ..sampling import ModelDefaults, SamplingParams
from ..tools.types import ResponseFormat, Tool, ToolCall, ToolCallDelta, ToolChoice, ToolUse
from ..types import (
    DeviceInfo,
    DeviceReport,
    LocalModel,
    ModelDescription,
    OffloadSupport,
    RemoteModel,
    ReplyStats,
    ServerConfig,
)
from .protocol import EmbedderInfo, Failure, LoadRequest, StatesChange, StreamRequest, Vectors

# Every class a frame may hold, by name: nothing else is ever built from one.
CLASSES: dict[str, type] = {cls.__name__: cls for cls in (
    Alternative, DeviceInfo, DeviceReport, EmbedderInfo, Failure, Image, LoadOptions, LoadRequest, LocalModel, ModelDefaults, ModelDescription, ModelInfo,
    OffloadSupport, RemoteModel, ReplyStats, ResponseFormat, SamplingParams, SavedStates, ServerConfig, StatesChange, StreamRequest, Token,
    TokenLogprob, Tool, ToolCall, ToolCallDelta, ToolChoice, ToolUse, Vectors,
)}
MAX_DEPTH = 32  # a value nested deeper than any of these classes is: refused, not recursed into
MAX_INT = 2**63 - 1  # no count, id or size the engine sends is larger: a larger one is refused, not computed with
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ProtocolError(ValueError):
    """A value that is not what the protocol carries: the other side is broken or hostile."""


def encode(value: Any) -> Any:
    """`value` as JSON-ready data."""
    if value is None or isinstance(value, (bool, int, str)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else ("nan" if math.isnan(value) else "inf" if value > 0 else "-inf")
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if CLASSES.get(name) is not type(value):
            raise ProtocolError(f"{name} is not a value the protocol carries")
        return {"$": name, **{field.name: encode(getattr(value, field.name)) for field in _fields(type(value))}}
    if isinstance(value, (tuple, list)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {str(key): encode(item) for key, item in value.items()}
    raise ProtocolError(f"a {type(value).__name__} is not a value the protocol carries")


def _key(key: str, expected: Any) -> Any:
    """An object's key: JSON keys are strings, so an int key (a logit bias's token id) travels as
    its digits and is read back as an int."""
    if expected is int:
        digits = key[1:] if key.startswith("-") else key
        if not (digits.isascii() and digits.isdigit()) or len(key) > 20:
            raise ProtocolError(f"{_shown(key)} where an integer key was expected")
        return _plain(int(key), int, 0)
    return _decode(key, expected, 0)


def decode(data: Any, expected: Any = Any) -> Any:
    """The value `data` stands for, checked against the type `expected` (a class, a union, a
    tuple[…] or dict[…], or Any: then a dataclass must name itself). ProtocolError otherwise."""
    return _decode(data, expected, 0)


def _decode(data: Any, expected: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("a value nested too deep")
    origin = typing.get_origin(expected)
    if expected is Any:
        if isinstance(data, dict) and "$" in data:
            return _instance(data, depth)
        if isinstance(data, (list, dict)):
            raise ProtocolError("a list or object where a plain value was expected")
        return data
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(expected)
        if type(data) is options[0] and options[0] in (str, bool):  # what the first option takes as it is:
            return data  # a reply's text, every token
        if data is None and type(None) in options:
            return None
        for option in (option for option in options if option is not type(None)):
            try:
                return _decode(data, option, depth + 1)
            except ProtocolError:
                continue
        raise ProtocolError(f"{_shown(data)} is none of {expected}")
    if origin is tuple:
        args = typing.get_args(expected)
        if not isinstance(data, list):
            raise ProtocolError(f"{_shown(data)} where a list was expected")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(item, args[0], depth + 1) for item in data)
        if len(args) != len(data):
            raise ProtocolError(f"a list of {len(data)} where {len(args)} were expected")
        return tuple(_decode(item, arg, depth + 1) for item, arg in zip(data, args))
    if origin is dict:
        key_type, value_type = typing.get_args(expected)
        if not isinstance(data, dict) or "$" in data:
            raise ProtocolError(f"{_shown(data)} where an object was expected")
        return {_key(key, key_type): _decode(item, value_type, depth + 1) for key, item in data.items()}
    if origin is typing.Literal:
        if data not in typing.get_args(expected):
            raise ProtocolError(f"{_shown(data)} is not one of {typing.get_args(expected)}")
        return data
    if isinstance(expected, type):
        return _plain(data, expected, depth)
    raise ProtocolError(f"the protocol does not carry {expected}")


def _plain(data: Any, expected: type, depth: int) -> Any:
    if expected in (dict, list):  # a JSON schema, a tool's parameters: JSON as it is, nothing built from it
        if not isinstance(data, expected):
            raise ProtocolError(f"{_shown(data)} where a JSON {expected.__name__} was expected")
        return _json(data, depth)
    if dataclasses.is_dataclass(expected):
        if not isinstance(data, dict) or data.get("$") != expected.__name__:
            raise ProtocolError(f"{_shown(data)} where a {expected.__name__} was expected")
        return _instance(data, depth)
    if issubclass(expected, enum.Enum):
        try:
            return expected(data)
        except ValueError:
            raise ProtocolError(f"{_shown(data)} is not a {expected.__name__}") from None
    if expected is Path:
        if not isinstance(data, str) or "\x00" in data:
            raise ProtocolError(f"{_shown(data)} where a path was expected")
        return Path(data)
    if expected is bytes:
        try:
            return base64.b64decode(data, validate=True) if isinstance(data, str) else _bad(data, "bytes")
        except binascii.Error:
            raise ProtocolError(f"{_shown(data)} where bytes (base64) were expected") from None
    if expected is float:
        if isinstance(data, str) and data in _FLOATS:
            return _FLOATS[data]
        if isinstance(data, float) or isinstance(data, int) and not isinstance(data, bool) and abs(data) <= MAX_INT:
            return float(data)
    elif expected is int:
        if isinstance(data, int) and not isinstance(data, bool) and abs(data) <= MAX_INT:
            return data
    elif expected in (bool, str) and type(data) is expected:
        return data
    elif expected is type(None) and data is None:
        return None
    raise ProtocolError(f"{_shown(data)} where a {expected.__name__} was expected")


def _json(data: Any, depth: int) -> Any:
    """Plain JSON data, checked to be only that (and not too deep)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("a value nested too deep")
    if isinstance(data, dict):
        return {str(key): _json(value, depth + 1) for key, value in data.items()}
    if isinstance(data, list):
        return [_json(value, depth + 1) for value in data]
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    raise ProtocolError(f"{_shown(data)} is not JSON")


def _instance(data: dict, depth: int) -> Any:
    cls = CLASSES.get(data.get("$")) if isinstance(data.get("$"), str) else None
    if cls is None:
        raise ProtocolError(f"{_shown(data.get('$'))} is not a value the protocol carries")
    hints = _hints(cls)
    fields = _fields(cls)
    unknown = set(data) - {"$"} - {field.name for field in fields}
    if unknown:
        raise ProtocolError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    values = {}
    for field in fields:
        if field.name in data:
            values[field.name] = _decode(data[field.name], hints[field.name], depth + 1)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ProtocolError(f"{cls.__name__} without its {field.name}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a class's own checks (ServerConfig's address, say)
        raise ProtocolError(f"{cls.__name__}: {exc}") from None


@cache
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return tuple(field for field in dataclasses.fields(cls) if field.init)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _bad(data: Any, what: str):
    raise ProtocolError(f"{_shown(data)} where {what} was expected")


def _shown(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."
