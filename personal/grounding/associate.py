"""Recall layer of the builtin extractor: people and objects that co-occur, paired by proximity.

The clause rules of :mod:`personal.grounding.ownership_rules` are precise but only read the
constructions they know. Text in another style ("Desk lamp = Kofi", "her acoustic guitar rests
against the bed", "In living room there is big sofa of brown colour, it is of Jun and Mei") states
relations they miss. This layer reads every sentence with a part-of-speech tagger and a noun-phrase
chunker and pairs each object the rules left unowned with the nearest person in its clause:

* **Objects** are noun phrases (TextBlob's bundled Brill tagger, the ``pattern`` lexicon: no model
  download), with their attributes kept ("espresso machine on the marble counter", "collection of
  bonsai trees"). A phrase right after a place verb ("sits on", "is in") or after another noun phrase
  is an attribute, never an object of its own. Rooms, kin words, body parts of the house (wall,
  corner, floor) and abstract nouns (cost, evenings, pride) are never objects.
* **People** are the names the rules found, and "he / she / they / his / her / their" resolved to
  the people last named. A possessive ("her laptop", "Zofia's sewing machine") names the owner
  directly; otherwise an object goes to the nearest person mention (a list of names is one mention)
  in its clause, a comma or dash counting as a step.
* **Across sentences.** Objects of a sentence without people wait for the next one: "The guest
  bedroom holds a brass bed. Whenever Ingrid visits, she sleeps there." pairs Ingrid with the bed
  when that sentence points back ("it", "them", "there", "both", "that one") and names no object
  of its own.
* Clauses with a negation ("not", "never", "nobody") or a verb that states no ownership ("borrows",
  "dusts", "visits") pair nothing.

Objects the rules already gave an owner in the same sentence are left alone, so the layer only adds
relations; ``bench/bench_extract.py`` measures what that costs in precision.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_TOKEN = re.compile(r"\u27e8P\d+\u27e9|'s\b|'(?=\s)|n't\b|\w+(?:-\w+)*(?=n't\b)|\w+(?:-\w+)*|[^\w\s]")
_PERSON = re.compile(r"\u27e8P(\d+)\u27e9")
_NOUN = {"NN", "NNS", "NNP", "NNPS"}
_MOD = _NOUN | {"JJ", "JJR", "JJS", "CD", "VBG", "VBN", "FW"}
_DET = {"DT", "PRP$", "PDT", "POS"}
_SUBJECT_WORDS = {"he", "she", "they", "we", "i", "you", "who", "nobody", "everyone", "everybody", "someone", "no-one"}
MAX_DIST = 45  # tokens (a comma or dash counts 3) between an object and the person it is given to: about a long sentence
_SINGLE = {"he", "she", "him", "his", "hers", "her", "himself", "herself"}
_PLURAL = {"they", "them", "their", "theirs", "themselves"}
_OBJ_POINTER = {"it", "them", "there", "both", "its", "this", "that", "these", "those", "one", "ones"}
# prepositions whose phrase describes the noun before it ("mirror above the sink")
_ATTR_PREP = {"of", "on", "in", "with", "near", "by", "beside", "under", "above", "against", "at", "behind", "atop",
              "over", "along", "inside", "opposite", "beneath", "below", "next", "to", "between", "from", "across",
              "underneath", "around", "onto", "within"}
# verbs after which a prepositional phrase names a place, not a thing used ("sits on the counter")
_PLACE_VERBS = re.compile(r"^(?:is|are|was|were|be|been|being|sits?|sat|stands?|stood|rests?|rested|lies|lay|lying|hangs?|hung|"
                          r"leans?|leaned|located|placed|positioned|situated|set|mounted|found|kept|stored|tucked|stacked|"
                          r"arranged|displayed|propped|sitting|standing|resting|hanging|leaning|faces?|facing|lines?|"
                          r"occupies|occupy|dominates?|fills?|fits?|waits?|perches?|perched|stays?|remains?)$", re.I)
_SURROUNDED = re.compile(r"^(?:surrounded|flanked|framed|covered|lined|bordered|accompanied|joined|shaded|lit|topped|"
                         r"overlooked)$", re.I)
_NOT_RELATION = re.compile(r"^(?:borrows?|borrowed|dusts?|dusted|cleans?|cleaned|visits?|visited|walks?|walked|passes|passed|"
                           r"hates?|hated|dislikes?|disliked|avoids?|avoided|ignores?|ignored|envies|envied|wants?|wanted|"
                           r"repairs?|repaired|fixe[sd]|fix|helps?|helped|admires?|admired|notices?|noticed|sees?|saw|"
                           r"moved|moves?|cleared|tidie[sd]|tidy|polishe[sd]|polish|wipes?|wiped|vacuums?|vacuumed)$", re.I)
# verbs that a tagger reading an unknown name before them may take for plural nouns ("Gus rides ...")
_VERB_WORDS = re.compile(r"^(?:owns?|shares?|claims?|keeps?|guards?|uses?|rides?|drives?|works?|stores?|split|splits|naps?|plays?|"
                         r"sleeps?|sits?|reads?|paints?|cooks?|lifts?|eats?|curls?|tinkers?|encounters?|stands?|hangs?|rests?|"
                         r"lies|leans?|enjoys?|loves?|likes?|prefers?|possess(?:es)?|has|have|had|tends?|brews?|bakes?|grinds?|"
                         r"practi[cs]es?|trains?|studies|writes?|watches|listens?|relax(?:es)?|lounges?|spends?|stays?|lives?|"
                         r"looks?|takes?|gets?|got|buys?|bought|found|finds?|inherited|received|restored|considers?|treats?|"
                         r"calls?|feels?|seems?|touch(?:es)?|belongs?|goes|comes?|serves?|shelters?|holds?|contains?|features?|houses?|"
                         r"hosts?|includes?|offers?|boasts?|displays?|fills?|occupies|dominates?|faces?|lines?|waits?)$", re.I)
_NEG = re.compile(r"^(?:not|n't|never|nobody|nothing|none|no|neither|nor|no-one)$", re.I)
_CLAUSE_BREAK = re.compile(r"^(?:;|while|whereas|but|although|though|however|meanwhile)$", re.I)
# heads that are never an owned object here
_NOT_OBJECT = set("""
time times evening evenings morning mornings night nights day days week weeks weekend weekends year years decade decades
summer winter spring autumn afternoon afternoons hour hours minute minutes moment cost costs price space spot place places
corner corners wall walls floor floors ceiling ceilings side sides area areas part parts section sections piece pieces item items
thing things belongings belonging possession possessions property properties owner owners ownership member members resident
residents people person persons family families household households home homes house houses tone tones colour colours
color colors personality personalities feature features opportunity sale use uses turn share stake help favourite favorite
pride joy charge care name names way ways kind kinds sort lot lots bit rest others other one ones stuff view views light
course work retreat mine yours ours theirs fine half round domain retirement age note notes mr mrs ms dr miss sir
former latter
sunlight front back middle centre center end top bottom left right edge window windows door doors doorway entrance stairs
staircase step landing hallway room rooms kitchen bathroom bedroom bedrooms hall office study garage basement attic den closet
nursery porch patio garden yard shed pantry lounge parlour parlor library conservatory sunroom foyer entryway corridor mudroom
balcony veranda gym studio loft cellar laundry workshop playroom lobby terrace deck suite toilet washroom apartment flat
building level storey story upstairs downstairs outdoors indoors inside outside semi barn cabin cottage unit tenants tenant
vendor couple everyone everybody someone anyone nobody gathering couple variety mix blend number
addition sense touch character style atmosphere mood warmth comfort scene summary description
thanks cheers regards wishes signed something anything nothing contrast today tonight yesterday tomorrow pls plz thx
enthusiast fan lover collector diary work works soak soaks childhood ok tho thx robot landlord landlady lodger guest guests
combination combinations everything inventory record records list lunch breakfast dinner supper tbh contribution
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays
gift present birthday wedding christmas occasion market flea shop store claim
brother sister father mother dad mom mum son daughter wife husband partner friend roommate flatmate neighbour neighbor
grandmother grandfather uncle aunt cousin nephew niece girlfriend boyfriend fiance fiancee child children kid kids twin twins
baby grandma grandpa granny sibling siblings parent parents teenager teenagers guest guests visitor visitors
""".split())


@dataclass
class _Tok:
    word: str
    tag: str
    person: int | None = None  # index into names for a name token


@dataclass
class _NP:
    start: int  # token span of the noun phrase core
    end: int
    head: str
    text: str  # with its attributes
    owner_tokens: tuple[int, ...] = ()  # possessive inside the phrase ("her guitar") -> token index of "her"


@lru_cache(maxsize=1)
def _parser():
    from textblob.en import parse  # pattern's Brill tagger and lexicon, shipped inside the wheel

    return parse


def lexicon():
    """The tagger's English lexicon (word -> most frequent tag; proper nouns capitalised)."""
    from textblob.en import parser

    return parser.lexicon


