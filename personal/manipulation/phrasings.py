"""How each preference is worded: the phrasings a learned policy trains on, and held-out paraphrases.

- ``TRAIN[pref]``: the registry's own wording (``preferences.py``, used by every ``single`` task) first,
  then three more. Demonstrations and training use only these.
- ``HELD_OUT`` / ``HELD_OUT_B`` / ``HELD_OUT_C`` ``[pref]``: paraphrases written separately (at the
  moments their comments say) and never trained on; the ``paraphrase`` suite prompts with them to
  measure how far preference satisfaction falls on unseen wording.
  ``test_perm_learned`` checks that no held-out paraphrase is also a training phrasing.

``{obstacle}`` is filled from the layout ("the green vase") as in the registry.
"""
from __future__ import annotations

import re

from personal.manipulation import preferences as P
from personal.manipulation.layout import Layout

_EXTRA_TRAIN: dict[str, list[str]] = {
    "speed_up": ["Be quick", "Hurry up", "Go fast", "Do it quickly", "Faster please", "Get it done fast",
                 "Don't dawdle"],
    "slow_down": ["Go slow", "Slow down", "Take your time", "Don't go fast", "Move at a slow speed", "Slowly please",
                  "No need to hurry"],
    "smooth": ["Move smoothly", "No jerky movements", "Accelerate gradually", "Ease into each motion",
               "Keep the movement steady and even", "Avoid jolts", "Start and stop softly"],
    "keep_away": ["Stay far from {obstacle}", "Avoid {obstacle}", "Give {obstacle} a wide berth",
                  "Stay away from {obstacle}", "Keep a safe distance from {obstacle}", "Don't touch {obstacle}",
                  "Go around {obstacle}"],
    "move_higher": ["Carry it high", "Lift it high while moving", "Keep it well above the table", "Raise it up high",
                    "Carry it at a high altitude", "Transport it far above the table", "Lift it higher than usual"],
    "close_to_ground": ["Carry it low", "Keep it near the table surface", "Move it low over the table", "Keep it low",
                        "Hug the table while carrying", "Stay near the ground", "Carry it at a low height"],
    "rotate_when_placing": ["Turn it 90 degrees before putting it down", "Rotate it when you place it",
                            "Give it a quarter turn", "Place it rotated", "Turn it as you set it down",
                            "Rotate it by ninety degrees", "Change its orientation when placing"],
    "push": ["Slide it along the table", "Push it there", "Don't pick it up, push it", "Push it across",
             "Slide it over", "Keep it on the table and push", "Don't lift it"],
    "grasp_by_handle": ["Grab the handle", "Hold it by its handle", "Grasp the handle end", "Use the handle to lift it",
                        "Grip the handle", "Take it by the handle", "Don't grab the head"],
    "prefer_red": ["Use the red block", "Take the red one", "I want the red one", "Red, please", "Pick the red block",
                   "The red one", "I like red"],
    "prefer_blue": ["Use the blue block", "Take the blue one", "I want the blue one", "Blue, please",
                    "Pick the blue block", "The blue one", "I like blue"],
    "prefer_bigger": ["Use the larger block", "Take the big one", "I want the biggest one", "The large one, please",
                      "Pick the bigger block", "Not the small one", "The large block"],
    "prefer_smaller": ["Use the little block", "Take the small one", "I want the smallest one",
                       "The small one, please", "Pick the smaller block", "Not the big one", "The little block"],
}


# Set A: written before any probe or training.
HELD_OUT: dict[str, list[str]] = {
    "speed_up": ["Pick up the pace", "I'm in a hurry", "As fast as you can"],
    "slow_down": ["Take it easy", "Don't rush", "Move at a leisurely pace"],
    "smooth": ["Move gently", "Keep the motion fluid", "Don't make abrupt moves"],
    "keep_away": ["Don't get close to {obstacle}", "Steer clear of {obstacle}", "Keep your distance from {obstacle}"],
    "move_higher": ["Hold it up high as you move it", "Raise it way up during transport",
                    "Carry it at a greater height"],
    "close_to_ground": ["Hold it low as you carry it", "Keep it just above the table", "Transport it low down"],
    "rotate_when_placing": ["Spin it ninety degrees as you set it down", "Put it down turned sideways",
                            "Twist it a quarter rotation before releasing"],
    "push": ["Shove it over without lifting", "Nudge it across the table", "Move it by pushing rather than grasping"],
    "grasp_by_handle": ["Take hold of the grip, not the head", "Lift it using the handle", "Hold it at the handle"],
    "prefer_red": ["Choose the red block", "Pick the red-coloured one", "Go with the red one"],
    "prefer_blue": ["Choose the blue block", "Pick the blue-coloured one", "Go with the blue one"],
    "prefer_bigger": ["Choose the bigger block", "Go for the larger one", "Pick the one that is larger"],
    "prefer_smaller": ["Choose the tiny one", "Go for the smaller block", "Pick the less bulky one"],
}


