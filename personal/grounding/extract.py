"""Ownership-phrase extraction from a PersONAL scene summary.

Turns "The blue mug in the kitchen belongs to Tom. Lily and Tom share the sofa
in the living room." into ``OwnershipPhrase`` records whose ``.text`` reads
"person x owns the object y in the room z" (the K phrases of RPG, Algorithm 1).

* ``BuiltinExtractor`` — deterministic rules for free-form English
  (``personal.grounding.ownership_rules``): several owners per object, "jointly / both /
  in various combinations", possessives, verbs of use ("enjoys", "sleeps in"), objects
  listed before their owners, references across sentences; then a recall layer
  (``personal.grounding.associate``) that pairs the people and objects the rules left unpaired
  by proximity, over a part-of-speech tagger's noun phrases. Precision and recall on the
  development set ``test/data/ownership_dev.json``: ``bench/bench_extract.py``.
* ``EpisodeExtractor`` — the episode file's own ``extracted_summary`` (one "X owns the Y
  in the Z" phrase per relation), as the paper's RPG used it; the builtin rules where an
  episode has none.
* ``LLMExtractor`` — any OpenAI-compatible ``/v1/chat/completions`` endpoint.
* ``make_extractor(name, **kwargs)`` — "builtin", "episode" or "llm".
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
_ARTICLE = re.compile(r"^(?:both\s+)?(?:the|a|an|one)\s+", re.IGNORECASE)


class BuiltinExtractor:
    """Rule-based ownership extraction (no model, deterministic): the clause rules, then the recall
    layer (``personal.grounding.associate``: people and objects that co-occur, paired by proximity).
    ``recall_layer=False`` gives the clause rules alone (higher precision, lower recall)."""

    name = "builtin"

    def __init__(self, recall_layer: bool = True):
        self.recall_layer = recall_layer

    def extract(self, summary: str) -> list[OwnershipPhrase]:
        from personal.grounding.ownership_rules import extract_relations

        return [OwnershipPhrase(p, o, r) for p, o, r in extract_relations(summary or "", self.recall_layer)]

    __call__ = extract


_EXTRACTED = re.compile(r"^\s*(?P<person>.+?)\s+owns?\s+(?:the\s+|a\s+|an\s+)?(?P<object>.+?)(?:\s+in\s+the\s+(?P<room>[^.]+?))?\s*\.?\s*$",
                        re.IGNORECASE | re.DOTALL)


def parse_extracted_phrase(text: str) -> OwnershipPhrase | None:
    """One ``extracted_summary`` line ("Piper owns carpet stairs ... in the Hallway") -> phrase."""
    m = _EXTRACTED.match(" ".join(text.split()))
    if not m:
        return None
    room = m.group("room")
    return OwnershipPhrase(m.group("person").strip(), m.group("object").strip(" ."), room.strip(" .").lower() if room else None)


class EpisodeExtractor:
    """The episode's own ``extracted_summary`` — the phrases the PersONAL authors give with each
    episode and the paper's RPG used — instead of reading the summary. Episodes without one
    (or lines that are not "X owns the Y") fall back to the builtin rules on the summary;
    ``fallbacks`` counts them for the report."""

    name = "episode"
    uses_extracted_summary = True

    def __init__(self):
        self.fallbacks = 0
        self._rules = BuiltinExtractor()

    def extract(self, summary: str, extracted_summary=None) -> list[OwnershipPhrase]:
        phrases = [p for p in (parse_extracted_phrase(t) for t in (extracted_summary or []) if isinstance(t, str)) if p]
        if phrases:
            return list(dict.fromkeys(phrases))
        self.fallbacks += 1
        return self._rules.extract(summary)

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
        try:
            reply = self._post(payload)
        except ExtractorError as exc:
            # some OpenAI-compatible servers reject response_format; ask again without it
            text = str(exc)
            if "response_format" not in payload or not re.search(r"HTTP 4(?:00|22)", text) \
                    or not re.search(r"response_format|json", text.split(":", 1)[-1], re.IGNORECASE):
                raise
            payload.pop("response_format")
            reply = self._post(payload)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ExtractorError(f"LLM endpoint {self.url}: reply lacks choices[0].message.content: {str(reply)[:200]}") from None
        return _parse_relations(content or "", self.url)

    __call__ = extract


EXTRACTORS = ("builtin", "episode", "llm")


def make_extractor(name: str = "builtin", **kwargs):
    """"builtin" -> BuiltinExtractor(); "episode" -> EpisodeExtractor(); "llm" -> LLMExtractor(**kwargs)."""
    if name in ("builtin", "episode"):
        if kwargs:
            raise TypeError(f"{name} extractor takes no options, got {sorted(kwargs)}")
        return BuiltinExtractor() if name == "builtin" else EpisodeExtractor()
    if name == "llm":
        return LLMExtractor(**kwargs)
    raise ValueError(f"unknown extractor {name!r}; expected one of {EXTRACTORS}")
