"""Plain statements about a household's things -> events -> changes in its memory.

"I bought a new blue mug", "Tom gave his lamp to Anna", "the old backpack is gone",
"Actually, the red mug is Lisa's, not Tom's". PersONAL's summaries describe a home at one
moment; these statements are how it changes afterwards (the paper's "dynamic ownership").

Two readers return the same :class:`Event` records:

* :class:`BuiltinStatementReader` — deterministic patterns, one function per construction
  (acquisition, gift, discard, correction), then the summary extractor's ownership rules
  (``personal.grounding.extract.BuiltinExtractor``) for a plain "X belongs to Y".
* :class:`LLMStatementReader` — any OpenAI-compatible endpoint, through the same HTTP client as
  the LLM ownership extractor.

:func:`apply_events` resolves each event's object against the memory ("his lamp" = the lamp
Tom owns now, "the old backpack" = the earliest backpack still here) and writes it, keeping
history; an event that names no known object, or several it cannot tell apart, is reported, never
guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from personal.grounding.extract import BuiltinExtractor, ExtractorError, LLMExtractor
from personal.llm_reply import json_in_reply
from personal.memory.store import HouseholdMemory, ObjectRecord

KINDS = ("acquire", "transfer", "discard", "correct", "own")


@dataclass(frozen=True)
class Event:
    """One change. ``person`` is the new owner (acquire, transfer, correct, own); ``previous``
    the owner it was taken from (transfer, correct) or whose object is gone (discard)."""

    kind: str
    object: str
    person: str | None = None
    previous: str | None = None


@dataclass
class Outcome:
    event: Event
    object_id: int | None
    effect: str
    ok: bool = True


@dataclass
class Applied:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def unresolved(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]


# ---------------------------------------------------------------- the builtin reader
_NAME = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_WHO = rf"(?:{_NAME}|I|We|we)"
_DET = r"(?:a|an|the|this|that|some|one|my|his|her|their|our|(?:{n})'s)\s+".format(n=_NAME)
_TAIL = r"(?:\s+(?:now|today|yesterday|this morning|last week|again|for good|after all))*"
_SELF = {"i": None, "me": None, "myself": None, "my": None, "mine": None}


def _clean_object(text: str) -> str:
    """Without determiner or possessive; "old" / "new" stay: they tell which of several."""
    text = re.sub(rf"^(?:{_DET})", "", text.strip(" ,.!"))
    return re.sub(_TAIL + r"$", "", text).strip(" ,.!")


def _without_age(text: str) -> str:
    return re.sub(r"^(?:brand[- ]new|new|latest)\s+", "", text)


def _age(text: str) -> str | None:
    if re.search(r"\b(?:old|older|previous|former)\b", text):
        return "old"
    if re.search(r"\b(?:new|newer|brand[- ]new|latest)\b", text):
        return "new"
    return None


# Each construction of a kind is one pattern with the same named groups; the first that matches reads it.
_TRANSFER = (
    # "Tom gave his lamp to Anna", "Tom handed his lamp over to Anna"
    rf"^(?P<giver>{_NAME})\s+(?:gave|handed|passed|lent|sold|donated)\s+(?P<obj>{_DET}.+?)\s+(?:over\s+)?to (?P<taker>{_NAME}){_TAIL}$",
    # "Tom gave Anna his lamp"
    rf"^(?P<giver>{_NAME})\s+(?:gave|handed|passed|lent|sold)\s+(?P<taker>{_NAME})\s+(?P<obj>{_DET}.+?){_TAIL}$",
    # "Tom's lamp now belongs to Anna", "Tom's lamp is Anna's now" (only with "now": else it is plain ownership)
    rf"^(?=.*\bnow\b)(?P<giver>{_NAME})'s (?P<obj>.+?) (?:now belongs to|belongs to|is now|is) (?P<taker>{_NAME})(?:'s)?{_TAIL}$",
    # "Anna has Tom's lamp now", "Anna took over Tom's lamp"
    rf"^(?P<taker>{_NAME}) (?:has|took over|inherited|got) (?P<giver>{_NAME})'s (?P<obj>.+?){_TAIL}$",
    # "the green lamp now belongs to Anna", "the green lamp is Anna's now": no giver named, so whoever owned it
    # gives it up ("now" again; "the new lamp is Anna's now" is an acquisition, read by _acquisition)
    rf"^(?=.*\bnow\b)(?!(?:the|this|that) new\b)(?P<giver>)(?P<obj>{_DET}.+?) (?:now belongs to|belongs to|is now|is) "
    rf"(?P<taker>{_NAME})(?:'s)?{_TAIL}$",
)
_CORRECTION = (
    # "the red mug is Lisa's, not Tom's"
    rf"^(?P<obj>{_DET}.+?) (?:is|belongs to) (?P<who>{_NAME})(?:'s)?,? (?:and )?not (?P<old>{_NAME})(?:'s)?$",
    # "the green mug isn't Tom's, it's Lisa's"
    rf"^(?P<obj>{_DET}.+?) (?:isn't|is not|doesn't belong to|does not belong to) (?P<old>{_NAME})(?:'s)?[,;]? "
    rf"it(?:'s| is| belongs to) (?P<who>{_NAME})(?:'s)?$",
    # "Actually, Anna owns the lamp, not Tom"
    rf"^(?P<who>{_NAME}) owns (?P<obj>{_DET}.+?),? not (?P<old>{_NAME})$",
)


def _first_match(patterns: tuple[str, ...], sentence: str) -> re.Match | None:
    return next((m for m in (re.match(p, sentence) for p in patterns) if m), None)


class BuiltinStatementReader:
    """Statements -> events with fixed English patterns (no model, deterministic)."""

    name = "builtin"

    def __init__(self):
        self._ownership = BuiltinExtractor()
        self._forms = (self._correction, self._transfer, self._discard, self._acquisition)

    def read(self, text: str, speaker: str | None = None) -> list[Event]:
        events: list[Event] = []
        for sentence in _sentences(text):
            s = _first_person(_lower_determiner(sentence), speaker)
            for form in self._forms:
                found = form(s)
                if found:
                    events.extend(found)
                    break
            else:
                events.extend(Event("own", p.object, p.person) for p in self._ownership.extract(s))
        return events

    # -- one function per construction ------------------------------------------------
    @staticmethod
    def _acquisition(s: str) -> list[Event]:
        # "Tom bought a new blue mug", "We got Lily a new pink backpack", "Anna has a new lamp now",
        # "There's a new yellow mug for Tom", "Lily was given a green scarf"
        m = re.match(rf"^(?P<who>{_WHO})\s+(?:just\s+|finally\s+|also\s+)?(?:bought|got|purchased|received|ordered|"
                     rf"picked up|has|have|was given|were given)\s+(?:(?P<for>{_NAME}|himself|herself|themselves)\s+)?"
                     rf"(?P<obj>(?:a|an|some|one)\s+.+?)(?:\s+for\s+(?P<for2>{_NAME}))?{_TAIL}$", s)
        if m and not (re.search(r"\bha(?:s|ve)\b", s) and _age(m["obj"]) != "new"):  # "Tom has a mug": ownership
            who = m["for2"] or (m["for"] if m["for"] and m["for"][0].isupper() else None) or m["who"]
            if who.lower() == "we":
                return []
            return [Event("acquire", _clean_object(m["obj"]), who)]
        m = re.match(rf"^(?:[Tt]here(?:'s| is) )(?P<obj>(?:a|an) new\s+.+?) for (?P<who>{_NAME}){_TAIL}$", s)
        if m:
            return [Event("acquire", _clean_object(m["obj"]), m["who"])]
        m = re.match(rf"^(?P<obj>(?:the|this|that) new\s+.+?) (?:is|belongs to) (?P<who>{_NAME})(?:'s)?{_TAIL}$", s)
        if m:
            return [Event("acquire", _clean_object(m["obj"]), m["who"])]
        return []

    @staticmethod
    def _transfer(s: str) -> list[Event]:
        m = _first_match(_TRANSFER, s)
        return [Event("transfer", _clean_object(m["obj"]), m["taker"], m["giver"] or None)] if m else []

    @staticmethod
    def _discard(s: str) -> list[Event]:
        # "the old backpack is gone", "Tom's lamp broke", "the blue mug was thrown out"
        m = re.match(rf"^(?P<obj>{_DET}.+?) (?:is|was|has been) (?:gone|thrown (?:out|away)|broken|lost|donated|"
                     rf"recycled|sold|missing for good){_TAIL}$", s) \
            or re.match(rf"^(?P<obj>{_DET}.+?) (?:broke|is no more){_TAIL}$", s)
        if m:
            return [Event("discard", _clean_object(m["obj"]), previous=_possessor(m["obj"]))]
        # "I threw away my old mug", "We got rid of the red sofa", "Lily lost her backpack"
        m = re.match(rf"^(?P<who>{_WHO}) (?:threw (?:away|out)|got rid of|lost|broke|donated|recycled|sold) "
                     rf"(?P<obj>{_DET}.+?){_TAIL}$", s)
        if m:
            owner = m["who"] if m["who"].lower() != "we" and re.match(r"^(?:my|his|her|their)\b", m["obj"]) else None
            return [Event("discard", _clean_object(m["obj"]), previous=_possessor(m["obj"]) or owner)]
        return []

    @staticmethod
    def _correction(s: str) -> list[Event]:
        s2 = re.sub(r"^(?:actually|correction|sorry|no|wait|oops)[,:!]?\s+(?:I was wrong[,:]?\s+)?", "", s, flags=re.I)
        s2 = re.sub(r"^I was wrong[,:—-]*\s+", "", s2)
        corrected = s2 != s
        m = _first_match(_CORRECTION, s2)
        if m:
            return [Event("correct", _clean_object(m["obj"]), m["who"], m["old"])]
        if corrected:  # "Correction: the lamp belongs to Anna"
            m = re.match(rf"^(?P<obj>{_DET}.+?) (?:is|belongs to) (?P<who>{_NAME})(?:'s)?$", s2) \
                or re.match(rf"^(?P<who>{_NAME}) owns (?P<obj>{_DET}.+?)$", s2)
            if m:
                return [Event("correct", _clean_object(m["obj"]), m["who"])]
        return []


def _possessor(phrase: str) -> str | None:
    m = re.match(rf"^(?P<who>{_NAME})'s\b", phrase.strip())
    return m["who"] if m else None


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\s*;\s*|\s+and then\s+", " ".join(str(text).split()))
    return [p.strip(" .!?") for p in parts if p.strip(" .!?")]


def _lower_determiner(sentence: str) -> str:
    return re.sub(r"^(The|This|That|A|An|My|His|Her|Their|Our|Some|One)\b", lambda m: m[1].lower(), sentence)


def _first_person(sentence: str, speaker: str | None) -> str:
    """"I gave my lamp to Anna" from Tom reads "Tom gave Tom's lamp to Anna"."""
    if not speaker:
        return sentence
    s = re.sub(r"^I\b", speaker, sentence)
    s = re.sub(r"\b(?:my|My)\b", f"{speaker}'s", s)
    s = re.sub(r"\b(?:mine|me|myself)\b", speaker, s)
    return s


# ---------------------------------------------------------------- the LLM reader
_SYSTEM_PROMPT = (
    "You read statements about who owns which objects in a home and how that changed. Return only JSON "
    '{"events": [{"kind": "acquire|transfer|discard|correct|own", "object": "blue mug", "person": "Tom", '
    '"previous": "Anna"}]}. acquire: person got a new object. transfer: previous gave it to person. discard: the '
    "object left the home (previous: its owner if said). correct: the object is person's (not previous's). own: a "
    "plain statement of ownership. Objects without articles or possessives; keep 'old'/'new' only when they tell "
    "which of several; null where not said."
)


class LLMStatementReader:
    """Statements -> events by an OpenAI-compatible chat endpoint (same client as the extractor)."""

    name = "llm"

    def __init__(self, **kwargs):
        self._client = LLMExtractor(**kwargs)

    def read(self, text: str, speaker: str | None = None) -> list[Event]:
        user = f"Speaker: {speaker}\n{text}" if speaker else text
        reply = self._client._post({"model": self._client.model, "temperature": 0, "messages": [
            {"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": user}]})
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ExtractorError(f"LLM at {self._client.url}: no choices[0].message.content in {str(reply)[:200]!r}") from None
        doc = json_in_reply(content)
        rows = doc.get("events") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            raise ExtractorError(f"LLM at {self._client.url}: expected an 'events' list, got {content[:200]!r}")
        out = []
        for k, r in enumerate(rows):
            if not isinstance(r, dict) or r.get("kind") not in KINDS or not r.get("object"):
                raise ExtractorError(f"LLM at {self._client.url}: events[{k}] needs a kind in {KINDS} and an object: {r!r}")
            out.append(Event(r["kind"], str(r["object"]), _opt(r.get("person")), _opt(r.get("previous"))))
        return out


def _opt(v) -> str | None:
    return None if v in (None, "", "null") else str(v)


def make_statement_reader(name: str = "builtin", **kwargs):
    if name == "builtin":
        return BuiltinStatementReader()
    if name == "llm":
        return LLMStatementReader(**kwargs)
    raise ValueError(f"statement reader must be 'builtin' or 'llm', got {name!r}")


# ---------------------------------------------------------------- applying events
_STOP = {"a", "an", "the", "this", "that", "some", "one", "my", "his", "her", "their", "our", "of", "in", "on", "with",
         "old", "older", "previous", "former", "new", "newer", "latest", "brand", "brand-new"}
_SAME = {"couch": "sofa", "cup": "mug", "rucksack": "backpack", "bag": "backpack", "telly": "tv", "television": "tv",
         "bin": "trash can", "armchair": "armchair", "jumper": "sweater"}


def _words(text: str) -> list[str]:
    out = []
    for w in re.findall(r"[a-z]+", re.sub(r"\b[A-Z][a-z]+'s\b", "", text).lower()):
        if w in _STOP:
            continue
        w = _SAME.get(w, w)
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def matches(memory: HouseholdMemory, phrase: str, owner: str | None = None,
            at: float | None = None) -> list[ObjectRecord]:
    """Objects a phrase may mean, best first: the head noun must match (the description's own head
    first: the lamp, not the armchair it stands next to); then more shared words,
    then owned by ``owner``, then "old" / "new" where said (earliest / latest here), then fewest of
    its own words left unsaid, then the earliest."""
    return [o for _, o in _ranked(memory, phrase, owner, at)]


def _ranked(memory: HouseholdMemory, phrase: str, owner: str | None, at: float | None) -> list[tuple[tuple, ObjectRecord]]:
    """(rank key, object), best first; the key's first five fields are what the phrase says."""
    words = _words(phrase)
    if not words:
        return []
    head = _own_head(phrase) or words[-1]  # "lamp" in "lamp next to the armchair"
    owned = {o.id for o in memory.objects_of(owner, at)} if owner else set()
    said_age = _age(phrase)
    ranked = []
    for o in memory.objects(at):
        theirs = set(_words(o.description))
        if head in theirs:
            age = -o.created_t if said_age == "new" else o.created_t
            # "grey sideboard" is the sideboard before it is the plant "on the sideboard"; among the owner's,
            # "old" / "new" where said, then the one whose own words the phrase says most of ("brown
            # cabinet" is not the "dark brown cabinet"), then the earliest
            key = (_own_head(o.description) != head, -len(set(words) & theirs), o.id not in owned,
                   age if said_age else 0, _unsaid(o.description, words))
            ranked.append(((*key, age, o.id), o))
    return sorted(ranked, key=lambda r: r[0])


