"""Reading JSON out of a language model's reply (shared by every LLM/VLM client here).

Models wrap JSON in ```json fences, or add a sentence before or after it; the candidates
below are tried in order and the first that parses wins.
"""
from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_GREEDY = re.compile(r"\{.*\}|\[.*\]", re.S)


def strip_fences(text: str) -> str:
    """The reply without a surrounding ```json ... ``` fence."""
    return re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())


def _first_balanced(text: str) -> str | None:
    """The first {...} or [...] span with balanced brackets (ignores brackets inside strings)."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return None
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            escaped = not escaped and ch == "\\"
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def json_in_reply(text: str) -> Any | None:
    """The JSON value a reply carries, or None when no candidate parses."""
    candidates = [strip_fences(text)]
    fence = _FENCE.search(text)
    if fence:
        candidates.append(fence.group(1).strip())
    balanced = _first_balanced(text)
    if balanced:
        candidates.append(balanced)
    greedy = _GREEDY.search(text)
    if greedy:
        candidates.append(greedy.group(0))
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    return None