_AUX = re.compile(r"^(?:is|are|was|were|be|am|has|have|had|do|does|did)$", re.I)


def tag(sentence: str) -> list[_Tok]:
    """Tokens of a sentence whose people are tagged \u27e8Pk\u27e9, with part-of-speech tags."""
    raw = _TOKEN.findall(sentence)
    if not raw:
        return []
    # the tagger sees a plain name where a person stands, so the context reads naturally
    words = ["Anna" if _PERSON.fullmatch(w) else w for w in raw]
    parsed = _parser()(" ".join(words), tokenize=False, tags=True, chunks=False, relations=False, lemmata=False)
    tags = [t.rsplit("/", 1)[-1] if "/" in t else "NN" for t in str(parsed).split()]
    if len(tags) != len(raw):  # the tagger split or joined a token: fall back to a crude tag
        tags = ["NN"] * len(raw)
    out: list[_Tok] = []
    for w, t in zip(raw, tags):
        m = _PERSON.fullmatch(w)
        if m:
            out.append(_Tok(w, "NNP", int(m.group(1))))
            continue
        k = len(out) - 1
        while k >= 0 and out[k].tag == "RB":
            k -= 1
        if t in ("NN", "NNS") and k >= 0 and (out[k].person is not None or out[k].word.lower() in _SUBJECT_WORDS) \
                and re.match(r"^[a-z]+$", w):
            t = "VBZ" if t == "NNS" else "VB"  # "Gus rides", "who host", "we need": a verb after its subject
        elif t == "NN" and out and out[-1].tag == "TO" and len(out) > 1 and out[-2].tag.startswith("VB"):
            t = "VB"  # "purchased it together to stargaze", "need to return it"
        out.append(_Tok(w, t))
    for k in range(1, len(out) - 1):
        prev, cur, nxt = out[k - 1], out[k], out[k + 1]
        if cur.tag in ("VB", "VBP") and prev.tag in ("NN", "NNS") and prev.person is None and not _AUX.match(cur.word) \
                and (nxt.tag in ("VBZ", "VBD", "MD", "WDT") or nxt.word.lower() == "that"):
            cur.tag = "NN"  # "the antique coat stand is ...", "a media console that Zuleika owns"
        elif cur.tag in ("VB", "VBP", "VBZ") and (prev.word.lower() in ("a", "an", "the", "each", "every") or prev.tag == "PRP$"):
            cur.tag = "NNS" if cur.tag == "VBZ" else "NN"  # "she has a loom that ...": no verb after an article
        elif cur.tag in ("VBN", "VBD") and prev.tag == "NN" and prev.person is None and nxt.word in ".,;:!?)":
            cur.tag = "NN"  # "along with his chess set."
        elif cur.tag == "NNS" and prev.tag in ("NN", "NNS") and prev.person is None and nxt.tag in ("DT", "PRP$"):
            cur.tag = "VBZ"  # "the living room showcases a couch": no noun phrase runs into a determiner
        elif cur.tag in ("NN", "VBP") and prev.tag == "NNS" and prev.person is None and nxt.tag in ("IN", "TO", "DT"):
            cur.tag = "VBP"  # "mornings start at the rowing machine"
    return out


