"""JSON from peers (ROS ``arguments_json`` / ``plan_json``, MQTT command payloads) with a depth
bound: Python's ``json`` recurses once per nesting level, so a 100,000-deep ``[[[…]]]`` raised
``RecursionError`` (not ``ValueError``) and the request went unanswered. Here it is a
``ValueError`` that names the limit, like every other malformed input, checked before parsing.
"""
from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64  # arguments and plans nest a few levels; 64 is far beyond any real one
_STRING = re.compile(r'"(?:\\.|[^"\\])*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class JsonDepthError(ValueError):
    pass


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting of JSON text, brackets inside strings not counted (linear, no recursion)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, **kwargs) -> Any:
    """``json.loads`` that raises ``JsonDepthError`` (a ValueError) for text nested deeper than ``max_depth``."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", errors="replace")
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonDepthError(f"JSON nested {depth} levels deep; at most {max_depth} are accepted")
    return json.loads(text, **kwargs)
