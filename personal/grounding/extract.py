"""Ownership-phrase extraction from a PersONAL scene summary.

Turns "The blue mug in the kitchen belongs to Tom. Lily and Tom share the sofa
in the living room." into ``OwnershipPhrase`` records whose ``.text`` reads
"person x owns the object y in the room z" (the K phrases of RPG, Algorithm 1).

* ``BuiltinExtractor`` — deterministic rules; covers every sentence form the
  synthetic generator writes and common plain-English ownership sentences.
* ``LLMExtractor`` — any OpenAI-compatible ``/v1/chat/completions`` endpoint.
* ``make_extractor(name, **kwargs)`` — "builtin" or "llm".
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import requests

from personal.llm_reply import json_in_reply


@dataclass(frozen=True)
class OwnershipPhrase:
    person: str
    object: str  # without leading article: "blue mug on the kitchen counter"
    room: str | None = None

    @property
    def text(self) -> str:
        s = f"{self.person} owns the {self.object}"
        return f"{s} in the {self.room}" if self.room else s

    def to_dict(self) -> dict:
        return {"person": self.person, "object": self.object, "room": self.room}


class ExtractorError(RuntimeError):
    """Extraction failed (endpoint unreachable, bad reply...); the message says where."""


# ---------------------------------------------------------------- built-in rules
_NAME = r"(?!(?:The|This|These|That|In|Both|It|He|She|They|Each|Every|A|An)\b)[A-Z][\w'-]*"
_NAMES = rf"{_NAME}(?:(?:\s*,\s*and\s+|\s*,\s*|\s+and\s+){_NAME})*"
_OWN_VERBS = r"(?:also\s+)?(?:both\s+)?(?:owns?|shares?|has|have|possess(?:es)?|(?:is|are)\s+the\s+owners?\s+of)"
_PATTERNS = (
    # "<people> owns / share / is the owner of <objects>"
    re.compile(rf"^(?P<people>{_NAMES})\s+{_OWN_VERBS}\s+(?P<objs>.+)$"),
    # "<objects> belongs to (both) <people>"
    re.compile(rf"^(?P<objs>.+?)\s+belongs?\s+to\s+(?:both\s+)?(?P<people>{_NAMES})$"),
    # "<objects> is owned / shared by <people>"
    re.compile(rf"^(?P<objs>.+?)\s+(?:is|are)\s+(?:owned|shared|used)\s+by\s+(?:both\s+)?(?P<people>{_NAMES})$"),
    # "<object> is <person>'s"
    re.compile(rf"^(?P<objs>.+?)\s+(?:is|are)\s+(?P<people>{_NAMES})(?:'s|’s|')$"),
)
_LEAD_ROOM = re.compile(r"^In\s+the\s+(?P<room>[^,]+),\s*(?P<rest>.+)$", re.IGNORECASE)
_SPLIT_NAMES = re.compile(r"\s*,\s*and\s+|\s*,\s*|\s+and\s+")
_SPLIT_OBJS = re.compile(r"\s*,?\s+and\s+(?=(?:the|a|an|both\s+the)\s)|\s*,\s+(?=(?:the|a|an)\s)", re.IGNORECASE)
_CLAUSES = re.compile(r"\s*,\s*(?:while|whereas|but)\s+|\s*;\s*", re.IGNORECASE)
_DISCOURSE = re.compile(r"^(?:meanwhile|also|finally|additionally|moreover|furthermore|besides|lastly|then|and|so)\b\s*,?\s*", re.IGNORECASE)
_PREPOSITIONS = re.compile(r"\s+(?:on|under|in|next|near|by|with|at|against|beside|behind|above|below)\b")


def _head_noun(obj: str) -> str:
    """Object phrase up to its first preposition ("cabinet on the left" -> "cabinet")."""
    return _PREPOSITIONS.split(obj, maxsplit=1)[0]


_ARTICLE = re.compile(r"^(?:both\s+)?(?:the|a|an|one)\s+", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+", text.strip()) if s.strip()]


def _objects(objs: str, room_ctx: str | None) -> list[tuple[str, str | None]]:
    out = []
    for item in _SPLIT_OBJS.split(objs.strip()):
        item = _ARTICLE.sub("", item.strip())
        if not item:
            continue
        head, sep, room = item.rpartition(" in the ")
        if sep:
            out.append((head.strip(), room.strip()))
        else:
            out.append((item, room_ctx))
    return out


class BuiltinExtractor:
    """Rule-based ownership extraction (no model, deterministic)."""

    name = "builtin"

    def extract(self, summary: str) -> list[OwnershipPhrase]:
        phrases: list[OwnershipPhrase] = []
        for sentence in split_sentences(summary or ""):
            s = sentence.rstrip(".!?;").strip()
            room_ctx = None
            m = _LEAD_ROOM.match(s)
            if m:
                room_ctx, s = m.group("room").strip(), m.group("rest").strip()
            last_head = None
            for clause in _CLAUSES.split(s):
                clause = _DISCOURSE.sub("", clause.strip())
                for pat in _PATTERNS:
                    m = pat.match(clause)
                    if not m:
                        continue
                    people = [p for p in _SPLIT_NAMES.split(m.group("people")) if p]
                    for obj, room in _objects(m.group("objs"), room_ctx):
                        if obj.startswith("one ") and last_head:  # "the one on the right" -> "cabinet on the right"
                            obj = last_head + obj[3:]
                        last_head = _head_noun(obj)
                        for person in people:
                            ph = OwnershipPhrase(person, obj, room)
                            if ph not in phrases:
                                phrases.append(ph)
                    break
        return phrases

    __call__ = extract


# ---------------------------------------------------------------- LLM over HTTP
_SYSTEM_PROMPT = (
    "You extract object ownership from a description of a home. Return only JSON of the form "
    '{"relations": [{"person": "Lisa", "object": "red backpack under the desk", "room": "office"}]} '
    "with one entry per (person, object) pair; shared objects get one entry per owner. "
    "Write the object without a leading article and the room without 'the'; use null when no room is given."
)


def _parse_relations(content: str, url: str) -> list[OwnershipPhrase]:
    doc = json_in_reply(content)
    if doc is None:
        raise ExtractorError(f"LLM at {url} did not return JSON: {content[:200]!r}")
    rels = doc.get("relations", doc.get("ownership")) if isinstance(doc, dict) else doc
    if not isinstance(rels, list):
        raise ExtractorError(f"LLM at {url}: expected a 'relations' list, got {str(doc)[:200]!r}")
    out: list[OwnershipPhrase] = []
    for k, r in enumerate(rels):
        if not isinstance(r, dict) or "person" not in r or "object" not in r:
            raise ExtractorError(f"LLM at {url}: relations[{k}] lacks 'person'/'object': {r!r}")
        people = r["person"] if isinstance(r["person"], list) else [r["person"]]
        room = r.get("room")
        room = re.sub(r"^the\s+", "", str(room).strip(), flags=re.IGNORECASE) if room not in (None, "", "null") else None
        obj = _ARTICLE.sub("", str(r["object"]).strip())
        for p in people:
            ph = OwnershipPhrase(str(p).strip(), obj, room)
            if ph not in out:
                out.append(ph)
    return out


class LLMExtractor:
    """Ownership extraction by an OpenAI-compatible chat endpoint.

    ``base_url`` is the API root including ``/v1`` (e.g. ``http://localhost:8000/v1``);
    defaults come from PERSONAL_LLM_BASE_URL / PERSONAL_LLM_MODEL / PERSONAL_LLM_API_KEY."""

    name = "llm"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout: float = 30, retries: int = 2, json_mode: bool = True):
        self.base_url = (base_url or os.environ.get("PERSONAL_LLM_BASE_URL") or "").rstrip("/")
        self.model = model or os.environ.get("PERSONAL_LLM_MODEL") or ""
        self.api_key = api_key if api_key is not None else os.environ.get("PERSONAL_LLM_API_KEY")
        if not self.base_url:
            raise ExtractorError("LLMExtractor needs base_url (or PERSONAL_LLM_BASE_URL), e.g. http://localhost:8000/v1")
        if not self.model:
            raise ExtractorError("LLMExtractor needs model (or PERSONAL_LLM_MODEL)")
        self.timeout, self.retries, self.json_mode = timeout, retries, json_mode

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _post(self, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                resp = requests.post(self.url, json=payload, headers=headers, timeout=self.timeout)
            except requests.RequestException as exc:  # connection refused, DNS, timeout
                last = exc
            else:
                if resp.status_code >= 500 or resp.status_code == 429:
                    last = ExtractorError(f"LLM endpoint {self.url} answered HTTP {resp.status_code}: {resp.text[:200]}")
                elif resp.status_code >= 400:
                    raise ExtractorError(f"LLM endpoint {self.url} answered HTTP {resp.status_code}: {resp.text[:200]}")
                else:
                    try:
                        return resp.json()
                    except ValueError:
                        raise ExtractorError(f"LLM endpoint {self.url} returned non-JSON body: {resp.text[:200]!r}") from None
            if attempt < self.retries:
                time.sleep(min(0.2 * 2**attempt, 2.0))
        raise ExtractorError(f"LLM endpoint {self.url} unreachable after {self.retries + 1} tries: {last}")

    def extract(self, summary: str) -> list[OwnershipPhrase]:
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": summary}],
        }
        if self.json_mode:
            payload["response_format"] = {"type": "json_object"}
        reply = self._post(payload)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ExtractorError(f"LLM endpoint {self.url}: reply lacks choices[0].message.content: {str(reply)[:200]}") from None
        return _parse_relations(content or "", self.url)

    __call__ = extract


def make_extractor(name: str = "builtin", **kwargs):
    """"builtin" -> BuiltinExtractor(); "llm" -> LLMExtractor(**kwargs)."""
    if name == "builtin":
        if kwargs:
            raise TypeError(f"builtin extractor takes no options, got {sorted(kwargs)}")
        return BuiltinExtractor()
    if name == "llm":
        return LLMExtractor(**kwargs)
    raise ValueError(f"unknown extractor {name!r}; expected 'builtin' or 'llm'")