def _unsaid(description: str, words: list[str]) -> int:
    """Words of the description's own part (before its first relation) that the phrase leaves out."""
    return len(set(_words(_RELATION.split(description, maxsplit=1)[0])) - set(words))


def ambiguous(memory: HouseholdMemory, phrase: str, owner: str | None = None, at: float | None = None) -> list[ObjectRecord]:
    """The objects a phrase cannot tell apart (two or more), or []: they match it equally (head
    noun, shared words, owner, words left unsaid) and it says neither "old" nor "new", so only their
    age would decide. "I threw away my white hamper" from an owner of two white hampers is such a
    phrase: resolving it to the earliest would discard one of them on a guess."""
    return _tied(_ranked(memory, phrase, owner, at), phrase)


def _tied(ranked: list[tuple[tuple, ObjectRecord]], phrase: str) -> list[ObjectRecord]:
    if len(ranked) < 2 or _age(phrase) is not None:
        return []
    tied = [o for key, o in ranked if key[:5] == ranked[0][0][:5]]
    return tied if len(tied) > 1 else []


_RELATION = re.compile(r"\b(?:on|next to|with|in|against|under|at|by|beside|near|behind|above|below|inside|of)\b")


def _own_head(description: str) -> str | None:
    """The head noun of a description itself, before its first relation ("sideboard" in "grey
    sideboard with silver handles next to the cabinet")."""
    core = _words(_RELATION.split(description, maxsplit=1)[0])
    return core[-1] if core else None


