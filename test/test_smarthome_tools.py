"""Each PersonalHomeTools tool on the hand-written household, and each error type."""
import json
from pathlib import Path

import pytest

from personal.smarthome.household import Memory, load_household
from personal.smarthome.memory import MemoryIndex
from personal.smarthome.tools import ERROR_TYPES, SPECS, TOOL_SPECS, PersonalHomeTools, ToolExecutor

DATA = Path(__file__).parent / "data" / "smarthome_household.json"


@pytest.fixture(scope="module")
def memory():
    return MemoryIndex()  # the packaged MiniLM model, loaded once for this module


@pytest.fixture
def ex(memory):
    return ToolExecutor(PersonalHomeTools(load_household(DATA), memory))


def ok(ex, name, args=None):
    r = ex.call(name, args or {})
    assert r.ok, (name, r.error_type, r.message)
    return r.output


def test_tool_list_matches_the_seed():
    assert [s.name for s in TOOL_SPECS] == [
        "get_household_profile", "get_household_member_info", "get_household_member_major_events", "get_household_memories",
        "get_member_memories", "get_owned_appliances", "get_appliances", "get_appliances_by_location",
        "get_appliance_features", "run_appliance_feature", "update_appliance", "get_contextual_event_descriptions",
        "get_scene_summary", "get_layout_zones", "get_landmarks_in_house", "get_members_appearance",
        "get_appliance_descriptions", "get_object_information", "extract_captions", "extract_event_captions",
        "inspect_video_segment", "get_audio_events", "extract_frames"]
    sig = {s.name: [(a.name, a.required) for a in s.args] for s in TOOL_SPECS}
    assert sig["run_appliance_feature"] == [("appliance_name", True), ("feature_method", True), ("feature_kwargs", True)]
    assert sig["get_member_memories"] == [("member_id", True), ("search_string", True), ("num_memories", True)]
    assert sig["extract_captions"] == [("start", False), ("end", False), ("query", False), ("return_text", True),
                                       ("join_with", False)]
    fn = SPECS["get_appliances"].openai()["function"]
    assert fn["parameters"]["required"] == ["appliance_names"] and fn["parameters"]["properties"]["appliance_names"]["type"] == "array"


def test_household_information_tools(ex):
    prof = ok(ex, "get_household_profile")
    assert prof["member_ids"] == ["hand01_1", "hand01_2"] and prof["pets"][0]["name"] == "Denali"
    info = ok(ex, "get_household_member_info", {"member_ids": ["hand01_2"]})
    assert info[0]["name"] == "Leo Carter" and info[0]["age"] == 9 and "major_events" not in info[0]
    ev = ok(ex, "get_household_member_major_events", {"member_id": "hand01_1"})
    assert {e["description"] for e in ev["major_events"]} == {"Moved into this home", "Graduated from nursing school"}


def test_memory_search_ranks_by_meaning_and_caches_until_memories_change(ex, memory):
    calls = memory.encode_calls
    top = ok(ex, "get_household_memories", {"search_string": "baking bread in the oven", "num_memories": 2})
    assert top[0]["memory"].startswith("Emily baked banana bread") and len(top) == 2
    mine = ok(ex, "get_member_memories", {"member_id": "hand01_2", "search_string": "games", "num_memories": 5})
    assert [m["subjects"] for m in mine] == [["hand01_2"]]  # only Leo's memories
    assert memory.encode_calls <= calls + 1  # one encoding of this household's memories, reused
    before = memory.encode_calls
    ok(ex, "get_household_memories", {"search_string": "thermostat rule", "num_memories": 1})
    assert memory.encode_calls == before
    ex.tools.household.memories.append(Memory(memory="Leo built a treehouse.", subjects=["hand01_2"], time="2026-11-12"))
    found = ok(ex, "get_member_memories", {"member_id": "hand01_2", "search_string": "treehouse", "num_memories": 1})
    assert memory.encode_calls == before + 1 and found[0]["memory"] == "Leo built a treehouse."


