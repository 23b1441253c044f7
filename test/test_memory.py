"""The household memory: persistence across kill -9, refusal of damaged files, history kept
through ownership changes, and plain statements in several styles changing it."""
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from personal.memory.events import BuiltinStatementReader, apply_events, resolve
from personal.memory.store import HouseholdMemory, MemoryFileError


def _home(tmp_path):
    mem = HouseholdMemory(tmp_path / "home.sqlite")
    mug_tom = mem.add_object("blue mug on the kitchen counter", "mug", embedding=[0.1, 0.2], t=0)
    mug_lisa = mem.add_object("red mug by the sink", "mug", t=0)
    lamp = mem.add_object("green lamp on the desk", "lamp", t=0)
    backpack = mem.add_object("black backpack under the bed", "backpack", t=0)
    mem.assert_owner("Tom", mug_tom, "summary", t=0)
    mem.assert_owner("Lisa", mug_lisa, "summary", t=0)
    mem.assert_owner("Tom", lamp, "summary", t=0)
    mem.assert_owner("Lily", backpack, "summary", t=0)
    return mem, dict(mug_tom=mug_tom, mug_lisa=mug_lisa, lamp=lamp, backpack=backpack)


def test_ownership_changes_keep_history_and_answer_at_any_time(tmp_path):
    mem, ids = _home(tmp_path)
    mem.end_owner("Tom", ids["lamp"], t=10)
    mem.assert_owner("Anna", ids["lamp"], "statement", t=10)
    assert [o.person for o in mem.owners(ids["lamp"])] == ["Anna"]
    assert [o.person for o in mem.owners(ids["lamp"], at=5)] == ["Tom"]
    assert [(o.person, o.valid_to) for o in mem.ownership_history(ids["lamp"])] == [("Tom", 10), ("Anna", None)]
    mem.discard(ids["backpack"], "thrown out", t=20)
    assert ids["backpack"] not in {o.id for o in mem.objects()}
    assert ids["backpack"] in {o.id for o in mem.objects(at=15)}
    assert mem.objects_of("Lily") == [] and [o.id for o in mem.objects_of("Lily", at=15)] == [ids["backpack"]]
    np.testing.assert_allclose(mem.embedding(ids["mug_tom"]), [0.1, 0.2])
    with pytest.raises(ValueError, match="provenance"):
        mem.assert_owner("Tom", ids["lamp"], "hearsay")


def test_summary_reads_the_current_household(tmp_path):
    mem, ids = _home(tmp_path)
    mem.assert_owner("Lisa", ids["lamp"], "user", t=1)  # shared from t=1
    text = mem.summary()
    assert "The green lamp on the desk belongs to Lisa and Tom." in text
    assert "The black backpack under the bed belongs to Lily." in text
    assert "Lisa" not in mem.summary(at=0.5).split("lamp")[1].split(".")[0]


def test_sightings_and_verdicts(tmp_path):
    mem, ids = _home(tmp_path)
    assert mem.last_seen(ids["mug_tom"]) is None
    mem.saw(ids["mug_tom"], (1.0, 2.0), t=3)
    mem.saw(ids["mug_tom"], (4.0, 5.0, 0.8), t=7)
    seen = mem.last_seen(ids["mug_tom"])
    assert (seen.x, seen.y, seen.z, seen.t) == (4.0, 5.0, 0.8, 7)
    with pytest.raises(ValueError, match="finite"):
        mem.saw(ids["mug_tom"], (float("nan"), 0.0))
    mem.record_verdict(ids["mug_lisa"], "Tom's mug", "no", 0.9, t=1)
    mem.record_verdict(ids["lamp"], "Tom's mug", "no", 0.6, t=1)
    mem.record_verdict(ids["lamp"], "Tom's mug", "yes", 0.7, t=2)  # the latest verdict counts
    assert mem.rejected_for("Tom's mug") == {ids["mug_lisa"]}