# Set B: written after a nearest-neighbour probe of set A against the training phrasings had shown
# MiniLM's antonym confusions (slow/fast, small/large) and the training phrasings had been widened;
# set B itself was never probed before the final evaluation.
HELD_OUT_B: dict[str, list[str]] = {
    "speed_up": ["Make it snappy", "Quickly now", "Don't waste time"],
    "slow_down": ["Nice and slow", "Reduce your speed", "Go easy on the speed"],
    "smooth": ["No sudden movements", "Keep it fluid and soft", "Avoid any jerks"],
    "keep_away": ["Stay well clear of {obstacle}", "Don't come near {obstacle}", "Keep {obstacle} at arm's length"],
    "move_higher": ["Keep it up high while carrying", "Carry it way above the surface", "Elevate it during the move"],
    "close_to_ground": ["Keep it down low while carrying", "Carry it near the surface", "Don't raise it much"],
    "rotate_when_placing": ["Turn it sideways when you put it down", "Rotate it ninety degrees on placement",
                            "Set it down with a quarter rotation"],
    "push": ["Slide it, don't lift it", "Push it over to the spot", "Move it along the surface by pushing"],
    "grasp_by_handle": ["Grab it by the handle", "Use its handle", "Hold the handle, not the head"],
    "prefer_red": ["The red block, please", "Red is the one", "Select the red one"],
    "prefer_blue": ["The blue block, please", "Blue is the one", "Select the blue one"],
    "prefer_bigger": ["The larger block, please", "Select the big one", "Use the bulkier one"],
    "prefer_smaller": ["The smaller block, please", "Select the little one", "Use the compact one"],
}


# Set C: written after the first benchmark had shown the 21-point paraphrase drop (with sets A and B),
# before the auxiliary-loss retraining; used only in the final evaluation, never probed.
HELD_OUT_C: dict[str, list[str]] = {
    "speed_up": ["Get a move on", "Be fast about it", "Rapidly, please"],
    "slow_down": ["Unhurried, please", "At a crawl", "Slowly does it"],
    "smooth": ["Keep your motions smooth and soft", "No abrupt starts or stops", "Glide rather than jerk"],
    "keep_away": ["Keep clear of {obstacle}", "Do not go near {obstacle}", "Leave plenty of room around {obstacle}"],
    "move_higher": ["Lift it way up while moving it", "Carry it up high", "Keep a high path while carrying"],
    "close_to_ground": ["Keep it close to the surface while moving", "Carry it down low",
                        "Stay just over the table while carrying"],
    "rotate_when_placing": ["Rotate it ninety degrees as you put it down",
                            "Turn it a quarter of the way round when placing", "Place it after turning it sideways"],
    "push": ["Push, don't lift", "Slide it over instead of carrying it", "Shove it along the table"],
    "grasp_by_handle": ["Grip it at the handle", "Lift it from the handle end", "Handle only, please"],
    "prefer_red": ["Go for red", "Pick out the red block", "The one that is red"],
    "prefer_blue": ["Go for blue", "Pick out the blue block", "The one that is blue"],
    "prefer_bigger": ["Go for the big block", "The one that is bigger", "Pick out the largest"],
    "prefer_smaller": ["Go for the small block", "The one that is smaller", "Pick out the littlest"],
}