def resolve(memory: HouseholdMemory, phrase: str, owner: str | None = None, at: float | None = None) -> ObjectRecord | None:
    """The object a phrase means (the first of :func:`matches`), ``None`` if nothing matches."""
    found = matches(memory, phrase, owner, at)
    return found[0] if found else None


def seed_from_summary(memory: HouseholdMemory, summary: str, extractor=None, t: float = 0.0) -> int:
    """A fresh memory learns who owns what from a PersONAL-style summary (provenance "summary"):
    one object per described object, its owners from the extractor. Returns the objects added."""
    extractor = extractor or BuiltinExtractor()
    ids: dict[str, int] = {}
    for phrase in extractor.extract(summary):
        description = phrase.object + (f" in the {phrase.room}" if phrase.room else "")
        if description not in ids:
            ids[description] = memory.add_object(description, t=t)
        memory.assert_owner(phrase.person, ids[description], "summary", t=t)
    return len(ids)


def apply_events(memory: HouseholdMemory, events: list[Event], t: float, statement: str = "",
                 speaker: str | None = None, provenance: str = "statement") -> Applied:
    """Write the events into the memory at time ``t`` (one statement row for the whole text)."""
    applied = Applied()
    for ev in events:
        applied.outcomes.append(_apply_one(memory, ev, t, provenance))
    if statement:
        effect = "; ".join(o.effect for o in applied.outcomes) or "no change understood"
        memory.log_statement(statement, effect, speaker, t)
    return applied