def noun_phrases(toks: list[_Tok]) -> list[_NP]:
    """Object noun phrases: runs of modifiers ending in a noun, with attribute phrases appended."""
    nps: list[_NP] = []
    i, n = 0, len(toks)
    while i < n:
        if toks[i].person is not None or toks[i].tag not in _MOD \
                or toks[i].word[:1].isupper() and i > 0 and toks[i - 1].person is not None:
            i += 1  # "Horatio Quill": a surname belongs to the person
            continue
        j = i
        while j < n and toks[j].person is None and (toks[j].tag in _MOD or toks[j].word in "-'"
                                                    or toks[j].tag == "POS" and j + 1 < n and toks[j + 1].tag in _MOD):
            j += 1
        k = j
        while k > i and toks[k - 1].tag not in _NOUN:
            k -= 1
        if k == i:
            i = j
            continue
        start = i
        after_noun = i > 0 and (toks[i - 1].tag in _NOUN or toks[i - 1].person is not None)
        while after_noun and start < k and toks[start].tag in ("VBG", "VBN") and start + 1 < k:
            start += 1  # "cabinet displaying porcelain figurines": a participle after a noun is a verb
        head = toks[k - 1].word.lower()
        owner = ()
        d = start - 1
        while d >= 0 and (toks[d].tag in _DET | {"JJ", "WP$"} or toks[d].word.lower() == "whose") \
                and toks[d].word.lower() not in ("that", "which"):
            if toks[d].tag in ("PRP$", "POS", "WP$") or toks[d].word.lower() == "whose":
                owner = (d,)
                break
            d -= 1
        end = k
        # attributes: "of ...", "on the marble counter", "next to the lamp" directly after the noun
        while end < n and toks[end].word.lower() in _ATTR_PREP:
            p = end + (2 if toks[end].word.lower() == "next" and end + 1 < n and toks[end + 1].word.lower() == "to" else 1)
            while p < n and toks[p].tag in _DET and toks[p].person is None:
                p += 1
            q = p
            while q < n and toks[q].person is None and toks[q].tag in _MOD:
                q += 1
            while q > p and toks[q - 1].tag not in _NOUN:
                q -= 1
            if q == p:
                break
            end = q
        text = " ".join(t.word for t in toks[start:end]).replace(" 's", "'s").replace(" - ", "-")
        nps.append(_NP(start, k, head, text, owner))
        i = max(end, j)
    return nps