# Validation paraphrases: written for model selection when the 21-point drop was being worked on
# (issue 19, second round), before any new training wording and before the probe/rollouts that used
# them. Checkpoints, loss weights and thresholds are chosen on these (validation layouts 500+), never
# on sets A, B or C; they are never trained on. Distinct from every training and held-out wording.
VALIDATION: dict[str, list[str]] = {
    "speed_up": ["Hustle", "Work quickly, please", "No time to lose", "Speed things up"],
    "slow_down": ["Not so fast", "Keep the speed down", "Proceed slowly", "There's no rush"],
    "smooth": ["Fluid motions only", "Don't jerk it around", "Make the movement soft", "Keep every motion gradual"],
    "keep_away": ["Avoid going near {obstacle}", "Keep well away from {obstacle}", "Don't bump into {obstacle}",
                  "Keep a wide margin around {obstacle}"],
    "move_higher": ["Keep it elevated while you move", "Move it at a high height", "Take a high route",
                    "Don't let it drop low while carrying"],
    "close_to_ground": ["Keep it low to the table", "Take a low route", "Don't lift it high",
                        "Carry it only slightly above the surface"],
    "rotate_when_placing": ["Turn it ninety degrees before placing", "Place it with a 90 degree twist",
                            "Put it down at a right angle to how you picked it up", "Rotate before you let go"],
    "push": ["Push it rather than carrying it", "Keep it on the surface and slide it", "No lifting, just push",
             "Slide it into place"],
    "grasp_by_handle": ["Grab the handle part", "Hold it from its handle", "Pick it up from the handle",
                        "The handle is where to hold it"],
    "prefer_red": ["Red one, please", "I'd prefer the red block", "Choose red", "Get the red block"],
    "prefer_blue": ["Blue one, please", "I'd prefer the blue block", "Choose blue", "Get the blue block"],
    "prefer_bigger": ["Bigger one, please", "I'd prefer the large block", "Choose the larger of the two",
                      "Get the big block"],
    "prefer_smaller": ["Smaller one, please", "I'd prefer the small block", "Choose the smaller of the two",
                       "Get the tiny block"],
}


# Compositional training wordings (second round, after the first benchmark showed unseen wordings of
# the speed and height preferences falling to "no preference" or to their antonym). Shared sentence
# frames x the words that carry each preference, with the *same* frames across antonyms (quickly /
# slowly, high / low, red / blue, bigger / smaller) and negated opposites ("don't go fast"), so the
# only difference a recogniser can use is the word that matters. Written from general vocabulary;
# phrases near a held-out or validation wording were avoided, and any training wording that is a
# near-duplicate of one (``near_duplicate``: same content words up to order, or Jaccard >= 0.6) is
# dropped below -- this also removes some first-round wordings; a test checks it.
_MANNER_FRAMES = ("{X}", "Move {x}", "Go {x}", "Do it {x}", "Carry it {x}", "Work {x}", "Please move {x}",
                  "Move {x}, please", "I want you to move {x}", "Try to move {x}", "Do the task {x}",
                  "Bring it over {x}")
_HEIGHT_FRAMES = ("Carry it {x}", "Keep it {x}", "Move it {x}", "Bring it over {x}", "Take it across {x}",
                  "Carry the object {x}", "Keep the object {x} while moving")
_CHOICE_FRAMES = ("Use the {x} block", "Take the {x} one", "I want the {x} one", "Pick the {x} block", "The {x} one",
                  "The {x} block", "Grab the {x} block", "I'd like the {x} one", "Move the {x} block",
                  "Bring the {x} one", "Only the {x} one", "{X}, please", "My pick is the {x} one")


def _frames(frames: tuple[str, ...], words: tuple[str, ...]) -> list[str]:
    return [f.format(x=w, X=w[:1].upper() + w[1:]) for f in frames for w in words]