def test_appliance_tools_and_state_changes(ex):
    owned = ok(ex, "get_owned_appliances")
    assert {"appliance_name": "garage-door-opener", "type": "garage_door_opener"} in owned and len(owned) == 9
    st = ok(ex, "get_appliances", {"appliance_names": ["thermostat", "tv"]})
    assert st["thermostat"]["state"]["target_temperature_f"] == 71 and st["tv"]["location"] == "Living Room"
    kitchen = ok(ex, "get_appliances_by_location", {"locations": ["kitchen"]})
    assert sorted(a["appliance_name"] for a in kitchen) == ["microwave", "oven", "refrigerator", "stove"]
    feats = json.loads(ok(ex, "get_appliance_features", {"appliance_names": ["oven"]}))
    assert "remote_preheat" in {f["method"] for f in feats["oven"]}
    assert ok(ex, "run_appliance_feature", {"appliance_name": "thermostat", "feature_method": "set_target_temperature",
                                            "feature_kwargs": {"temperature_f": 68}}) == {"target_temperature_f": 68}
    version = ex.tools.state_version
    assert ok(ex, "update_appliance", {"appliance_name": "tv", "state": {"volume": 30}}) == {"status": "ok"}
    assert ex.tools.state_version == version + 1
    st = ok(ex, "get_appliances", {"appliance_names": ["thermostat", "tv"]})
    assert st["thermostat"]["state"]["target_temperature_f"] == 68 and st["tv"]["state"]["volume"] == 30
    desc = ok(ex, "get_appliance_descriptions", {"appliance_names": ["tv", "oven"]})
    assert desc["tv"] == "large TV on the wall" and "oven" in desc["oven"].lower()


def test_context_and_video_tools(ex, tmp_path):
    text = ok(ex, "get_contextual_event_descriptions", {"sort_by_time": True})
    assert text.index("stove was switched on") < text.index("Motion detected") and "home alone" in text
    compact = ok(ex, "get_contextual_event_descriptions", {"compact": True})
    assert "sensor motion-1" not in compact and "sensor motion-1" in text
    assert ok(ex, "get_scene_summary").startswith("A boy makes a snack")
    assert [z["label"] for z in ok(ex, "get_layout_zones")] == ["Kitchen", "Living Room"]
    assert ok(ex, "get_landmarks_in_house")[0]["type"] == "counter"
    assert ok(ex, "get_members_appearance", {"member_ids": ["hand01_2"]}) == {"hand01_2": "boy in a red hoodie"}
    assert json.loads(ok(ex, "get_object_information"))["o1.label"] == "mug"
    caps = ok(ex, "extract_captions", {"start": "00:21", "return_text": False})
    assert [c["caption"] for c in caps] == ["The boy turns on the TV."]
    joined = ok(ex, "extract_captions", {"query": "sandwich", "return_text": True, "join_with": " || "})
    assert joined == "00:00.000-00:20.000 | The boy makes a sandwich at the counter."
    assert ok(ex, "extract_event_captions", {"num_events": 1}) == [{"caption": "The boy turns on the TV."}]
    assert ok(ex, "extract_event_captions", {"query": "sandwich"}) == [{"caption": "The boy makes a sandwich."}]
    seg = ok(ex, "inspect_video_segment", {"start": 19.0, "end": 25.0})
    assert seg["video_handle"].endswith("#t=19,25") and [e["event_id"] for e in seg["events"]] == ["e1", "e2"]
    assert ok(ex, "get_audio_events", {"query": "chime"}) == [{"ts_start": "00:20.000", "ts_end": "00:31.500", "audio": "TV chime"}]
    # frames from a real (animated GIF) video file
    from PIL import Image

    frames = [Image.new("RGB", (8, 8), (i * 40, 0, 0)) for i in range(6)]
    gif = tmp_path / "clip.gif"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=250, loop=0)
    ex.tools.video_path = gif
    out = ok(ex, "extract_frames", {"start": 0, "end": 1, "fps": "2"})
    assert [f["t"] for f in out] == [0.0, 0.5, 1.0] and out[0]["png_base64"]