_CONTAINER = {"pair", "set", "collection", "stack", "bunch", "group", "pile", "range"}


def _is_object(np: _NP, lex) -> bool:
    if np.head in _CONTAINER and " " not in np.text:
        return False  # "the pair" (two people); "a pair of skis" is a thing
    if np.head in _NOT_OBJECT or len(np.head) < 2 or np.head.isdigit() or _VERB_WORDS.match(np.head):
        return False
    # a single word the lexicon knows only as something else ("Shared", "Fine", "wound") is no object
    return " " in np.text or not re.match(r"^(?:JJ|RB|VBN|VBD|IN|PRP|UH|CC|DT)", lex.get(np.head, "NN"))


def _new_subject(toks: list[_Tok], i: int) -> bool:
    """", and she would never ...": a new clause starts at "and" before a subject and its verb."""
    if toks[i].word.lower() != "and" or i == 0 or toks[i - 1].word != "," or i + 2 >= len(toks):
        return False
    subj, verb = toks[i + 1], toks[i + 2]
    return (subj.person is not None or subj.word.lower() in _SUBJECT_WORDS) and (verb.tag.startswith("VB") or verb.tag == "MD")


def _answer(toks: list[_Tok], clause: range, mentions) -> bool:
    """"Q: Who does the recliner belong to? A: Oswald.": a clause that is only people (a reply)."""
    named = {k for a, b, _ in mentions for k in range(a, b + 1)}
    rest = [toks[k] for k in clause if k not in named and toks[k].word not in ".,:;!?\"'()-"]
    return all(t.word.lower() in ("a", "answer", "that", "is", "it", "'s", "definitely", "probably", "mine", "hers", "his",
                                  "does", "do", "did", "one", "of", "course")
               for t in rest)


_FUNCTION_WORDS = {"the", "a", "an", "of", "on", "in", "at", "by", "with", "to", "and", "next", "near", "his", "her", "their"}


def _claimed(np: _NP, claimed: list[set[str]]) -> bool:
    """The rules read this object already: a phrase of theirs has its head noun and, where either
    names more than the head, a modifier before the head in common ("bottom bunk" does not claim
    "top bunk"; "the chair in the kitchen" is claimed by "... next to the chair")."""
    words = [w.lower() for w in re.findall(r"[\w'-]+", np.text)]
    mods = set(words[:words.index(np.head)] if np.head in words else words) - _FUNCTION_WORDS
    for c in claimed:
        if np.head in c and (not mods or mods & c or not (c - {np.head} - _FUNCTION_WORDS)):
            return True
    return False


def _heading(toks: list[_Tok], np: _NP) -> bool:
    """"Two heaters are present: one is ..., the other ...": a heading over objects, not one itself;
    "Box 1 - Hester: books": a label."""
    if np.end < len(toks) and toks[np.end].tag == "CD" and np.end == np.start + 1:
        return True
    for k in range(np.end, min(np.end + 4, len(toks))):
        if toks[k].word == ":":
            return k + 1 < len(toks) and toks[k + 1].person is None
        if toks[k].word in ",;" or toks[k].person is not None:
            return False
    return False