_GENERATED: dict[str, list[str]] = {
    "speed_up": _frames(_MANNER_FRAMES, ("quickly", "fast", "rapidly", "swiftly", "speedily", "briskly",
                                         "at full speed", "at high speed", "with haste", "at a quick pace")) + [
        "Hurry", "Speed up", "Step on it", "Be swift", "Be fast", "Quick, please", "Don't be slow",
        "Don't take long", "No dawdling", "Make haste", "Chop chop", "Time is short", "We're short on time",
        "I don't have all day", "Get it done quickly", "Faster", "Go faster", "Speed it up",
        "Increase your speed", "Full speed ahead", "Rush it", "Let's be quick", "Don't go slowly",
        "Don't move slowly", "No slow moves", "Quicker than usual"],
    "slow_down": _frames(_MANNER_FRAMES, ("slowly", "at a slow pace", "at low speed", "unhurriedly",
                                          "without hurrying", "at a snail's pace", "at reduced speed",
                                          "at a relaxed pace", "with no hurry", "at a slow speed")) + [
        "Slower", "Go slower", "Move slower", "Slow it down", "Take it slow", "Don't hurry", "No hurry",
        "There's no hurry", "Don't be quick", "Don't move quickly", "Don't be hasty", "No haste",
        "Not too fast", "Not too quickly", "No speeding", "Lower your speed", "Decrease the speed",
        "Keep it slow", "Slow and steady", "Be slow", "Be patient", "We have plenty of time",
        "Time is not a problem", "Slower than usual"],
    "smooth": _frames(_MANNER_FRAMES, ("smoothly", "fluidly", "evenly", "steadily", "softly", "gracefully",
                                       "without jerks", "without jolts", "with gentle accelerations")) + [
        "No jerks", "Don't jerk", "Don't jolt it", "Avoid jerky motion", "Keep the motion smooth", "Be smooth",
        "Smooth movements, please", "Accelerate softly", "Brake softly", "Keep accelerations gentle",
        "Keep it steady", "Steady movements", "No shaking", "Don't shake it", "Soft, flowing motion",
        "Smoother than usual"],
    "keep_away": [
        "Keep away from {obstacle}", "Don't go close to {obstacle}", "Don't brush against {obstacle}",
        "Go the long way around {obstacle}", "Give {obstacle} plenty of space", "Pass far from {obstacle}",
        "Don't pass near {obstacle}", "Keep off {obstacle}", "Don't knock {obstacle}", "Be careful around {obstacle}",
        "Mind {obstacle}", "Watch out for {obstacle}", "Keep a big gap to {obstacle}",
        "Maintain distance from {obstacle}", "Route around {obstacle}", "Stay far away from {obstacle}",
        "Avoid {obstacle}, please", "Don't hit {obstacle}", "Keep clear of the obstacle", "Avoid the obstacle",
        "Stay away from the obstacle", "Far from {obstacle}, please"],
    "move_higher": _frames(_HEIGHT_FRAMES, ("high", "high up", "high above the table", "far above the table",
                                            "well above the surface", "at a high level", "higher than normal",
                                            "at a great height")) + [
        "Lift it high", "Raise it higher", "Lift it higher", "High, please", "Go high", "Stay high", "Take it high",
        "Keep plenty of clearance", "Don't carry it low", "Don't keep it low", "Not too low", "Don't skim the table",
        "Lift it well clear of the table", "Higher"],
    "close_to_ground": _frames(_HEIGHT_FRAMES, ("low", "near the table", "close to the table",
                                                "close to the tabletop", "at a low height", "lower than normal",
                                                "barely above the table", "an inch above the table")) + [
        "Stay low", "Low, please", "Go low", "Don't carry it high", "Don't keep it high", "Not too high",
        "Don't raise it", "Barely lift it", "Skim the table", "Hug the table", "Lift it only a little",
        "Minimal height", "Stay close to the tabletop", "Lower"],
    "rotate_when_placing": [
        "Rotate it when placing", "Turn it when placing", "Rotate it before you put it down",
        "Turn it before you put it down", "Rotate it by 90 degrees", "Turn it by ninety degrees",
        "Give it a 90 degree turn", "A quarter turn before you place it", "Rotate it a quarter turn",
        "Change its angle before placing", "Place it turned", "Put it down rotated", "Reorient it when placing",
        "Yaw it by ninety degrees", "Rotate it, then place it", "Turn the object before releasing it"],
    "push": [
        "Push it", "Push it along", "Push it to the spot", "Slide it", "Slide it along", "Slide it across",
        "Push it along the table", "Don't pick it up", "Keep it on the table", "Keep it touching the table",
        "Never lift it", "Slide, don't carry", "Push it with the gripper", "No grasping, push it",
        "Move it by sliding", "Don't carry it, push it"],
    "grasp_by_handle": [
        "Grab it by the handle", "Hold the handle", "Grasp the handle", "Grasp it by its handle",
        "Pick it up by the handle", "Take it by its handle", "Handle first", "Hold the grip end",
        "Use the handle when grasping", "Not by the head", "Avoid the head", "Don't hold the head",
        "Grasp the handle, please", "Take the handle side"],
    "prefer_red": _frames(_CHOICE_FRAMES, ("red",)) + ["Red is my favourite", "I prefer red"],
    "prefer_blue": _frames(_CHOICE_FRAMES, ("blue",)) + ["Blue is my favourite", "I prefer blue"],
    "prefer_bigger": _frames(_CHOICE_FRAMES, ("bigger", "larger", "big", "large", "biggest", "largest")) + [
        "Not the smaller block", "I prefer big blocks"],
    "prefer_smaller": _frames(_CHOICE_FRAMES, ("smaller", "small", "little", "smallest")) + [
        "Not the larger block", "I prefer small blocks"],
}


def normalise(wording: str) -> str:
    """Lower case, words only: how wordings are compared for overlap between sets."""
    return " ".join(re.findall(r"[a-z0-9'{}]+", wording.lower()))


