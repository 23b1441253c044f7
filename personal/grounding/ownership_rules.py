"""Rules that read who owns or uses what in a free-form English description of a home.

Used by ``personal.grounding.extract.BuiltinExtractor``; :func:`extract_relations` returns
``(person, object phrase, room or None)`` triples. How it reads a summary:

1. **People.** Capitalised words seen in a person's slot anywhere in the text (subject of an
   ownership or use verb, after "by" / "to" / "for", a possessive, a kin word or title,
   a list of names, a list heading "Tom: ..."), plus lower-case names in an unmistakable slot
   ("owned by stellan"). Each is then tagged ``\u27e8P<k>\u27e9`` so every pattern below is
   compiled once, whatever the names.
2. **Sentences -> clauses.** Splits at ";", "while", "whereas", "but", spaced dashes, before a
   new subject ("..., and Yvonne reads ..."), before a second verb of the same subject
   ("..., and also claims ..."), and at ", and the X is ..." when both halves state ownership.
   A leading "In the kitchen," sets the room; a list heading "Kitchen:" too.
3. **Clause constructions**: the table ``CONSTRUCTIONS`` (one ``Reader`` method and its patterns
   each), tried in order, the first that reads a clause wins:
   owner-of list ("Owners of the X: A and B"), shared list ("Shared by A: X"), heading list
   ("Tom: sofa, lamp"), transfer ("gave it to A"), passive / belongs to ("X is jointly owned by
   A, B and C", "X, owned by A,", "X is registered to A", "its owners are A and B"), favourite
   ("A's favourite is X"), possessive predicate ("X is A's", "X is hers", "It's A's"), cleft ("it
   is A who owns it"), where / what ("X is where A sleeps"), active verb of ownership or use
   (owns, shares, keeps, claims, enjoys, sleeps in, uses, plays, ... with "together with B,
   they", gapping "A sleeps on the top bunk and B on the bottom bunk"), stake ("with A, B and C
   all having a stake in it"), that would be ("That would be A"), is its owner ("..., who is
   also its owner"), the only one who ("A is the only one who drives X"), so is ("and so is the
   lamp"), in A's name ("registered in his name"), gapped ("...; the guitar to A"), zero relative
   ("a bunk bed he shares with Zuri"), any verb with a person subject and an object ("Pilar
   bakes bread with the Dutch oven"), and object, person ("office: filing cabinet, Quirin").
   Outside the table, a sentence is first read for list entries with owners in parentheses
   ("X (Tom)") and "shared (A and B): X". Possessive noun phrases ("Mira's backpack", "Percy's
   and Ophelia's bathrobes", "Yara and Zeke's wardrobe") count wherever they occur. Negated
   clauses ("not", "never", "used to") state nothing.
4. **References.** "it / they / both / this piece / there" point to the objects of the last
   clause; "he / she / they / both of them" to the people of the last relation (or the last
   list of names); "the one by the window" takes the head noun of the previous object;
   relative clauses ("which belongs to A", "that A and B share", ", both of which she bought",
   ", who also claims X") attach to the noun phrase before them.
5. **Objects.** Lists split at ", and the", ", the", "and a" (but "next to a lamp and a TV"
   stays one modifier), bare noun lists ("sofa, armchair and footstool"); articles, trailing
   adverbials and relative clauses are cut; " in the <room>" becomes the room. Rooms, kin
   words and "their own key"-style phrases are never objects.

The development set this was measured on is ``test/data/ownership_dev.json``
(``bench/bench_extract.py`` prints its precision and recall).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, NamedTuple


# ---------------------------------------------------------------- vocabulary
UPPER = "A-ZÀ-ÖØ-Þ\u0100-\u017f"
LOWER = "a-zß-öø-ÿ\u0100-\u017f"
NAME_TOKEN = rf"[{UPPER}][{LOWER}]*(?:-[{UPPER}]?[{LOWER}]+|['’][{UPPER}][{LOWER}]+)*(?![\w-])"
NOT_NAMES = {
    "the", "a", "an", "this", "that", "these", "those", "in", "on", "at", "of", "to", "for", "by", "with", "from",
    "and", "or", "but", "while", "whereas", "meanwhile", "also", "both", "each", "every", "all", "it", "its", "it's",
    "he", "she", "they", "them", "their", "theirs", "his", "her", "hers", "him", "we", "our", "you", "your", "i",
    "there", "here", "next", "moving", "finally", "additionally", "moreover", "furthermore", "besides", "lastly",
    "then", "so", "upstairs", "downstairs", "across", "along", "between", "throughout", "inside", "outside",
    "everything", "everyone", "everybody", "nobody", "nothing", "someone", "anyone", "one", "two", "three", "four",
    "five", "six", "owner", "owners", "owned", "ownership", "room", "rooms", "kitchen", "bathroom", "bedroom",
    "hallway", "hall", "office", "study", "garage", "basement", "attic", "library", "den", "closet", "nursery",
    "floor", "ground", "house", "home", "apartment", "whose", "who", "what", "which", "where", "when", "why", "how",
    "contrary", "hanging", "rooms", "kitchen:", "living", "dining", "bath", "baby", "grandma", "grandpa", "mr", "mrs",
    "ms", "dr", "tv", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "yes", "no",
    "not", "only", "shared", "jointly", "together", "over", "under", "above", "below", "near", "beside", "behind",
    "after", "before", "during", "since", "although", "though", "if", "because", "as", "like", "just", "still",
    "inventory", "note", "notes", "summary", "items", "belongings", "furniture", "legend", "key", "list", "total",
    "every", "among", "me", "mine", "us",
}
TITLES = r"(?:baby|little|grandma|grandpa|granny|uncle|aunt|auntie|cousin|mr\.?|mrs\.?|ms\.?|dr\.?)"
KIN = (r"(?:brother|sister|father|mother|dad|mom|mum|son|daughter|wife|husband|partner|friend|roommate|flatmate|"
       r"neighbou?r|grandmother|grandfather|uncle|aunt|cousin|nephew|niece|girlfriend|boyfriend|fiancée?|child|kid)")
ROOM_WORDS = (
    "room", "kitchen", "bathroom", "bedroom", "hall", "hallway", "office", "study", "garage", "basement", "attic",
    "den", "closet", "nursery", "porch", "patio", "garden", "yard", "shed", "pantry", "lounge", "parlour", "parlor",
    "library", "conservatory", "sunroom", "foyer", "entryway", "entrance", "corridor", "mudroom", "balcony", "veranda",
    "gym", "studio", "loft", "cellar", "laundry", "workshop", "playroom", "lobby", "landing", "terrace", "deck",
    "suite", "area", "toilet", "washroom", "wardrobe room", "bedrooms", "rooms",
)

# verbs whose subject owns / uses the object; optional particle before the object
_OWN = (r"own(?:s|ed)?|possess(?:es|ed)?|(?:has|have|had)\s+got|ha(?:s|ve|d)(?!\s+(?:[a-z]+ed|been|got|brought|made|built|taken|given|kept|seen)\b)|keeps?|kept|claim(?:s|ed)?|guards?|guarded|shares?|shared|"
        r"use(?:s|d)?|enjoys?|enjoyed|loves?|loved|likes?|liked|prefers?|preferred|favou?rs?|bought|buys?|got|"
        r"inherited|received|takes? care of|took care of|(?:has|have|had) taken care of|is responsible for|looks? after|"
        r"looked after|(?:has|have|had) looked after|tends?|tended|plays?|played|rides?|rode|"
        r"drives?|drove|wears?|wore|stores?|stored|reads? (?:in|on|at)|sleeps? (?:in|on)|slept (?:in|on)|"
        r"sits? (?:in|on|at)|sat (?:in|on|at)|relax(?:es)? (?:in|on)|naps? (?:in|on)|lounges? (?:in|on)|"
        r"works? out on|cooks? (?:with|on|at)|lifts? with|eats? at|"
        r"practi[cs]es?(?:\s+(?:on|with))?|practi[cs]ed(?:\s+(?:on|with))?|watch(?:es)?\s+(?:films|movies|tv|shows|videos)\s+on|"
        r"listens?\s+to\s+(?:music|records)\s+on|paints?\s+(?:at|on)|writes?\s+(?:at|on)|stud(?:y|ies)\s+at|"
        r"exercises?\s+on|trains?\s+on|"
        r"(?:sleeps?|slept|sits?|sat|naps?|napped|lounges?|relax(?:es)?|relaxed|reads?|works?|worked|stays?|stayed|"
        r"lives?|lived|rests?|rested)(?:\s+(?:in|on|at|with|by|inside))?|"
        r"spends? (?:most )?(?:evenings?|mornings?|time|afternoons?|nights?) (?:in|on|at)|"
        r"(?:is|are) the (?:sole |proud |only |joint |co-?)?owners? of|(?:is|are) (?:joint |co-?)owners? of|"
        r"shares? ownership of|share (?:the )?ownership of|ha(?:s|ve|d) a (?:stake|share|say|part) in|splits? (?:ownership of|the cost of)|split|"
        r"(?:lays?|laid) claim to|stakes? (?:a )?claim (?:to|on)|co-owns?|(?:has|have|had) (?:shared |joint )?custody of|"
        r"brought|(?:has|have|had) brought|bakes? [a-z]+ (?:with|in)|grinds? [a-z]+ (?:with|in)|brews? (?:[a-z]+ )?(?:with|in)|"
        r"curls? up (?:with [a-z ]+? )?(?:in|on)|ha(?:s|ve) a stake in|(?:is|are) in charge of")
_ADV = r"(?:(?:also|both|each|all|alone|still|now|only|even|too|just|already|mainly|[a-z]{3,}ly)\s+)*"
_PASSIVE = (r"(?:is|are|was|were)\s+" + _ADV + r"(?:(?:co-?owned|jointly owned|owned|shared|used|claimed|kept|loved|"
            r"preferred|favou?red|possessed|held|reserved|inherited|bought|enjoyed|guarded|split|made|built|knitted|sewn|"
            r"given|gifted|purchased)(?:\s+(?:jointly|together|"
            r"exclusively|solely|only|equally|mainly|mostly|evenly))?\s+(?:by|for|between|among)|reserved for|for|the (?:property|"
            r"possession|domain) of|owned jointly by)")
_BELONG = (r"(?:belongs?|belonged|belonging)\s+(?:\w+ly\s+)?(?:only\s+)?to|(?:goes|went)\s+to|is\s+for|"
           r"(?:is|are|was|were)\s+(?:\w+ly\s+)?(?:registered|assigned|allocated|given|handed|left|passed|sold|"
           r"gifted)\s+to|(?:is|are|was|were)\s+(?:meant|intended|set aside|earmarked|kept)\s+for|"
           r"(?:is|are|was|were)\s+(?:a\s+)?(?:gift|present)\s+(?:to|for)")
_NEG = re.compile(r"\b(?:not|n't|never|no longer|nobody|nothing|no one|none)\b|\bused to\b", re.I)
_DETS = r"(?:both\s+)?(?:the|a|an|one|two|three|four|five|several|some|his|her|their|its|my|our|this|that|these|those|each)\s+"
_ARTICLE = re.compile(r"^(?:both\s+(?:of\s+)?)?(?:(?:the|a|an|his own|her own|their own|his|her|their|its|this|that|these|those|some|several|"
                      r"two|three|four|five|pair of|couple of)\s+)+", re.I)
_MODIFIERS = re.compile(r"\b(?:next to|near|beside|by|under|beneath|below|above|over|on|in front of|behind|against|"
                        r"with|without|along|between|among|inside|outside|around|across|at|located|placed|positioned|"
                        r"situated|adorned|equipped|filled|topped|stocked|surrounded|complete|full|hanging|leaning|"
                        r"stacked|sitting|standing|mounted|folded|rolled|covered|made|lying|lies)\b", re.I)
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s*|\s*,?\s+(?:while|whereas|but|although|though)\s+|\s*,\s+and\s+(?=(?:he|she|they)\b)"
    r"|\s*,\s+(?:meanwhile|however|though)\s*,?\s*|\s*,\s*(?=and so (?:is|are|was|were)\b)"
    r"|\s*,?\s+and\s+(?=(?:it|they|this|that)\s+(?:is|are|was|were)\b)"
    r"|\s*,\s+and\s+(?=(?:nobody|no one|no-one|none|everyone|everybody)\b)"
    r"|\s*,\s+and\s+(?=\u27e8P\d+\u27e9\s+(?:also\s+)?(?:has|owns|keeps|uses|claims|possesses)\b)"
    r"|\s*,\s+and\s+(?=(?:to|on|in|at|by|beside|next to|near|behind|under|above|across)\s+[^,]{0,30}?\s+(?:is|are|stands?|sits?|hangs?|lies)\b)", re.I)
_DISCOURSE = re.compile(r"^(?:only|even|just|not only)\s+(?=\u27e8P)|^(?:(?:every|each|most|on|in the|at)\s+(?:mornings?|evenings?|days?|nights?|weekends?|afternoons?|week)|"
                        r"ok|okay|well|oh|usually|often|sometimes|always|nowadays|these days|meanwhile|also|finally|additionally|moreover|furthermore|besides|lastly|then|and|so|"
                        r"however|in turn|on the other hand|for (?:his|her|their) part|as well|moving (?:in)?to [^,]+|"
                        r"upstairs|downstairs|next door|across the (?:hall|corridor))\b\s*,?\s*", re.I)


# "owner=Lorcan, Maeve; object=drum kit; room=garage": a record with labelled fields, in any order
_FIELD = r"(?:owners?|persons?|people|who|objects?|items?|things?|rooms?|location|where)\s*[=:]\s*[^;=\n]+?"
_RECORD = re.compile(rf"(?i)(?<![\w=])(?:{_FIELD}\s*[;|]\s*)+{_FIELD}(?=\s*(?:[.\n]|$))")


def _record_sentence(m: re.Match) -> str:
    fields = {}
    for f in re.split(r"\s*[;|]\s*", m.group(0)):
        key, _, val = f.partition("=") if "=" in f else f.partition(":")
        fields[key.strip().lower().rstrip("s")] = val.strip()
    owner = fields.get("owner") or fields.get("person") or fields.get("people") or fields.get("who")
    obj = fields.get("object") or fields.get("item") or fields.get("thing")
    if not owner or not obj:
        return m.group(0)
    room = (fields.get("room") or fields.get("location") or fields.get("where") or "").lower()
    owners = re.sub(r"\s*,\s*", ", ", owner.strip(" ,"))
    return f"The {obj}{' in the ' + room if room else ''} is owned by {owners}"


_COLUMN = {"used by": "owner", "owned by": "owner", "user": "owner", "belong to": "owner", "belongs to": "owner",
           "whose": "owner", "shared by": "owner"}


# "(a) Dell laptop — owner: Ingeborg; (b) ...": an item, a dash and a labelled owner
_LABELLED_OWNER = re.compile(r"(?P<pre>(?:^|[;:\n]\s*|\.\s+)(?:\(?[a-z0-9]{1,2}\)\s*)?)(?P<item>[^;:\n()]{2,60}?)\s*[—–-]+\s*"
                             r"(?:joint\s+|co-?)?owners?\s*:\s*(?P<people>[^;.\n]+)", re.I)


def _tables(text: str) -> str:
    """Rows of a table ("| Standing desk | Office | Tariq |", or "sofa / Tom" under "Item / owner")
    become records under the header's labels; a table without a recognisable header keeps its cells
    separated by commas."""
    out, header = [], None
    for line in text.split("\n"):
        if re.fullmatch(r"[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|?)+[ \t]*", line):
            continue  # a markdown rule line
        sep = "|" if line.count("|") >= 1 else "/" if line.count(" / ") >= 1 else None
        if sep is None:
            out.append(line)
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(sep)]
        labels = [_COLUMN.get(lab, lab) for lab in (re.sub(r"\(s\)|s$", "", c.lower()).strip() for c in cells)]
        if sum(lab in ("item", "object", "thing", "owner", "person", "people", "who", "room", "location") for lab in labels) >= 2:
            header = labels
            continue
        if header and len(cells) == len(header):
            out.append("; ".join(f"{h}={c}" for h, c in zip(header, cells)) + ".")
        else:
            out.append(", ".join(c for c in cells if c))
    return "\n".join(out)


def normalize(text: str) -> str:
    t = (text or "").replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    t = re.sub(r"[ \t]+", " ", t)
    t = _tables(t)
    t = _RECORD.sub(_record_sentence, t)
    t = _LABELLED_OWNER.sub(lambda m: f"{m.group('pre')}The {m.group('item').strip()} is owned by {m.group('people').strip()}", t)
    t = re.sub(r"(?m)^\s*(?:[•*▪◦·-]|\d{1,2}[).])\s+", "\n", t)  # bullets and numbered lines: one statement each
    t = re.sub(r"\s*[•▪◦]\s*", "\n", t)
    t = re.sub(r"\s*\n\s*", "\n", t).strip()
    t = re.sub(r"\b(\w+)'re\b", r"\1 are", t)
    t = re.sub(r"(?<=\w)'s\s+got\b", " has got", t)  # "Ollie's got the bottom one"
    t = re.sub(r"(?<=\w)\s*\+\s*(?=[A-Z])", " and ", t)
    t = re.sub(r",\s*(?:meanwhile|however|though|too|in turn|for (?:his|her|their) part|on the other hand|in fact|by the way|"
               r"of course|naturally|obviously|apparently|clearly|surely|as expected|unsurprisingly)\s*,", "", t, flags=re.I)
    t = re.sub(r"\s+([,.;:!?])", r"\1", t)  # "juicer , the" -> "juicer, the"
    t = re.sub(r"([,;:])(?=[^\s\d])", r"\1 ", t)  # "room,its" -> "room, its"
    t = re.sub(rf"([a-z])\.([{UPPER}])", r"\1. \2", t)  # "Bram.Also" -> "Bram. Also"
    t = re.sub(r"(?<=[a-z]{3})\.(?=[a-z]{2,}\b)", ". ", t)  # "futon.the bean bag"
    t = re.sub(r"(?:(?<=^)|(?<=[\s:;,]))\(?\d{1,2}[).]\s+", "", t)  # "1) Sabrina - ..."
    return t.strip()


def split_sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])[ ]+(?=[\"'(\u27e8]?[A-Za-z" + UPPER + r"0-9\u27e8])|\n+", text)
    return [p.strip() for p in parts if p and p.strip()]


# ---------------------------------------------------------------- people
_OWN_RE = re.compile(rf"^\s*{_ADV}(?:{_OWN})\b", re.I)
_VERBISH = re.compile(r"^(?:'s|')?\s*" + _ADV + r"(?:" + _OWN + r"|is|are|was|were|each|both|all|together)\b", re.I)


def _name_candidates(text: str):
    for m in re.finditer(rf"(?<![\w'’-]){NAME_TOKEN}", text):
        tok = m.group(0)
        if tok.lower() in NOT_NAMES or len(tok) < 2:
            continue
        before = text[max(0, m.start() - 12):m.start()].lower()
        if re.search(r"\b(?:the|a|an|this|that|its)\s+$", before):
            continue  # "the Chesterfield sofa", "the Persian rug"
        yield m


_SIGNED = re.compile(r"(?:(?:^|[.!?\n]\s*)(?:thanks|thank you|cheers|love|regards|best|best wishes|signed|yours|yours truly)\s*,?"
                     r"|(?:^|\s)[-–—]{1,2})\s*$", re.I)


def find_people(text: str, lexicon=None) -> list[str]:
    """Names of people: capitalised words seen in a person's slot (owner of a verb, after "by"/"to",
    a possessive, a kin word or title, a name list joined to one of those). With ``lexicon`` (an
    English word -> tag mapping, case-sensitive), also any capitalised word outside a noun phrase
    that the lexicon knows only as a proper noun or not at all ("Ravi from downstairs lent us ...")."""
    strong: list[str] = []
    cands = {}
    for m in _name_candidates(text):
        tok, after = m.group(0), text[m.end():m.end() + 60]
        before = text[max(0, m.start() - 40):m.start()]
        cands.setdefault(tok, []).append((before, after))
    for tok, ctxs in cands.items():
        for before, after in ctxs:
            if (re.match(r"(?:'s|')(?!\w)", after)
                    or re.search(r"\b(?:by|to|for|with|between|among|property of|possession of|owners? of)\s+(?:both\s+)?$", before, re.I)
                    or re.search(r"\b(?:is|was)\s+$", before) and re.match(r"\s+who\b", after)
                    or re.search(r"\b(?:and|&)\s+$", before) and re.match(r"\s*(?:[.,;:!?()]|$|\s+(?:alone|too|together|as well|who|each|both)\b)", after)
                    or re.search(r"(?:^|[.;:!?]\s*|,\s*(?:and\s+)?|\b(?:while|whereas|but|and|where|when|that)\s+)$", before)
                    and re.match(rf"\s+{_ADV}(?:[a-z]+(?:s|ed)|ate|sat|slept|kept|took|got|gave|bought|brought|built|made|sewn|knit|found|won|chose)\b|\s*,\s+(?:the|a|an|his|her|their|who)\b", after)
                    or re.search(rf"\b(?:{KIN}|{TITLES})\s*,?\s+$", before, re.I)
                    or _OWN_RE.match(after) or _VERBISH.match(after) and re.match(r"\s*" + _ADV + r"(?:each|both|all|together)\b", after, re.I)
                    or re.match(r"\s*[:\-–—]\s", after) and re.search(r"(?:^|[.;:]\s*)$", before)
                    or re.search(r"\(\s*(?:[\w'’-]+,?\s+(?:and\s+)?)*$", before) and re.match(r"(?:'s)?\s*(?:,|and\b|\))", after)
                    or _SIGNED.search(before) and re.fullmatch(r"\s*\.?\s*", after)
                    or re.search(r"\b(?:my name is|my name's|call me)\s+$", before, re.I)):  # "... -- Rosalind", "Best, Oskar"
                strong.append(tok)
                break
    names = list(dict.fromkeys(strong))
    # two or more capitalised words in a list are people: "Yolanda and Zoltan", "A, B and C"
    for m in re.finditer(rf"{NAME_TOKEN}(?:\s*,\s*(?:and\s+)?{NAME_TOKEN}|\s+(?:and|&)\s+{NAME_TOKEN})+", text):
        toks = [t for t in re.findall(NAME_TOKEN, m.group(0)) if t in cands]
        if len(toks) >= 2:
            names += [t for t in toks if t not in names]
    # a name list joined to a known name: "Fatima, Audrey and Xavier"
    changed = True
    while changed:
        changed = False
        for tok in cands:
            if tok in names:
                continue
            for n in names:
                if re.search(rf"\b{re.escape(tok)}\s*(?:,\s*(?:and\s+)?|\s+(?:and|&)\s+){re.escape(n)}\b|\b{re.escape(n)}\s*(?:,\s*(?:and\s+)?|\s+(?:and|&)\s+){re.escape(tok)}\b", text):
                    names.append(tok)
                    changed = True
                    break
    # preamble lists: "The people in this house are A, B and C." / "...live in this home: A, B and C."
    for m in re.finditer(r"\b(?:people|residents|members|roommates|friends)\b[^.:]*?(?:\bare\b|:)\s*([^.]+)", text, re.I):
        for tok in re.findall(NAME_TOKEN, m.group(1)):
            if tok.lower() not in NOT_NAMES and tok not in names:
                names.append(tok)
    if lexicon is not None:
        names += [t for t in _lexicon_names(text, cands, lexicon) if t not in names]
        names = [t for t in names if not _common_word(t, cands[t] if t in cands else [], lexicon)]
        # a surname: only ever right after another name ("Horatio Quill", "Imelda Quill")
        names = [t for t in names if not all(re.search(rf"{NAME_TOKEN}\s+$", b[-30:]) and
                                             re.search(r"(\S+)\s+$", b).group(1) in names for b, _ in cands.get(t, [("", "")]))]
    return names


_KIN_OR_TITLE = re.compile(rf"^(?:{KIN}|{TITLES}|twin|grandson|granddaughter|stepson|stepdaughter)$", re.I)


def _initial(before: str) -> bool:
    return not re.search(r"[\w,][ \t]*$", before)


def _common_word(tok: str, ctxs, lexicon) -> bool:
    """A kin word or title ("Uncle Bjørn"), or a common word that only opens sentences before
    punctuation ("Nearby, ...", "Signed, Hana", "Lounge - recliner")."""
    if _KIN_OR_TITLE.match(tok) or _NURSERY_KIN.match(tok.lower()) or re.match(r"^[A-Z]-", tok) or tok.lower() in ROOM_WORDS:
        return True
    if ctxs and all(re.match(r"\s+\d", a) for _, a in ctxs):
        return True  # a label: "Box 1 - Hester"
    if not ctxs or lexicon.get(tok.lower()) is None or not all(_initial(b) and re.match(r"\s*[,:;–—-]", a) for b, a in ctxs):
        return False
    # a word the lexicon also knows as a name ("Felicity, Edmund and ...") is one unless it is a
    # sign-off ("Cheers, Celestine") or only heads a list ("Loose: ...")
    return lexicon.get(tok) != "NNP" or tok.lower() in _SIGN_OFF_WORDS or all(re.match(r"\s*[:–—-]", a) for _, a in ctxs)


_SIGN_OFF_WORDS = {"thanks", "cheers", "love", "regards", "best", "signed", "yours", "sincerely"}


_ROLE = rf"(?:{KIN}|{TITLES}|guest|tenant|lodger|landlord|landlady|nanny|housekeeper|visitor|twin|owner)s?"


def _lexicon_names(text: str, cands: dict, lexicon) -> list[str]:
    out = []
    for tok, ctxs in cands.items():
        if _KIN_OR_TITLE.match(tok) or tok.lower() in NOT_NAMES or lexicon.get(tok.lower()) and lexicon.get(tok) != "NNP":
            continue  # a common word ("Upstairs", "Signed"), a kin word or a title
        if lexicon.get(tok.lower()) and not lexicon.get(tok):
            continue
        good = False
        for before, after in ctxs:
            if re.search(rf"\b{_ROLE}\s*,?\s+$", before, re.I):
                good = True  # "their guest Severin", "his twin, Saoirse"
                continue
            # inside a noun phrase ("the leather Chesterfield", "his PlayStation") it names a thing
            if re.search(r"\b(?:the|a|an|his|her|their|its|my|our|this|some|'s)\s+(?:[\w-]+\s+){0,2}$", before, re.I):
                good = False
                break
            nxt = re.match(r"\s+([a-z]+)", after)
            if nxt and lexicon.get(nxt.group(1)) == "NN" and not _OWN_RE.match(after):
                continue  # a modifier of the noun after it ("Ergonomic chair")
            if not _initial(before) or re.match(r"\s*,?\s+[a-z]", after) and not lexicon.get(tok.lower()):
                good = True  # sentence-initial only before a verb or an apposition, not as a heading
        if good:
            out.append(tok)
    return out


_NURSERY_KIN = re.compile(r"^(?:mummy|mommy|mumma|mama|daddy|dada|papa|granny|gran|nana|nanna|grandma|grandpa|grampa|gramps)$")


def capitalise_lowercase_names(text: str, lexicon=None) -> str:
    """A lower-case name in a person's slot ("owned by stellan") becomes "Stellan" everywhere. With a
    lexicon, also a word it does not know, outside a noun phrase, before "'s" or a verb of having
    ("nico has the top bunk and ollie's got the bottom one")."""
    found = set()
    if lexicon is not None:
        for m in re.finditer(r"(?<![\w'-])([a-z]{3,})(?='s\b|\s+(?:has|have|had|owns?|uses?|got|gets|keeps?|shares?|sleeps?)\b)", text):
            w, before = m.group(1), text[max(0, m.start() - 20):m.start()]
            if _NURSERY_KIN.match(w):
                continue
            if lexicon.get(w) is None and lexicon.get(w.capitalize()) in (None, "NNP") and w not in NOT_NAMES \
                    and not re.search(r"\b(?:the|a|an|his|her|their|its|my|our|this|that|some|your)\s+(?:[\w-]+\s+)?$", before) \
                    or re.search(rf"\b(?:{KIN}|friend|flatmate|roommate|neighbou?r)\s+$", before) and lexicon.get(w) is None:
                found.add(w)
    for pat in (r"\b(?:owned|shared|used|claimed)\s+by\s+([a-z][a-z'-]+)(?=\s*(?:[.,;!?]|and\b|$))",
                r"\bmy name is ([a-z][a-z'-]+)",
                r"\bbelongs?\s+to\s+([a-z][a-z'-]+)(?=\s*(?:[.,;!?]|and\b|$))",
                r"(?:^|[.;!?]\s+|\band\s+)([a-z][a-z'-]+)\s+(?:also\s+)?(?:owns|possesses|shares)\b"):
        for m in re.finditer(pat, text):
            w = m.group(1)
            if w not in NOT_NAMES and not re.match(r"(?:the|a|an|him|her|them|everyone|nobody|me|us|it)$", w):
                found.add(w)
    for w in found:
        text = re.sub(rf"\b{re.escape(w)}\b", w.capitalize(), text)
    if found:  # sentences that start in lower case
        text = re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    return text


# ---------------------------------------------------------------- objects
_TRAILING = re.compile(
    r"(?:^|(?:\s*,)?\s+)(?:itself|themselves|alone|too|as well|together|jointly|also|each|every (?:day|morning|evening|night)|"
    r"almost every \w+|(?:most|many|some) \w+s|in the (?:morning|evening|afternoon)s?|last \w+|this \w+|"
    r"(?:each|every) \w+|as (?:his|her|their) [\w ]+|when (?:he|she|they) [\w ]+|in particular|"
    r"on weekends|at night|these days|now|often|daily|for years|to take off their boots|who [\w ,]+|"
    r"(?:was|is|were|are)\s+[a-z]+(?:ed|en)\s+(?:by\s+)?and)$", re.I)
_REL_CUT = re.compile(r"\s*,?\s+(?:which|who|whom|whose|where|that)\s+|\s*,\s+(?:both|all|each|neither|none|one) of (?:which|them|these|those)\b|\s*,\s+(?:rounding|reflecting|illustrating|highlighting|making|giving)\b", re.I)
_SPLIT_ITEMS = re.compile(r"\s*,\s*and\s+(?=" + _DETS + r"|both\s)|\s*,\s+(?=" + _DETS + r")|\s+and\s+(?=" + _DETS + r")"
                          r"|\s*,\s*(?!(?:" + _MODIFIERS.pattern[2:-2] + r")\b)(?=[a-z][a-z-]*(?:\s|$))|\s+and\s+(?=[a-z])", re.I)
_DETS_RE = re.compile(_DETS, re.I)
_OBJ_PRONOUN = re.compile(r"^(?:it|they|them|this|that|these|those|both|both of them|all of them|all three|all|there|this piece|"
                          r"the two|both items|each of them|it all|one|the latter|the former|the lot)$", re.I)
_KIN_OR_ROOM_HEAD = re.compile(rf"^(?:\w+\s+)?(?:{KIN}s?|room|rooms|bedroom|study|office|home|house|apartment|side|"
                               r"half|favou?rite|own|turn|part|pride|joy)$|^(?:[\w'-]+\s+){0,3}(?:home|house|apartment|flat|cottage)$", re.I)


# "the other", "her favourite spot", "something she would never lend": no object named
_NO_THING = re.compile(r"^(?:(?:the|an?)\s+)?(?:other|one|ones|something|anything|everything|contrast|"
                       r"(?:evenings?|mornings?|afternoons?|nights?|weekends?|days?)(?:\s+\w+)?|"
                       r"(?:\w+\s+)?(?:spot|place|haunt|hideaway|domain)(?:\s+to\s+\w+)?)$", re.I)
# a place or a purpose, not an object ("for work", "Beneath the stand"); not the particles of verbs of use ("plays on")
_PREP_START = re.compile(r"^(?:for|from|into|since|until|beneath|under|below|above|behind|beside|near|inside|"
                         r"outside|along|across|between|among|against|around)(?![\w-])", re.I)
_INVERSION = re.compile(_PREP_START.pattern + r".{0,60}?\b(?:stands?|sits?|hangs?|lies|rests?|is|are)\s+(?P<rest>\S.*)$", re.I)
_SIGN_OFF = re.compile(r"^(?:thanks|thank you|cheers|love|regards|best|best wishes|signed|yours|yours truly|written by)$", re.I)


def room_of(text: str) -> str | None:
    """The room named by a phrase such as "master bedroom almost every evening" -> "master bedroom"."""
    m = re.match(r"^(.{0,40}?\b(?:" + "|".join(sorted(map(re.escape, ROOM_WORDS), key=len, reverse=True)) + r")(?:\s+(?:room|area|space))?)\b", text.strip(), re.I)
    if not m or re.match(r"^(?:corner|wall|floor|middle|centre|center)\b", text.strip(), re.I):
        return None
    return m.group(1)


# rooms proper: never an owned object ("Priya's study"); a shed, a garage or a patio can be
_ROOMS_PROPER = ("room", "rooms", "kitchen", "bathroom", "bedroom", "bedrooms", "hall", "hallway", "office", "study",
                 "basement", "attic", "den", "nursery", "lounge", "parlour", "parlor", "library", "conservatory", "sunroom",
                 "foyer", "entryway", "corridor", "mudroom", "studio", "loft", "cellar", "laundry", "playroom", "lobby",
                 "landing", "suite", "toilet", "washroom", "closet", "pantry")


def is_room(obj: str) -> bool:
    return bool(re.fullmatch(r"(?:[\w'-]+\s+){0,2}(?:" + "|".join(map(re.escape, _ROOMS_PROPER)) + r")", obj.strip(), re.I))


def clean_item(item: str) -> str:
    item = re.sub(r"\s+(?:was|is|were|are)\s+(?:[a-z]+(?:ed|en|wn|lt|ght|pt)|put|set|hung|left)\b.*$", "", item.strip(), flags=re.I)
    item = re.sub(r"\s+(?:sits?|sat|stood|hangs?|hung|rests|lie|lies|lay)\s+(?:on|in|by|under|beside|against|near|at|"
                  r"next to|above|below|behind)\b.*$", "", item, flags=re.I)  # "a waffle iron sit on the counter"
    item = _ARTICLE.sub("", item.strip(" ,.:;\"'()"))
    prev = None
    while prev != item:
        prev, item = item, _TRAILING.sub("", item).strip(" ,")
    return item


def split_items(objs: str) -> list[str]:
    """An object list -> items. An "and a ..." after a modifier ("next to a lamp and a TV")
    belongs to the modifier unless a comma or "both" says a new item starts."""
    objs = objs.strip()
    both = bool(re.match(r"^both\b", objs, re.I))
    out, start, bare_list = [], 0, False
    for m in _SPLIT_ITEMS.finditer(objs):
        seg = objs[start:m.start()]
        bare_and = "," not in m.group(0)
        _, sep, tail = seg.rpartition(" in the ")
        ends_in_room = bool(sep) and room_of(tail) == tail.strip()  # "... in the kitchen and the ..." ends an item
        last_mod = None
        for last_mod in _MODIFIERS.finditer(seg):
            pass
        list_mod = last_mod is not None and re.match(r"(?:next to|near|beside|with|between|among|adorned|equipped|filled|"
                                                     r"topped|stocked|surrounded|complete|full|covered|made)", last_mod.group(0), re.I)
        if bare_and and list_mod and not both and not ends_in_room:
            continue
        if m.group(0).strip() == "and" and not re.match(_DETS, objs[m.end():], re.I):
            # "four-poster bed and cedar chest" (two nouns), "sofa, armchair and footstool" (a bare list);
            # not "black and white rug" (one word before "and") nor inside a modifier
            if not (bare_list or len(seg.split()) >= 2 and not _MODIFIERS.search(seg)) or len(out) == 0 and len(seg.split()) < 2:
                continue
            out.append(seg)
            start = m.end()
            continue
        if m.group(0).strip(" ,") == "" and not re.match(_DETS, objs[m.end():], re.I):
            # ", cabinet, and chair" inside a modifier: no determiner, not a new owned item
            if _MODIFIERS.search(seg) or len(out) == 0 and len(seg.split()) > 3:
                continue
            if re.fullmatch(r"\s*(?:a|an|the|his|her|their|my|our)\s+[\w-]+", seg, re.I):
                continue  # "a plaid, red-brown couch": an adjective before a comma
        out.append(seg)
        start = m.end()
        bare_list = m.group(0).strip() == "," and not re.match(_DETS, objs[m.end():], re.I)
    out.append(objs[start:])
    return [x for x in out if x.strip()]


@dataclass
class _Mention:
    object: str
    room: str | None


@dataclass
class _State:
    names: list[str]
    phrases: list[tuple[str, str, str | None]] = field(default_factory=list)
    last_people: list[str] = field(default_factory=list)
    last_single: str | None = None
    recent: list[str] = field(default_factory=list)  # people in order of mention
    last_objects: list[_Mention] = field(default_factory=list)
    last_head: str | None = None
    listed: list[_Mention] = field(default_factory=list)  # what the last describing clause listed
    last_group: list[str] = field(default_factory=list)  # the last list of two or more names mentioned


# ---------------------------------------------------------------- the reader
_PRON_SUBJ = r"(?:__SAME__|he|she|they|we|both of them|all of them|the two of them|all three of them|the twins|both|everyone in the house)"
_DESCRIBE = re.compile(r"^(?:there\s+(?:is|are|was|were)|(?P<subj>.+?)\s+(?:features?|contains?|holds?|has|have|houses?|"
                       r"includes?|is home to|is dominated by|hosts?|offers?|boasts?|is filled with|stores?|"
                       r"is equipped with))\s+(?P<objs>.+)$", re.I)
_INVERTED = re.compile(r"^(?:next to|beside|near|behind|opposite|above|below|under|in front of|against|by|on|in)\s+[^,]+?\s+"
                       r"(?:stands?|sits?|hangs?|lies|is|are|rests?|hang|stand|sit)\s+(?P<objs>(?:the|a|an|two|three|some)\s.+)$", re.I)
_WHOSE = re.compile(r"^whose\s+(?:is|are)\s+(?P<objs>.+)$", re.I)
_LEAD = re.compile(r"^(?:(?:in|inside|at|on|across|along|between|throughout|within|behind|among|upstairs in|downstairs in|"
                   r"moving (?:in)?to|over in|out in|back in|next door in)\s+(?P<place>[^,]{2,60}?)"
                   r"|(?:above|below|under|beside|opposite|next to|near)\s+(?P<near>(?:[^,\s]+\s*){1,3})"
                   r"|upstairs|downstairs|next door|further in|further on|nearby|close by|elsewhere|on floor \d+|on the (?:ground|first|second|top) floor)\s*,\s*", re.I)
_ROOM_LABEL = re.compile(r"((?:[\w'-]+\s+)?(?:" + "|".join(sorted(map(re.escape, ROOM_WORDS), key=len, reverse=True)) + r"))\s*$", re.I)


def room_label(text: str) -> str | None:
    """The room a heading or leading phrase names: "Hanging in the entryway" -> "entryway"."""
    m = _ROOM_LABEL.search(re.sub(r"^(?:the|a|an)\s+", "", text.strip(), flags=re.I))
    if not m:
        return None
    words = m.group(1).split()
    if len(words) == 2 and words[0].lower() in ("the", "in", "on", "at", "of", "to", "a", "an"):
        words = words[1:]
    return " ".join(words).lower() if words[0][0].isupper() and len(words) > 1 and words[0].lower() not in ("living", "dining", "master", "guest", "laundry", "utility", "smaller", "larger", "small", "large") else " ".join(words)


# People are tagged in the text as \u27e8P<k>\u27e9 before parsing, so every pattern is compiled once.
_P = r"\u27e8P\d+\u27e9"
# "shared by the two of them", "by all three children", "by both parents": the people just named
_COLLECTIVE = (r"(?:the (?:two|three|four|five) of them|(?:both|all(?: (?:two|three|four|five))?)\s+(?:of\s+)?(?:the\s+)?"
               r"(?:children|kids|flatmates|roommates|housemates|residents|siblings|sisters|brothers|parents|girls|boys|twins|tenants))")
NAME = rf"(?:(?:(?:his|her|their|{_P}'s)\s+(?:[a-z]+\s+)?{KIN}\s*,?\s+|{TITLES}\s+)?{_P})"
GROUP = rf"{NAME}(?:\s*,\s*(?:and\s+)?{NAME}|\s+(?:and|&|as well as|plus|along with)\s+{NAME})*"
SUBJ = rf"(?:together with (?P<with>{GROUP})\s*,\s*)?(?P<subj>{GROUP}|{_PRON_SUBJ})"
POSS = rf"(?:{NAME}'s?(?:\s*(?:,|and|&)\s*{NAME}'s?)*|{GROUP}'s)"
AGENT = (rf"(?P<people>(?:(?:me|us|myself)\s+and\s+)?(?:(?:the twins|the children|the kids|the couple|the family|both|everyone|all of them|all three|"
         rf"the (?:two|three|four) of them)\s*[:,]?\s*)?{GROUP}|him|her|them|both of them|all of them|the twins|everyone|{_COLLECTIVE}|both|all three)")
_F = re.I
RE_PASSIVE = re.compile(rf"^(?P<objs>.*?)(?:\s*,)?\s*(?:{_PASSIVE}|{_BELONG}|(?:,\s*|\s+)(?:co-?owned|owned|shared|used|claimed|kept)\s+(?:jointly\s+|together\s+)?by)\s+(?:both\s+|only\s+|solely\s+|exclusively\s+)?{AGENT}(?P<rest>.*)$", _F)
RE_OWNERS_ARE = re.compile(rf"^(?P<objs>.*?)(?:\s*,)?\s*(?:its|their|whose|the)\s+(?:owners?|users?)\s+(?:is|are|was|were)\s+(?:both\s+)?{AGENT}(?P<rest>.*)$", _F)
RE_POSS_PRED = re.compile(
    rf"^(?P<objs>.*?)\s*(?:(?:is|are|was|were)\s+(?:all\s+|both\s+|also\s+|actually\s+|really\s+)?(?:the\s+(?:property|possession)\s+of\s+)?|[-–—:]\s*{_ADV}|^)"
    rf"(?P<poss>{POSS}|hers|his|theirs)(?:\s*,\s*(?P<poss2>{POSS}))?(?P<tail>(?:\s+(?:own|too|as well|alone|favou?rite(?:\s+[a-z]+)?|pride(?: and joy)?|"
    rf"now|though|however|instead))*)\s*$", _F)
RE_FAVOURITE = re.compile(rf"^(?P<poss>{POSS})\s+(?:favou?rite|own|choice|pride)(?:\s+[a-z]+)?\s+(?:is|are)\s+(?P<objs>.+)$", _F)
RE_ACTIVE = re.compile(
    rf"^{SUBJ}\s*,?\s*(?:(?:for (?:his|her|their) part|on the other hand|in turn|meanwhile|however)\s*,\s*)?"
    rf"{_ADV}(?P<verb>{_OWN})(?!\w)\s*:?\s*(?P<objs>.*)$", _F)
RE_CLEFT = re.compile(rf"^(?:it|that)\s+(?:is|was)\s+(?P<people>{GROUP})\s+(?:who|that)\s+{_ADV}(?:{_OWN})(?!\w)\s*(?P<objs>.*)$", _F)
RE_WHERE = re.compile(rf"^(?P<objs>.*?)\s*(?:,\s*)?(?:is|are|was)?\s*(?:where|what|the (?:one|ones|place|spot|thing)(?: that| where| which)?)\s+(?P<people>{GROUP}|he|she|they)(?!\w)", _F)
RE_STAKE = re.compile(rf"\bwith\s+(?P<people>{GROUP})\s+(?:all\s+|both\s+|each\s+|also\s+)*(?:having|owning|sharing|holding|claiming)\s+(?:a\s+(?:stake|share|say)\s+in\s+|ownership of\s+)?(?P<objs>.+)$", _F)
RE_GAVE = re.compile(rf"\b(?:gave|gives|handed|passed|sold)\s+(?P<objs>.+?)\s+to\s+(?P<people>{GROUP})", _F)
RE_OWNER_OF = re.compile(rf"^(?:the\s+)?owners?\s+of\s+(?P<objs>.+?)\s*[:\-–—]\s*(?P<people>{GROUP})$", _F)
RE_LIST = re.compile(rf"^(?P<people>{GROUP}|both|all|everyone)\s*[:\-–—]\s*(?:(?:also\s+)?owns?:?\s*|(?:is|are) the owners? of:?\s*)?(?P<objs>.+)$", _F)
RE_SHARED_LIST = re.compile(rf"^(?:shared|owned|used|jointly owned)(?:\s+by)?\s*\(?\s*(?P<people>{GROUP})\s*\)?\s*[:\-–—]\s*(?P<objs>.+)$", _F)
RE_GAPPED = re.compile(rf"^(?P<objs>{_DETS}(?:(?!\b(?:belongs?|belonged|is|are|was|were|owned|shared|used|given|registered)\b)[^,])+?)\s+(?:to|by)\s+(?P<people>{GROUP})$", _F)
RE_PAIR = re.compile(rf"^(?P<objs>[^,]+?)\s*,\s*(?P<people>{GROUP})$", _F)
RE_PAREN = re.compile(rf"(?:^|[,:;]\s*|\band\s+)(?P<objs>[^,:;()]+?)\s*\(\s*(?P<people>{POSS}|{GROUP}|all three|all of them|everyone|both)\s*\)", _F)
RE_POSS_NP = re.compile(rf"(?<![\w'])(?P<poss>{POSS})\s+(?P<np>(?:(?!(?:is|are|was|were|has|have|and|or|but|which|that|who|in|on|at|by|with|next|near|under|behind|beside|hangs?|stands?|sits?|takes?|fills?|lies|rests?|holds?|leans?|contains?|features?|houses?|includes?|boasts?|offers?|hosts?|needs?)\b)[\w'-]+\s*){{1,4}})", _F)
RE_CUE = re.compile(rf"\b(?:{_OWN}|{_PASSIVE}|{_BELONG})\b|\b(?:is|are)\s+{_ADV}(?:{POSS}|hers|his|theirs)|(?:{POSS})(?:\s*$|\s+\w)", _F)
RE_APPOSITIVE = re.compile(rf"(?P<n>{NAME}),\s+(?:the|a|an|his|her|their)\s+[^,\u27e8]{{1,40}},\s+(?={_ADV}(?:{_OWN})(?!\w))", _F)
RE_AND_CLAUSE = re.compile(
    rf"(?:,\s*|\s+)and\s+(?=(?:together with {GROUP}\s*,\s*)?(?:{GROUP}|he|she|they|both of them|all of them|the two of them)\s+{_ADV}(?:{_OWN})(?!\w))"
    rf"|(?:,|:)\s+(?=(?:together with {GROUP}\s*,\s*)?(?:{GROUP}|he|she|they)\s+{_ADV}(?:{_OWN})(?!\w))"
    rf"|(?P<same>,?\s+and\s+(?=(?:also\s+|then\s+|now\s+)?(?:{_OWN})\s+(?:{_DETS}|it\b|them\b|both\b)))", _F)


RE_THAT_WOULD_BE = re.compile(rf"^(?:that|it|this)\s+(?:would be|will be|is|was|must be)\s+(?P<people>{GROUP})$", _F)
RE_SO_IS = re.compile(rf"^(?:and\s+)?so\s+(?:is|are|was|were)\s+(?P<objs>{_DETS}.+)$", _F)
RE_IS_OWNER = re.compile(rf"^{SUBJ}\s+(?:is|are|was|were)\s+{_ADV}(?:its|their|the)\s+(?:sole\s+|proud\s+|only\s+|joint\s+|co-?)?owners?$", _F)
RE_ONE_WHO = re.compile(rf"^(?P<people>{GROUP})\s+(?:is|are|was|were)\s+the\s+(?:only\s+)?(?:one|ones|person|people)\s+(?:who|that)\s+{_ADV}[a-z]+(?:\s+(?:with|on|in|at))?\s+(?P<objs>.+)$", _F)
RE_NAME_OF = re.compile(rf"^(?P<objs>.*?)\s*(?:is|are|was|were)\s+(?:registered|listed|titled)\s+(?:in|under)\s+(?P<people>{NAME}'s|his|her|their)\s+names?\b", _F)
RE_ZERO_REL = re.compile(rf"(?P<np>{_DETS}[^,]*?)\s+(?P<subj>{GROUP}|he|she|they)\s+{_ADV}(?:{_OWN})(?!\w)(?:\s+with\s+(?P<w>{GROUP}))?\s*(?:,|$)", _F)
RE_ACTIVE_ANY = re.compile(
    rf"^{SUBJ}\s*,?\s*{_ADV}(?P<verb>[a-z]+(?:s|ed)?)(?:\s+[a-z]+){{0,2}}?\s+(?:up\s+)?(?:with|on|in|at|to|into|onto|from|over|under|beside|by)?\s*"
    rf"(?P<objs>(?:{_DETS}|it\b|them\b).*)$", _F)
_NOT_RELATION_VERBS = (r"(?:is|are|was|were|be|been|lives?|lived|moved?|moves|visits?|visited|comes?|came|goes|went|walks?|walked|"
                       r"enters?|entered|leaves?|left|thinks?|thought|knows?|knew|says?|said|sees?|saw|looks?|looked|finds?|found|"
                       r"borrows?|borrowed|dusts?|dusted|cleans?|cleaned|visits|passes|passed|hates?|hated|dislikes?|wants?|wanted|"
                       r"needs?|needed|built|made|gave|gives|left|lent|lends|helps?|helped|asks?|asked|calls?|called)$")


def tag_people(text: str, names: list[str]) -> str:
    """Each known name -> \u27e8P<index>\u27e9 (longest names first, whole words only)."""
    for k, n in sorted(enumerate(names), key=lambda kn: -len(kn[1])):
        text = re.sub(rf"(?<![\w'-]){re.escape(n)}(?![\w-])", f"\u27e8P{k}\u27e9", text)
    # "shared by Cordelia and her husband Rupert", "Leopoldine, Matthias and their lodger Nkechi": the name
    text = re.sub(rf"(?<=\band )(?:his|her|their|our|my|your)\s+(?:(?:younger|older|elder|eldest|youngest|little|big|baby|"
                  rf"teenage|twin)\s+)?{_ROLE}\s*,?\s+(?=\u27e8P\d+\u27e9(?!\s*,?\s*who\b))", "", text, flags=re.I)
    # a surname after a name goes with it: "Beatrix Holloway and Edwin Holloway", "Edwin Holloway's"
    return re.sub(rf"(\u27e8P\d+\u27e9)\s+[{UPPER}][{LOWER}]+(?:-[{UPPER}][{LOWER}]+)?(?=\s*(?:[,.;)]|and\b|&|'s\b|$))", r"\1", text)


class Reader:
    def __init__(self, names: list[str]):
        self.st = _State(list(names))
        self.list_people: list[str] = []

    def untag(self, text: str) -> str:
        return re.sub(r"\u27e8P(\d+)\u27e9", lambda m: self.st.names[int(m.group(1))], text)

    # -- people -------------------------------------------------------------------------
    def people(self, text: str) -> list[str]:
        t = text.strip().lower()
        if re.fullmatch(_COLLECTIVE, t):
            t = "both" if re.match(r"^(?:both|the two)\b", t) else "all of them"
        if t == "__same__":
            return list(self.st.last_people)
        if t in ("he", "she", "him", "her", "hers", "his"):
            return [self.st.last_single] if self.st.last_single else []
        if t in ("they", "them", "theirs", "both", "both of them", "all of them", "the two of them", "the twins",
                 "all three of them", "we", "everyone", "all", "everyone in the house"):
            if len(self.st.last_people) >= 2:
                return list(self.st.last_people)
            if len(self.st.last_group) >= 2:
                return list(self.st.last_group)
            return self.st.recent[-2:] if t in ("both", "both of them", "the two of them", "the twins") else list(self.st.recent)
        return list(dict.fromkeys(self.st.names[int(k)] for k in re.findall(r"\u27e8P(\d+)\u27e9", text)))

    def note_people(self, people: list[str]) -> None:
        if not people:
            return
        self.st.last_people = list(people)
        if len(people) == 1:
            self.st.last_single = people[0]
        for p in people:
            if p in self.st.recent:
                self.st.recent.remove(p)
            self.st.recent.append(p)

    # -- objects ------------------------------------------------------------------------
    def objects(self, objs: str, room_ctx: str | None, antecedent: list[_Mention] | None = None) -> list[_Mention]:
        objs = (objs or "").strip(" ,:;")
        d = _DESCRIBE.match(objs)
        if d and d.group("subj") and not re.search(r"\u27e8P", d.group("subj")):
            objs = d.group("objs")  # "The dining room is dominated by an extendable oak table, owned by ..."
        if ":" in objs or " - " in objs:
            objs = re.split(r":|\s-\s", objs)[-1].strip()
        objs = re.sub(r"^(?:one|the other|another|the first|the second)\s+(?:is|are)\s+|^there\s+(?:is|are|was|were)\s+", "", objs, flags=re.I)
        objs = re.sub(r"^(?:(?:both|all|each)\s+(?:the\s+)?(?=\w)|the\s+)?(?:\w+\s+)?(?:items?|things?|pieces?)\s*:\s*", "", objs, flags=re.I)
        objs = re.sub(r"\s+(?:in order\s+)?to\s+(?!(?:the|a|an|his|her|their)\b)[a-z]+\b.*$", "", objs, flags=re.I) if re.match(r"^(?:it|them|there|this|that|these|those)\b", objs, re.I) else objs
        bare = clean_item(objs) if re.match(r"^(?:it|them|there|this|that|these|those|both)\b", objs, re.I) else objs
        if re.match(r"^(?:it|them)\b", objs, re.I):
            bare = "it"  # "it every morning and considers it his", "it from his grandfather"
        if re.match(r"^(?:definitely|certainly|probably|surely|obviously|actually|clearly)$", objs, re.I):
            objs = ""
        if re.match(r"^(?:both|all|the two|the three|all three)\s+(?:of\s+(?:the\s+|these\s+|those\s+)?)?[a-z]+s$", objs, re.I):
            objs = "both" if re.match(r"^(?:both|the two)", objs, re.I) else "them"  # "Both machines belong to him"
        m = re.match(r"^the\s+(former|latter)\b", objs, re.I)
        if m:  # "Sabine uses the former; the latter is Tiberius's"
            src = antecedent if antecedent is not None else self.st.listed or self.st.last_objects
            return list(src[:1] if m.group(1).lower() == "former" else src[-1:])
        if not objs or _OBJ_PRONOUN.match(bare) or _OBJ_PRONOUN.match(objs) or re.match(r"^(?:in|on)\s+(?:it|them|there)$", bare, re.I):
            n = 2 if re.match(r"^(?:both|both of them|the two)", objs, re.I) else None
            src = antecedent if antecedent is not None else self.st.last_objects
            return list(src[-n:]) if n else list(src)
        out = []
        if antecedent is not None and not _DETS_RE.match(objs) and not re.search(r"[A-Za-z]{3,}", clean_item(objs)):
            return list(antecedent)
        for raw in split_items(objs):
            raw = _REL_CUT.split(raw, maxsplit=1)[0]
            paren = re.search(r"\s*\(([^)]*)\)", raw)
            room_hint = room_label(paren.group(1)) if paren else None
            if paren:
                raw = raw[:paren.start()] + raw[paren.end():]  # "the dishwasher (kitchen)"
            item = clean_item(raw)
            if not item or re.search(r"\b(?:is|are|was|were)\s+\w", item, re.I) or re.match(r"own\b", item, re.I):
                continue  # a clause, not an object ("sunroom is filled with plants"), or "their own key"
            if self.st.last_head and re.match(r"^(?:[\w-]+\s+){0,2}?(?:one|ones|other)\b", item, re.I):
                item = re.sub(r"\b(?:one|ones|other)\b", self.st.last_head, item, count=1, flags=re.I)
            room = room_hint or room_ctx
            head, sep, tail = item.rpartition(" in the ")
            if sep and room_of(tail) and head:
                item, room = head.strip(), room_of(tail)
            out.append(_Mention(item, room))
        if out:
            self.st.last_head = _head(out[-1].object)
        elif antecedent is not None:
            return list(antecedent)
        return out

    def emit(self, people: list[str], mentions: list[_Mention]) -> bool:
        added = False
        for m in mentions:
            inv = _INVERSION.match(m.object or "")
            if inv:  # "Near the entrance stands a black wooden shelf ..."
                m = _Mention(clean_item(inv.group("rest")), m.room)
            if not m.object or _KIN_OR_ROOM_HEAD.match(_head(m.object)) or is_room(m.object) or _SIGN_OFF.match(m.object) \
                    or _NO_THING.match(m.object) or re.fullmatch(r"(?:[\w'-]+\s+){0,2}\u27e8P\d+\u27e9\W*", m.object.strip()) \
                    or _PREP_START.match(m.object):
                continue
            obj = self.untag(m.object)
            for p in people:
                ph = (p, obj, m.room)
                if ph not in self.st.phrases:
                    self.st.phrases.append(ph)
                added = True
        if added:
            self.note_people(people)
            self.st.last_objects = list(mentions)
        return added

    # -- clauses ------------------------------------------------------------------------
    def sentence(self, sentence: str) -> None:
        self.list_people: list[str] = []  # "Pavel owns: the kettle; the toaster": owners of a list in progress
        s = sentence.strip().rstrip(".!?").strip()
        s = re.sub(r"\b([Ii]t|[Tt]hat|[Tt]here|[Ww]hat|[Ww]ho)'s\b", r"\1 is", s)
        s = RE_APPOSITIVE.sub(lambda m: m.group("n") + " ", s)
        room_ctx = None
        m = re.match(r"^(?P<room>[A-Za-z' ]{2,30}?)\s*:\s+(?=\S)", s)
        if m and room_label(m.group("room")):
            room_ctx, s = room_label(m.group("room")).lower(), s[m.end():]
        while True:
            s = _DISCOURSE.sub("", s)
            m = _LEAD.match(s)
            if not m:
                break
            place = m.group("place") or ""
            room = room_label(place) if place else None
            if room:
                room_ctx = room
            s = s[m.end():]
        m = re.match(rf"^of\s+(?P<objs>{_DETS}[^,]+),\s*", s, re.I)
        if m:  # "Of the three chairs around the table, the one ..."
            self.st.last_objects = self.objects(m.group("objs"), room_ctx)
            s = s[m.end():]
        m = RE_SHARED_LIST.match(s)
        if m:  # "shared (Aurora and Benedict): rug"
            self.emit(self.people(m.group("people")), self.objects(m.group("objs"), room_ctx))
            return
        end = 0
        for m in RE_PAREN.finditer(s):
            self.emit(self.people(m.group("people").replace("'s", "")), self.objects(m.group("objs"), room_ctx))
            end = m.end()
        if end:  # list with owners in parentheses; what follows the last one is read as a clause
            s = re.sub(r"^\s*[,;]?\s*(?:and\s+)?", "", s[end:])
            if not s.strip():
                return
        for clause in self.clauses(s):
            self.clause(clause, room_ctx)

    def clauses(self, s: str) -> list[str]:
        out = []
        parts = []
        for part in _CLAUSE_SPLIT.split(s):
            # a spaced dash between two clauses ("... isn't Zephyr's - he only borrows it - it belongs to ...");
            # "Kalinda - owns the treadmill" (a list entry) stays whole
            pieces = re.split(r"\s[-–—]\s", part)
            if len(pieces) > 1 and all(len(x.split()) >= 3 for x in pieces):
                parts += pieces
            else:
                parts.append(part)
        for part in parts:
            out += self._split_subjects(part)
        return [c for c in out if c and c.strip()]

    def _split_subjects(self, part: str) -> list[str]:
        """Split before a new subject ("..., and Yvonne reads ...", ": Ingrid owns ...") and before a
        second verb of the same subject ("..., and also claims ..." -> "__SAME__ also claims ...")."""
        pieces, start = [], 0
        for m in RE_AND_CLAUSE.finditer(part):
            if re.search(rf"{_P}\s*$", part[start:m.start()]) and m.group(0).strip(" ,") in ("", "and"):
                continue  # inside a name list: "Oliver, Linda and David share"
            pieces.append(part[start:m.start()])
            start = m.end()
            if m.group("same"):
                pieces.append("__SAME__ ")
                pieces[-1] = "__SAME__ "
                part = part[:start] + part[start:]
        pieces.append(part[start:])
        split = []
        for p in pieces:
            split += self._split_cued(p)
        pieces = split
        out = []
        for p in pieces:
            if out and out[-1] == "__SAME__ ":
                out[-1] = "__SAME__ " + p
            else:
                out.append(p)
        return out

    def _split_cued(self, p: str) -> list[str]:
        """", the one by the window is Joaquin's": split at a comma before a new subject when both
        sides state ownership."""
        for m in re.finditer(r"(?:,\s+(?:and\s+)?|\s+and\s+)(?=" + _DETS + r")", p, re.I):
            left, right = p[:m.start()], p[m.end():]
            comma = "," in m.group(0)
            if comma and RE_CUE.search(left) and RE_CUE.search(right) or not comma and RE_CUE.search(left) \
                    and re.match(rf"^{_DETS}[^,]*?\b(?:is|are|was|were|belongs?|belonged)\b", right, re.I):
                return [left] + self._split_cued(right)
        return [p]

    def clause(self, c: str, room_ctx: str | None, antecedent: list[_Mention] | None = None) -> list[_Mention]:
        """Parse one clause; returns the objects it mentions (for a following relative clause)."""
        for g in re.finditer(GROUP, c):
            names = self.people(g.group(0))
            if len(names) >= 2:
                self.st.last_group = names
        c = _DISCOURSE.sub("", c.strip(" ,"))
        c = _DISCOURSE.sub("", c)
        if not c:
            return []
        m = _LEAD.match(c)
        if m and m.group("place") and room_label(m.group("place")):
            room_ctx, c = room_label(m.group("place")), c[m.end():]
        c = re.sub(r",\s*which\s+[^,]+,\s*(?=(?:is|are|was|were|belongs?)\b)", " ", c, flags=re.I)
        rel = _REL_CUT.search(c) if not (RE_CLEFT.match(c) or RE_ONE_WHO.match(c)) else None
        main, rest, marker = (c[:rel.start()], c[rel.end():], rel.group(0)) if rel else (c, "", "")
        if re.match(r"^(?:this|that|it|these|those|here|there)\s+(?:is|are|was|were)$", main.strip(), re.I):
            found = list(self.st.last_objects)  # "This is where baby Ada sleeps"
        elif _NEG.search(main):
            found = self.describe(main, room_ctx)
        else:
            found = self.relation(main, room_ctx, antecedent)
            if found is None and getattr(self, "list_people", None) and re.match(_DETS, main, re.I) \
                    and not re.search(r"\b(?:is|are|was|were|has|have)\b", main, re.I):
                found = self.objects(main, room_ctx)  # the list goes on after a ";"
                self.emit(self.list_people, found)
            if found is None:
                found = self.describe(main, room_ctx)
            self.possessives(main, room_ctx)
        if rest:
            marker = marker.strip(" ,").lower()
            if marker in ("who", "whom"):
                who = re.search(rf"({GROUP})\s*$", main)
                if who and not _NEG.search(rest):  # "belongs to Yannick, who also claims the umbrella stand"
                    self.st.last_people = self.people(who.group(1))
                    self.relation("__SAME__ " + rest.strip(" ,"), room_ctx)
                return found
            ante = found if re.match(r"(?:both|all|each|neither|none) of", marker) else found[-1:]
            near = re.search(rf"(?:^|\s)(?P<np>{_DETS}(?:(?!{_DETS}).)*?)$", main, re.I)
            if near and rel and not rel.group(0).lstrip().startswith(",") and marker in ("that", "which"):
                ante = self.objects(near.group("np"), room_ctx) or ante  # "next to the vinyl shelf that Ulla built"
            # "... that A and B share, and a velvet armchair which belongs to A": a new item after the relative
            m = re.search(r"\s*,?\s+(?:and|as well as|alongside|along with|together with|plus)\s+(?=" + _DETS + r")", rest, re.I)
            tail = ""
            if m:
                rest, tail = rest[:m.start()], rest[m.end():]
            if not _NEG.search(rest):
                self.relative(rest, room_ctx, ante or found)
            if tail:
                self.clause(tail, room_ctx)
        return found

    def relative(self, rest: str, room_ctx, ante: list[_Mention]) -> None:
        rest = rest.strip(" ,")
        if not ante or not rest:
            return
        got = self.relation(rest, room_ctx, ante, relative=True)
        if got is None:
            m = re.match(rf"^(?P<people>{GROUP}|he|she|they)\s+{_ADV}[a-z]+", rest, re.I)
            if m:  # "where Marlon usually stays", "that Felipe inherited"
                self.emit(self.people(m.group("people")), ante)

    def relation(self, c: str, room_ctx, antecedent=None, relative: bool = False) -> list[_Mention] | None:
        """The objects of the ownership relation stated in ``c`` (None when it states none).
        The forms are tried in order; the first that matches reads the clause."""
        for form in self.FORMS:
            objs = form(self, c, room_ctx, antecedent, relative)
            if objs is not None:
                return objs
        return None

    def _state(self, people: list[str], objs_txt: str, room_ctx, antecedent=None) -> list[_Mention]:
        objs = self.objects(objs_txt, room_ctx, antecedent)
        self.emit(people, objs)
        return objs

    def _simple(self, rx, c, room_ctx, antecedent, people="people", objs="objs"):
        m = rx.match(c)
        return self._state(self.people(m.group(people)), m.group(objs) if objs else "", room_ctx, antecedent) if m else None

    # -- the constructions (CONSTRUCTIONS below lists them in the order they are tried) -----
    def _owner_of(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_OWNER_OF, c, room_ctx, None)

    def _shared_list(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_SHARED_LIST, c, room_ctx, None)

    def _heading_list(self, c, room_ctx, antecedent, relative):
        return None if relative else self._simple(RE_LIST, c, room_ctx, None)

    def _transfer(self, c, room_ctx, antecedent, relative):
        m = RE_GAVE.search(c)
        return self._state(self.people(m.group("people")), m.group("objs"), room_ctx, antecedent) if m else None

    def _passive(self, c, room_ctx, antecedent, relative):
        """Also "..., along with the X" and "..., the Y by B" after the agent."""
        m = RE_PASSIVE.match(c) or RE_OWNERS_ARE.match(c)
        if not m:
            return None
        rest = m.group("rest").strip()
        objs_txt = rest[1:] if rest.startswith(":") else m.group("objs")  # "Everything ... between A and B: x, y"
        if re.match(r"^(?:everything|all|it all)\b", objs_txt or "", re.I) and not rest.startswith(":"):
            objs_txt = ""
        people = self.people(m.group("people"))
        objs = self._state(people, objs_txt, room_ctx, antecedent)
        along = re.match(rf"^,?\s*(?:along with|together with|as well as|and also|plus)\s+(?P<o>{_DETS}.+)$", rest, re.I)
        if along:  # "... is shared by A and B, along with the two matching nightstands"
            self._state(people, along.group("o"), room_ctx)
        for g in re.finditer(rf",\s*(?:and\s+|while\s+)?(?P<o>{_DETS}[^,]+?)\s+(?:by|to)\s+(?P<p>{GROUP}|both of them|all of them|them|him|her)", rest, re.I):
            self._state(self.people(g.group("p")), g.group("o"), room_ctx)  # "..., the coffee table by Hilde"
        return objs

    def _favourite(self, c, room_ctx, antecedent, relative):
        m = RE_FAVOURITE.match(c)
        return self._state(self.people(m.group("poss")), m.group("objs"), room_ctx, antecedent) if m else None

    def _possessive_predicate(self, c, room_ctx, antecedent, relative):
        m = RE_POSS_PRED.match(c)
        if not m or m.group("tail").strip() and re.match(r"^(?:next to|beside|near|by|behind|above|under|in|on|at)\b", m.group("objs"), re.I):
            return None  # "Next to the fireplace is Nicolette's favourite armchair": a possessive NP, read later
        if m.group("objs") == "" and m.group("poss").lower() in ("his", "hers", "theirs") and not relative and not self.st.last_objects:
            return None
        return self._state(self.people(m.group("poss2") or m.group("poss")), m.group("objs"), room_ctx, antecedent)

    def _cleft(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_CLEFT, c, room_ctx, antecedent)

    def _where(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_WHERE, c, room_ctx, antecedent)

    def _active(self, c, room_ctx, antecedent, relative):
        """With "together with C, they", "shares X with B" and gapping ("A sleeps on the top bunk
        and B on the bottom bunk")."""
        m = RE_ACTIVE.match(c)
        if not m:
            return None
        people = self.people(m.group("subj"))
        if m.group("with"):
            people = list(dict.fromkeys(people + self.people(m.group("with"))))
        objs_txt = m.group("objs")
        if re.match(r"shar", m.group("verb"), re.I):
            w = re.search(rf"(?:^|\s+)with\s+(?P<w>{GROUP})\s*$", objs_txt, re.I)
            if w:
                people = list(dict.fromkeys(people + self.people(w.group("w"))))
                objs_txt = objs_txt[:w.start()]
        gap = re.search(rf"\s+and\s+(?P<p>{GROUP})\s+(?:on|in|at|with|by|to)\s+(?P<o>{_DETS}.+)$", objs_txt, re.I)
        if gap:
            self._state(people, objs_txt[:gap.start()], room_ctx)
            people, objs_txt = self.people(gap.group("p")), gap.group("o")
        objs = self._state(people, objs_txt, room_ctx, antecedent)
        if re.search(rf"(?:{_OWN})\s*:", c, re.I):
            self.list_people = people  # "Pavel owns: the kettle; the toaster"
        return objs

    def _stake(self, c, room_ctx, antecedent, relative):
        m = RE_STAKE.search(c)
        if not m:
            return None
        before = _DESCRIBE.match(c[:m.start()])
        ante = self.objects(before.group("objs"), room_ctx) if before else antecedent
        return self._state(self.people(m.group("people")), m.group("objs"), room_ctx, ante)

    def _that_would_be(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_THAT_WOULD_BE, c, room_ctx, antecedent, "people", None)

    def _is_owner(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_IS_OWNER, c, room_ctx, antecedent, "subj", None)

    def _one_who(self, c, room_ctx, antecedent, relative):
        return self._simple(RE_ONE_WHO, c, room_ctx, antecedent, "people", "objs")

    def _so_is(self, c, room_ctx, antecedent, relative):
        m = RE_SO_IS.match(c)
        return self._state(list(self.st.last_people), m.group("objs"), room_ctx) if m and self.st.last_people else None

    def _name_of(self, c, room_ctx, antecedent, relative):
        m = RE_NAME_OF.match(c)
        if not m:
            return None
        who = m.group("people")
        who = {"his": "he", "her": "she", "their": "they"}.get(who.lower(), who)
        return self._state(self.people(who), m.group("objs"), room_ctx, antecedent)

    def _gapped(self, c, room_ctx, antecedent, relative):
        return None if relative else self._simple(RE_GAPPED, c, room_ctx, None)

    def _zero_relative(self, c, room_ctx, antecedent, relative):
        m = RE_ZERO_REL.search(c)
        if not m:
            return None
        people = self.people(m.group("subj")) + (self.people(m.group("w")) if m.group("w") else [])
        return self._state(list(dict.fromkeys(people)), m.group("np"), room_ctx)

    def _any_verb(self, c, room_ctx, antecedent, relative):
        # a person doing something with an object is the likeliest reading of such a summary
        m = RE_ACTIVE_ANY.match(c)
        if not m or re.match(_NOT_RELATION_VERBS, m.group("verb"), re.I):
            return None
        return self._state(self.people(m.group("subj")), m.group("objs"), room_ctx, antecedent)

    def _pair(self, c, room_ctx, antecedent, relative):
        m = RE_PAIR.match(c)
        if not m or relative or re.search(r"\b(?:is|are|was|were|has|have|own|owns|live|lives|living|lived)\b", m.group("objs"), re.I):
            return None
        head, colon, objs_txt = m.group("objs").rpartition(":")
        return self._state(self.people(m.group("people")), objs_txt, (room_label(head) if colon else None) or room_ctx)

    FORMS: tuple = ()  # the functions of CONSTRUCTIONS, in order (set below the class)

    def describe(self, c: str, room_ctx) -> list[_Mention]:
        """Objects a clause introduces without an owner ("There is a blue armchair ...",
        "Yusra often borrows the stand mixer"): the context for "it" / "both" / "which" later."""
        m = _DESCRIBE.match(c) or _WHOSE.match(c) or _INVERTED.match(c)
        if m and not (m.groupdict().get("subj") and self.people(m.group("subj")) and not re.search(r"'s\b", m.group("subj"))):
            found = self.objects(m.group("objs"), room_ctx)
        else:
            m = re.search(rf"(?:^|,\s*|\b(?:[a-z]+s|[a-z]+ed)\s+)(?P<np>{_DETS}.+?)(?=\s+(?:is|are|was|were|[a-z]+s\s+(?:{_DETS}|along|across|in|on|by|under|next|near|behind|against))\b|$)", c, re.I)
            if not m:
                return []
            found = self.objects(m.group("np"), room_ctx)
        if found:
            self.st.last_objects = found
            self.st.listed = found
        return found

    def possessives(self, c: str, room_ctx) -> None:
        for m in RE_POSS_NP.finditer(c):
            np = m.group("np").strip()
            if re.match(r"^(?:(?:own|favou?rite|pride|choice)\s*$|too\b|and\b|alone\b|own\s)", np, re.I):
                continue
            who = self.people(m.group("poss").replace("'s", "").replace("'", ""))
            if not self.emit(who, self.objects(np, room_ctx)):
                self.note_people(who)  # "Priya's study ...; she ..." still names the person


class Construction(NamedTuple):
    """One clause construction of the grammar: its name, the Reader method that reads it, the
    pattern(s) it matches with and an example it reads."""

    name: str
    read: Callable
    patterns: tuple
    example: str


# The clause grammar: Reader.relation tries these in order; the first that reads a clause wins.
CONSTRUCTIONS = (
    Construction("owner-of list", Reader._owner_of, (RE_OWNER_OF,), "Owners of the piano: Tom and Ann"),
    Construction("shared list", Reader._shared_list, (RE_SHARED_LIST,), "Shared by Tom and Ann: the sofa"),
    Construction("heading list", Reader._heading_list, (RE_LIST,), "Tom: sofa, lamp (not in a relative clause)"),
    Construction("transfer", Reader._transfer, (RE_GAVE,), "he gave it to Brigid"),
    Construction("passive / belongs to", Reader._passive, (RE_PASSIVE, RE_OWNERS_ARE),
                 "the X is jointly owned by A, B and C; the X belongs to A; its owners are A and B"),
    Construction("favourite", Reader._favourite, (RE_FAVOURITE,), "Cyrus's favourite is the hammock"),
    Construction("possessive predicate", Reader._possessive_predicate, (RE_POSS_PRED,),
                 "the X is A's; the X is hers; it's A's; the mirror - Ngozi's"),
    Construction("cleft", Reader._cleft, (RE_CLEFT,), "it is Tom who owns it"),
    Construction("where / what", Reader._where, (RE_WHERE,), "the X is where A sleeps; the X is what A works out on"),
    Construction("active verb", Reader._active, (RE_ACTIVE,),
                 "A (and B) (also) owns / shares / keeps / sleeps in the X; A sleeps on the top bunk and B on the bottom bunk"),
    Construction("stake", Reader._stake, (RE_STAKE,), "..., with A, B and C all having a stake in this piece"),
    Construction("that would be", Reader._that_would_be, (RE_THAT_WOULD_BE,), "That would be Fabian"),
    Construction("is its owner", Reader._is_owner, (RE_IS_OWNER,), "..., who is also its owner"),
    Construction("the only one who", Reader._one_who, (RE_ONE_WHO,), "A is the only one who drives the X"),
    Construction("so is", Reader._so_is, (RE_SO_IS,), "..., and so is the brass lamp on top of it"),
    Construction("in A's name", Reader._name_of, (RE_NAME_OF,), "it is registered in his name"),
    Construction("gapped", Reader._gapped, (RE_GAPPED,), "...; the guitar to Anouk (not in a relative clause)"),
    Construction("zero relative", Reader._zero_relative, (RE_ZERO_REL,), "a bunk bed he shares with his cousin Zuri"),
    Construction("any verb", Reader._any_verb, (RE_ACTIVE_ANY,), "Pilar bakes bread with the Dutch oven"),
    Construction("object, person", Reader._pair, (RE_PAIR,), "office: filing cabinet, Quirin"),
)
Reader.FORMS = tuple(c.read for c in CONSTRUCTIONS)


def _head(obj: str) -> str:
    return _MODIFIERS.split(obj, maxsplit=1)[0].strip()


def sentence_room(sentence: str) -> str | None:
    """The room a sentence opens with ("In the kitchen, ...", "Kitchen: ...")."""
    m = re.match(r"^(?P<room>[A-Za-z' ]{2,30}?)\s*[:\-–—]\s+(?=\S)", sentence)
    if m and room_label(m.group("room")):
        return room_label(m.group("room")).lower()
    m = _LEAD.match(_DISCOURSE.sub("", sentence))
    return room_label(m.group("place")) if m and m.group("place") else None


def _respectively(phrases: list) -> list:
    """"A, B and C ..., belonging respectively to X, Y and Z": the rules read every owner with every
    object; keep the i-th object with the i-th owner."""
    people = list(dict.fromkeys(p for p, _, _ in phrases))
    objs = list(dict.fromkeys(o for _, o, _ in phrases))
    if len(people) < 2 or len(people) != len(objs) or len(phrases) != len(people) ** 2:
        return phrases
    return [ph for ph in phrases if people.index(ph[0]) == objs.index(ph[1])]


def extract_relations(summary: str, recall_layer: bool = True) -> list[tuple[str, str, str | None]]:
    """(person, object, room) for every ownership / use relation the summary states.

    ``recall_layer``: after the clause rules read a sentence, :mod:`personal.grounding.associate`
    pairs the people and objects they left unpaired (see its docstring)."""
    lexicon = None
    if recall_layer:
        from personal.grounding.associate import Associator, addressee, lexicon, narrator

        lexicon = lexicon()
    text = capitalise_lowercase_names(normalize(summary), lexicon)
    names = find_people(text, lexicon)
    reader = Reader(names)
    assoc = None
    if recall_layer:
        tagged = tag_people(text, names)
        assoc = Associator(names, narrator(tagged), addressee(tagged))
    for sentence in split_sentences(tag_people(text, names)):
        before = len(reader.st.phrases)
        reader.sentence(sentence)
        if assoc is not None:
            _recall(reader, assoc, names, sentence, before)
        if re.search(r"\brespectively\b", sentence, re.I):
            reader.st.phrases[before:] = _respectively(reader.st.phrases[before:])
    return reader.st.phrases


def _recall(reader: Reader, assoc, names: list[str], sentence: str, before: int) -> None:
    """The recall layer's pairs for one sentence, after the rules read it (phrases from ``before`` on)."""
    from personal.grounding.associate import tag

    claimed = [{w.lower() for w in re.findall(r"[\w'-]+", reader.untag(o))} for _, o, _ in reader.st.phrases[before:]]
    room_ctx = sentence_room(sentence)
    for people, np in assoc.sentence(tag(sentence), claimed):
        obj = reader.untag(np.text)
        head, sep, tail = obj.rpartition(" in the ")
        room = room_ctx
        if sep and head and room_of(tail):
            obj, room = head, room_of(tail)
        for k in people:
            ph = (names[k], obj, room)
            if ph not in reader.st.phrases:
                reader.st.phrases.append(ph)
        for k in people:  # "both" / "the two of them" in a later sentence count these people too
            if names[k] not in reader.st.recent:
                reader.st.recent.insert(max(0, len(reader.st.recent) - 1), names[k])