def _after_place_verb(toks: list[_Tok], np: _NP) -> bool:
    """"sits on the marble counter", "is in the drawer": a place, not an object."""
    i = np.start - 1
    while i >= 0 and toks[i].tag in _DET:
        i -= 1
    if i < 0 or toks[i].word.lower() not in _ATTR_PREP:
        return False
    prep = toks[i].word.lower()
    i -= 1
    while i >= 0 and toks[i].tag in ("RB", "RBR", "RP"):
        i -= 1
    if prep in ("with", "of", "from", "to", "for"):
        return False  # "furnished with a desk", "made of oak": what follows is a thing
    return i >= 0 and (bool(_PLACE_VERBS.match(toks[i].word)) or toks[i].tag == "VBN" and
                       (prep != "by" or bool(_SURROUNDED.match(toks[i].word))))


_SIGNATURE = re.compile(r"(?:signed|thanks|thank you|cheers|love|regards|best wishes|best|written by|from|yours truly|yours)"
                        r"\s*,?\s*(?:by\s+)?\u27e8P(\d+)\u27e9[^\u27e8.]*\.?\s*$|[-\u2013\u2014]\s*\u27e8P(\d+)\u27e9\s*\.?\s*$", re.I)
_FIRST_PERSON = {"i", "me", "my", "mine", "myself"}
_ROLE_WORD = re.compile(r"^(?:husband|wife|partner|son|daughter|brother|sister|mother|father|mum|mom|dad|friend|flatmate|"
                        r"roommate|neighbou?r|grandmother|grandfather|uncle|aunt|cousin|nephew|niece|girlfriend|boyfriend|"
                        r"landlord|landlady|guest|tenant|child|kid|twin|fianc\u00e9e?)s?$")


_SELF_INTRO = re.compile(r"\b(?:my name is|my name's|i am|i'm)\s+\u27e8P(\d+)\u27e9", re.I)
_GREETING = re.compile(r"^\W*(?:hi|hello|hey|dear|welcome)\b,?\s*\u27e8P(\d+)\u27e9", re.I)
_SECOND_PERSON = {"you", "your", "yours", "yourself"}


def narrator(tagged_text: str) -> int | None:
    """The person who signs the text ("..., Thanks, Abigail", "Written by Gus, age 8", "- Hana") or
    introduces themself ("my name is Tilly"): "I / my / mine" in it are theirs."""
    m = _SIGNATURE.search(tagged_text.strip()) or _SELF_INTRO.search(tagged_text)
    return int(next(g for g in m.groups() if g is not None)) if m else None


def addressee(tagged_text: str) -> int | None:
    """The person a note greets ("Hi Marek, ..."): "you / your / yours" in it are theirs."""
    m = _GREETING.search(tagged_text)
    return int(m.group(1)) if m else None