def test_preferences_replace_and_keep_the_old_value(tmp_path):
    mem, _ = _home(tmp_path)
    mem.set_preference("Tom", "manipulation", "mug_handle", "handle out", t=1)
    mem.set_preference("Tom", "manipulation", "mug_handle", "handle left", t=2)
    mem.set_preference("Tom", "appliance", "thermostat", "21", t=2)
    assert mem.preferences("Tom", "manipulation") == {"mug_handle": "handle left"}
    assert mem.preferences("Tom") == {"manipulation.mug_handle": "handle left", "appliance.thermostat": "21"}
    rows = mem._db.execute("SELECT value, valid_to FROM preferences WHERE key = 'mug_handle' ORDER BY id").fetchall()
    assert rows == [("handle out", 2.0), ("handle left", None)]


_WRITER = textwrap.dedent("""
    import sys, time
    from personal.memory.store import HouseholdMemory
    mem = HouseholdMemory(sys.argv[1])
    k = 0
    while True:
        oid = mem.add_object(f"mug number {k}", t=k)
        mem.assert_owner("Tom", oid, "statement", t=k)
        print(k, flush=True)  # printed only after both transactions committed
        k += 1
""")


def test_memory_survives_kill_9_with_every_acknowledged_fact(tmp_path):
    path = tmp_path / "home.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    acked = -1
    deadline = time.monotonic() + 60
    while acked < 40 and time.monotonic() < deadline:
        acked = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert acked >= 40
    mem = HouseholdMemory(path, create=False)
    owned = {o.description for o in mem.objects_of("Tom")}
    assert {f"mug number {k}" for k in range(acked + 1)} <= owned


def test_a_damaged_or_foreign_file_is_refused_by_name_and_left_alone(tmp_path):
    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    before = bad.read_bytes()
    with pytest.raises(MemoryFileError, match="garbage.sqlite"):
        HouseholdMemory(bad)
    assert bad.read_bytes() == before
    foreign = tmp_path / "other.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(MemoryFileError, match="other.sqlite.*not a household memory"):
        HouseholdMemory(foreign)
    mem, _ = _home(tmp_path)
    mem.close()
    path = tmp_path / "home.sqlite"
    data = bytearray(path.read_bytes())
    data[4096:4096 + 12] = b"\xff" * 12  # scribble over the second page's b-tree header
    path.write_bytes(bytes(data))
    with pytest.raises(MemoryFileError, match="home.sqlite"):
        HouseholdMemory(path)
    with pytest.raises(MemoryFileError, match="no household memory"):
        HouseholdMemory(tmp_path / "absent.sqlite", create=False)


# Each change told in several styles; every one must reach the same memory.
STYLES = {
    "gift": ["Tom gave his lamp to Anna.", "Tom gave Anna his lamp yesterday.", "Tom's lamp now belongs to Anna.",
             "Anna has Tom's lamp now.", "Tom handed the green lamp over to Anna.", ("I gave my lamp to Anna.", "Tom"),
             "The green lamp now belongs to Anna.", "The green lamp is Anna's now."],
    "discard": ["The black backpack is gone.", "Lily lost her backpack.", "Lily's backpack broke.",
                ("I threw away my backpack.", "Lily"), "The backpack was thrown out."],
    "correction": ["Actually, the red mug is Tom's, not Lisa's.", "The red mug isn't Lisa's, it's Tom's.",
                   "Correction: the red mug belongs to Tom.", "Actually, Tom owns the red mug, not Lisa."],
    "new": [("I bought a new yellow mug.", "Lisa"), "Lisa bought a new yellow mug.", "There's a new yellow mug for Lisa.",
            "We got Lisa a new yellow mug.", ("This new yellow mug is mine.", "Lisa"), "Lisa received a brand-new yellow mug today."],
}


def _expect(kind, mem, ids):
    if kind == "gift":
        return [o.person for o in mem.owners(ids["lamp"])] == ["Anna"]
    if kind == "discard":
        return ids["backpack"] not in {o.id for o in mem.objects()} and mem.objects_of("Lily") == []
    if kind == "correction":
        return [o.person for o in mem.owners(ids["mug_lisa"])] == ["Tom"]
    new = [o for o in mem.objects_of("Lisa") if o.id not in ids.values()]
    return len(new) == 1 and new[0].description == "yellow mug" and len(mem.objects()) == 5