def _apply_one(memory: HouseholdMemory, ev: Event, t: float, provenance: str) -> Outcome:
    if ev.kind == "acquire":
        oid = memory.add_object(_without_age(ev.object), t=t)
        memory.assert_owner(ev.person, oid, provenance, t=t)
        return Outcome(ev, oid, f"new object {oid} '{_without_age(ev.object)}' owned by {ev.person}")
    ranked = _ranked(memory, ev.object, ev.previous, t)  # once: both the tie test and the resolution read it
    tied = _tied(ranked, ev.object)
    if tied:  # reported, never guessed (as an object nobody has): the user says which one
        listed = ", ".join(f"{o.id} '{o.description}'" for o in tied[:4])
        return Outcome(ev, None, f"{ev.kind}: '{ev.object}' could be any of {len(tied)} objects ({listed}); "
                                 "say which one (its colour, room or place)", ok=False)
    obj = ranked[0][1] if ranked else None
    if obj is None and ev.kind == "own":
        oid = memory.add_object(ev.object, t=t)
        memory.assert_owner(ev.person, oid, provenance, t=t)
        return Outcome(ev, oid, f"object {oid} '{ev.object}' owned by {ev.person}")
    if obj is None:
        return Outcome(ev, None, f"{ev.kind}: no object in memory matches '{ev.object}'", ok=False)
    if ev.kind == "discard":
        memory.discard(obj.id, f"statement: {ev.object} gone", t)
        return Outcome(ev, obj.id, f"object {obj.id} '{obj.description}' gone")
    if ev.kind == "transfer":
        if ev.previous:
            memory.end_owner(ev.previous, obj.id, t)
        # with no giver named ("the lamp now belongs to Anna") every earlier owner gives it up
        memory.assert_owner(ev.person, obj.id, provenance, t=t, exclusive=not ev.previous)
        return Outcome(ev, obj.id, f"object {obj.id} '{obj.description}' from {ev.previous} to {ev.person}")
    if ev.kind == "correct":
        memory.assert_owner(ev.person, obj.id, "correction", t=t, exclusive=True, note=f"corrected from {ev.previous or '?'}")
        return Outcome(ev, obj.id, f"object {obj.id} '{obj.description}' is {ev.person}'s (correction)")
    memory.assert_owner(ev.person, obj.id, provenance, t=t)
    return Outcome(ev, obj.id, f"object {obj.id} '{obj.description}' owned by {ev.person}")