def test_extract_frames_from_an_mp4(ex, tmp_path):
    av = pytest.importorskip("av")
    import base64
    import io

    import numpy as np
    from PIL import Image

    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as c:
        s = c.add_stream("mpeg4", rate=10)
        s.width, s.height, s.pix_fmt = 32, 32, "yuv420p"
        for i in range(30):  # 3 s at 10 fps, brightness rising with time
            for pkt in s.encode(av.VideoFrame.from_ndarray(np.full((32, 32, 3), i * 8, np.uint8), format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    ex.tools.video_path = path
    out = ok(ex, "extract_frames", {"start": 1, "end": 2, "fps": 4})
    assert [f["t"] for f in out] == [1.0, 1.3, 1.6, 1.9]
    means = [np.asarray(Image.open(io.BytesIO(base64.b64decode(f["png_base64"])))).mean() for f in out]
    assert means == sorted(means) and abs(means[0] - 80) < 6  # frame 10 has value 80
    ex.tools.video_path = tmp_path / "missing.mp4"
    assert ex.call("extract_frames", {"start": 0}).error_type == "EXECUTION_ERROR"


def test_each_error_type_is_reported(ex):
    seen = {}

    def err(name, args):
        r = ex.call(name, args)
        assert not r.ok and r.error_type in ERROR_TYPES
        payload = json.loads(r.for_agent())["error"]  # what the agent sees: type + message
        assert payload["type"] == r.error_type and payload["message"]
        seen.setdefault(r.error_type, r.message)
        return r

    assert err("get_household_profiles", {}).error_type == "INVALID_TOOL_NAME"
    assert err("get_household_member_info", {}).error_type == "MISSING_ARGUMENTS"
    assert err("get_household_profile", {"verbose": True}).error_type == "UNEXPECTED_ARGUMENTS"
    assert err("get_household_member_info", "Sure! {\"member_ids\": [\"hand01_1\"]}").error_type == "UPSTREAM_FORMAT_ERROR"
    assert err("get_household_member_info", "[1, 2]").error_type == "UPSTREAM_FORMAT_ERROR"
    r = err("get_household_member_info", {"member_ids": ["hand01_7"]})
    assert r.error_type == "EXECUTION_ERROR" and "unknown member_id 'hand01_7'" in r.message
    r = err("get_appliances", {"appliance_names": ["tv"]})  # prerequisite skipped: not retrieved yet
    assert r.error_type == "EXECUTION_ERROR" and "get_owned_appliances" in r.message
    ok(ex, "get_owned_appliances")
    r = err("get_appliances", {"appliance_names": ["dishwasher"]})
    assert r.error_type == "EXECUTION_ERROR" and "not in this household" in r.message
    r = err("run_appliance_feature", {"appliance_name": "tv", "feature_method": "universal_search", "feature_kwargs": {"query": "x"}})
    assert r.error_type == "EXECUTION_ERROR" and "set_power" in r.message  # needs the TV on first
    r = err("run_appliance_feature", {"appliance_name": "oven", "feature_method": "remote_preheat",
                                      "feature_kwargs": {"temperature_f": 9000}})
    assert r.error_type == "EXECUTION_ERROR" and "outside" in r.message
    r = err("get_household_member_info", {"member_ids": "hand01_1"})
    assert r.error_type == "EXECUTION_ERROR" and "must be of type array" in r.message
    r = err("update_appliance", {"appliance_name": "tv", "state": {"volume": 500}})
    assert r.error_type == "EXECUTION_ERROR"
    assert err("get_appliances_by_location", {"locations": ["Attic"]}).error_type == "EMPTY_OUTPUT"
    assert err("get_household_member_major_events", {"member_id": "hand01_2"}).error_type == "EMPTY_OUTPUT"
    assert err("extract_captions", {"query": "spaceship", "return_text": True}).error_type == "EMPTY_OUTPUT"
    assert err("extract_frames", {"start": 0}).error_type == "EXECUTION_ERROR"  # no video file attached
    assert set(seen) == set(ERROR_TYPES)
    counts = ex.error_counts()
    assert all(counts[e] >= 1 for e in ERROR_TYPES)


def test_household_without_video_gives_empty_output(memory):
    h = load_household(DATA)
    h.video_transcript = None
    ex = ToolExecutor(PersonalHomeTools(h, memory))
    for name in ("get_scene_summary", "get_layout_zones", "get_object_information"):
        r = ex.call(name, {})
        assert r.error_type == "EMPTY_OUTPUT" and "no video transcript" in r.message


def test_allowed_subset_hides_other_tools(memory):
    ex = ToolExecutor(PersonalHomeTools(load_household(DATA), memory), allowed={"get_household_profile"})
    assert [s.name for s in ex.specs()] == ["get_household_profile"]
    assert ex.call("get_owned_appliances", {}).error_type == "INVALID_TOOL_NAME"