@pytest.mark.parametrize("kind,case", [(k, c) for k, cases in STYLES.items() for c in cases])
def test_statements_in_several_styles_change_the_memory(tmp_path, kind, case):
    text, speaker = (case, None) if isinstance(case, str) else case
    mem, ids = _home(tmp_path)
    events = BuiltinStatementReader().read(text, speaker)
    applied = apply_events(mem, events, t=100, statement=text, speaker=speaker)
    assert not applied.unresolved, applied.outcomes
    assert _expect(kind, mem, ids), (events, mem.summary())
    assert mem.statements()[-1][2] == text
    # the untouched facts stay
    assert [o.person for o in mem.owners(ids["mug_tom"])] == ["Tom"]


def test_old_and_new_pick_among_look_alikes_and_unknown_objects_are_reported(tmp_path):
    mem, ids = _home(tmp_path)
    apply_events(mem, BuiltinStatementReader().read("Lily bought a new backpack."), t=50)
    newest = max(o.id for o in mem.objects())
    assert resolve(mem, "old backpack").id == ids["backpack"]
    assert resolve(mem, "new backpack").id == newest
    applied = apply_events(mem, BuiltinStatementReader().read("The old backpack is gone."), t=60)
    assert not applied.unresolved and [o.id for o in mem.objects_of("Lily")] == [newest]
    applied = apply_events(mem, BuiltinStatementReader().read("The purple piano is gone."), t=70, statement="x")
    assert applied.unresolved and "no object in memory matches 'purple piano'" in applied.unresolved[0].effect
    assert mem.statements()[-1][3].startswith("discard: no object")


def test_a_household_id_that_is_not_a_plain_name_is_refused(tmp_path):
    from personal.memory.desk import open_household
    from personal.paths import UnsafeIdError

    with pytest.raises(UnsafeIdError, match="household id"):
        open_household(str(tmp_path), "../../etc/x")
    assert open_household(str(tmp_path), "hh0007").path == tmp_path / "hh0007.sqlite"


def test_a_phrase_that_fits_several_objects_alike_is_reported_not_guessed(tmp_path):
    from personal.memory.events import ambiguous

    mem = HouseholdMemory(tmp_path / "home.sqlite")
    bath = mem.add_object("white hamper in the bathroom", "hamper", t=0)
    bed = mem.add_object("white hamper with a lid in the bedroom", "hamper", t=1)
    plain = mem.add_object("brown cabinet with a gold handle in the kitchen", "cabinet", t=0)
    dark = mem.add_object("dark brown cabinet against the wall in the hallway", "cabinet", t=0)
    lamp = mem.add_object("green lamp on the desk", "lamp", t=0)
    other_lamp = mem.add_object("lamp by the sofa", "lamp", t=0)
    for oid in (bath, bed, plain, dark, lamp):
        mem.assert_owner("Tom", oid, "summary", t=0)
    mem.assert_owner("Lisa", other_lamp, "summary", t=0)
    reader = BuiltinStatementReader()
    # two of Tom's hampers fit "my white hamper" equally: asked back, nothing discarded
    applied = apply_events(mem, reader.read("I threw away my white hamper.", "Tom"), t=10, statement="x", speaker="Tom")
    assert applied.unresolved and f"{bath} 'white hamper in the bathroom'" in applied.unresolved[0].effect
    assert "say which one" in applied.unresolved[0].effect and {bath, bed} <= {o.id for o in mem.objects()}
    assert {o.id for o in ambiguous(mem, "white hamper", "Tom")} == {bath, bed}
    # said apart by its room, or as the old one: resolved
    applied = apply_events(mem, reader.read("I threw away my white hamper in the bedroom.", "Tom"), t=11)
    assert not applied.unresolved and bed not in {o.id for o in mem.objects()} and bath in {o.id for o in mem.objects()}
    assert ambiguous(mem, "old white hamper", "Tom") == []
    # "brown cabinet" is the brown one, not the dark brown one (fewest of its own words unsaid)
    assert resolve(mem, "brown cabinet", "Tom").id == plain and ambiguous(mem, "brown cabinet", "Tom") == []
    # the owner's object comes before a description that says fewer words: Tom's lamp is the green one
    applied = apply_events(mem, reader.read("Tom gave his lamp to Anna."), t=12)
    assert not applied.unresolved and [o.person for o in mem.owners(lamp)] == ["Anna"]
    assert [o.person for o in mem.owners(other_lamp)] == ["Lisa"]