class Associator:
    """Walks the sentences in order, keeping who "he / she / they" point to."""

    def __init__(self, names: list[str], narrator: int | None = None, addressee: int | None = None):
        self.names = names
        self.narrator = narrator
        self.addressee = addressee
        self.last_single: list[int] = []
        self.last_group: list[int] = []
        self.pending: list[_NP] = []  # objects of the last sentence that named nobody

    def _resolve(self, word: str) -> list[int]:
        w = word.lower()
        if w in _SINGLE:
            return list(self.last_single)
        if w in _PLURAL:
            return list(self.last_group) or list(self.last_single)
        return []

    def _person_at(self, toks: list[_Tok], i: int) -> int | None:
        """The person a token names: a tagged name, "I / my / mine" of a signed text ("my husband"
        is not the narrator's own mention), "you / your" of a note that greets someone."""
        t = toks[i]
        if t.person is not None:
            return t.person
        nxt = toks[i + 1].word.lower() if i + 1 < len(toks) else ""
        if self.narrator is not None and t.word.lower() in _FIRST_PERSON and not _ROLE_WORD.match(nxt):
            return self.narrator
        if self.addressee is not None and t.word.lower() in _SECOND_PERSON and not _ROLE_WORD.match(nxt):
            return self.addressee
        return None

    def _mentions(self, toks: list[_Tok]) -> list[tuple[int, int, list[int]]]:
        """(first token, last token, people) per person mention; "A, B and C" ("mine and Bertrand's")
        is one mention."""
        out: list[tuple[int, int, list[int]]] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            first = self._person_at(toks, i)
            if first is not None:
                people, j = [first], i + 1
                while j + 1 < len(toks) and toks[j].word.lower() in (",", "and", "&", "+", "/") :
                    k = j + 1
                    if toks[k].word.lower() == "and" and k + 1 < len(toks):
                        k += 1
                    who = self._person_at(toks, k)
                    if who is None:
                        break
                    people.append(who)
                    j = k + 1
                    if j < len(toks) and toks[j].tag == "POS":
                        j += 1  # "mine and Bertrand's"
                out.append((i, j - 1, people))
                if t.person is not None or len(people) > 1:  # "I" / "you" are no antecedent of "her"
                    self._note(people)  # "Valentina's bedroom ..., and her guitar": her = Valentina
                i = j
                continue
            if t.tag in ("PRP", "PRP$") and (t.word.lower() in _SINGLE or t.word.lower() in _PLURAL):
                who = self._resolve(t.word)
                if who:
                    out.append((i, i, who))
            i += 1
        return out

    def _note(self, people: list[int]) -> None:
        if len(people) == 1:
            self.last_single = people
        elif people:
            self.last_group = people

    def sentence(self, toks: list[_Tok], claimed: list[set[str]]) -> list[tuple[list[int], _NP]]:
        """Pairs (people, object) this sentence adds; ``claimed`` holds the words of each object the
        rules already read in it."""
        mentions = self._mentions(toks)
        lex = lexicon()
        nps = [np for np in noun_phrases(toks) if _is_object(np, lex) and not _after_place_verb(toks, np) and not _heading(toks, np)]
        bounds = [i for i, t in enumerate(toks) if _CLAUSE_BREAK.match(t.word) or _new_subject(toks, i)] + [len(toks)]
        out: list[tuple[list[int], _NP]] = []
        start = 0
        for end in bounds:
            clause = range(start, end)
            ms = [m for m in mentions if m[0] in clause]
            free = [np for np in nps if np.start in clause and not _claimed(np, claimed)]
            out += self._clause(toks, clause, ms, free)
            if ms:
                self.pending = [np for np in self.pending if not _claimed(np, claimed)]
                if self.pending and (self._points_back(toks, clause) or not free and _answer(toks, clause, ms)):
                    out += [(ms[0][2], np) for np in self.pending[:1 if self._singular else None]]
                self.pending, self.age = [], 0
            elif free:
                self.pending, self.age = free, 0
            start = end + 1
        self.age += 1
        if self.age > 1:  # a reference reaches back one sentence, no further
            self.pending = []
        return out

    _singular = False
    age = 0

    def _points_back(self, toks: list[_Tok], clause: range) -> bool:
        """"it / them / there / both" used as a pronoun, in a clause that states no negation."""
        words = [toks[k] for k in clause]
        if any(_NEG.match(t.word) for t in words):
            return False
        for k, t in enumerate(words):
            w = t.word.lower()
            nxt = words[k + 1] if k + 1 < len(words) else None
            if w in _OBJ_POINTER and not (nxt and nxt.tag in _MOD and w not in ("it", "them", "there")):
                self._singular = w in ("it", "its", "this", "that", "one")
                return True
        return False

    def _clause(self, toks: list[_Tok], clause: range, mentions, free: list[_NP]) -> list[tuple[list[int], _NP]]:
        """Each free object of the clause -> its possessor, else the nearest person mention. A negation
        or a verb that states no ownership between the two ("Tom never uses the piano") pairs nothing."""
        out = []
        for np in free:
            if np.owner_tokens:
                o = np.owner_tokens[0]
                at = o - 1 if toks[o].tag == "POS" else o - 2 if toks[o - 1].word == "," else o - 1
                own = [m for m in mentions if m[0] <= at <= m[1] or m[0] <= o <= m[1]]
                if own:
                    out.append((own[0][2], np))
                    continue
            best = None
            for a, b, people in mentions:
                lo, hi = (b, np.start) if b < np.start else (np.end - 1, a)
                if any(_NOT_RELATION.match(t.word) or _NEG.match(t.word) for t in toks[lo:hi + 1]):
                    continue
                dist = (hi - lo) + 2 * sum(t.word in ",-–—:()" for t in toks[lo:hi + 1])
                if a > np.start and a > 0 and toks[a - 1].word.lower() in ("and", "or"):
                    dist += 3  # "Nico has the top bunk and Ollie ...": a person after "and" starts the next conjunct
                if dist > MAX_DIST:
                    continue
                if best is None or dist < best[0]:
                    best = (dist, people)
            if best:
                out.append((best[1], np))
        return out