# Words that carry no preference; ignored when two wordings are compared for near-duplication.
_FILLER = frozenset("a an the it its one block object obstacle {obstacle} please you your i i'd me to of as while when is that".split())
NEAR = 0.6  # content-word Jaccard at or above which a training wording counts as a copy of a reserved one


def content_words(wording: str) -> frozenset[str]:
    return frozenset(normalise(wording).split()) - _FILLER


def near_duplicate(a: str, b: str) -> bool:
    """Same words up to order and filler, or mostly the same ("Carry it high up" ~ "Carry it up high")."""
    x, y = content_words(a), content_words(b)
    return normalise(a) == normalise(b) or (bool(x | y) and len(x & y) / len(x | y) >= NEAR)


def reserved(pid: str) -> list[str]:
    """The wordings of ``pid`` that training must not see: held-out sets A, B, C and VALIDATION."""
    return [w for table in (HELD_OUT, HELD_OUT_B, HELD_OUT_C, VALIDATION) for w in table[pid]]


def _training_wordings(pid: str) -> list[str]:
    """Registry wording, then the first round, then the compositional ones; duplicates dropped and
    every wording that is a near-duplicate of a reserved (held-out or validation) one left out,
    the registry wording excepted (the demonstrator and ``single`` tasks use it)."""
    out, keep = [], reserved(pid)
    registry = P.get(pid).language
    for w in [registry, *_EXTRA_TRAIN[pid], *_GENERATED[pid]]:
        if any(normalise(w) == normalise(o) for o in out):
            continue
        if w == registry or not any(near_duplicate(w, r) for r in keep):
            out.append(w)
    return out


TRAIN: dict[str, list[str]] = {pid: _training_wordings(pid) for pid in _EXTRA_TRAIN}


# Rule-based rewrites of the training wordings (third round, issue 19): the same instruction in other
# surface forms -- a request frame around it, contractions expanded, punctuation changed --
# so a policy learns that the preference word, not the sentence around it, carries the meaning. Generic
# frames written without looking at the reserved sets; a rewrite that is a near-duplicate of a reserved
# wording is dropped like any training wording (``_training_wordings`` rules, tested).
_REQUEST_FRAMES = ("{w}, please", "{w}, thanks", "Just one thing: {l}", "My preference: {l}", "For this one, {l}",
                   "{w} this time", "Oh, and {l}", "If possible, {l}", "{w}, if you can", "Remember: {l}", "Important: {l}",
                   "Note: {l}", "{w}, okay?", "One request: {l}")
_CONTRACTIONS = (("Don't", "Do not"), ("don't", "do not"), ("I'd", "I would"), ("There's", "There is"),
                 ("We're", "We are"), ("I'm", "I am"), ("Let's", "Let us"))


def rewrites(wording: str, n: int = 2) -> list[str]:
    """Up to ``n`` deterministic rule-based rewrites of ``wording``: each a request frame around it, every
    second one with contractions expanded ("Don't" -> "Do not"); never the wording itself. (MiniLM's
    tokenizer is uncased, so casing is no rewrite.)"""
    w = wording.rstrip(".!")
    lower = w if w.startswith(("I ", "I'", "{")) else w[:1].lower() + w[1:]
    h = sum(map(ord, w))
    out = []
    for k in range(n):
        r = _REQUEST_FRAMES[(h + 5 * k) % len(_REQUEST_FRAMES)].format(w=w, l=lower)
        if k % 2 == 1:
            for a, b in _CONTRACTIONS:
                r = r.replace(a, b)
        if normalise(r) != normalise(wording) and r not in out:
            out.append(r)
    return out


def _augmented_wordings(pid: str) -> list[str]:
    out, keep = list(TRAIN[pid]), reserved(pid)
    seen = {normalise(w) for w in out}
    for w in TRAIN[pid]:
        for r in rewrites(w):
            if normalise(r) not in seen and not any(near_duplicate(r, x) for x in keep):
                seen.add(normalise(r))
                out.append(r)
    return out


# Training wordings plus their rewrites (``personal perm train --rewrites``); reserved sets stay out.
TRAIN_REWRITTEN: dict[str, list[str]] = {pid: _augmented_wordings(pid) for pid in TRAIN}


def fill(text: str, layout: Layout | None) -> str:
    """Fill ``{obstacle}`` the way the registry does."""
    return P._fill(text, layout)


def prompt(task: str, wording: str, layout: Layout | None = None) -> str:
    """``Task: {task}. Preference: {wording}.`` with one given wording of one preference."""
    return f"Task: {task.rstrip('.')}. Preference: {fill(wording, layout).rstrip('.')}."
