"""Mapping node frame bookkeeping without ROS (personal/mapping/frame_intake.py)."""
from types import SimpleNamespace

import numpy as np
import pytest

from personal.mapping.frame_intake import ContextQueue, SkipLog, TfQueue, frame_arrays, same_pose
from personal.mapping.ros_io import FrameError
from personal.tf import ExtrapolationError, TfError


def test_skip_log_counts_everything_and_throttles_the_warnings():
    log = SkipLog(period_s=2.0, keep=2)
    assert [log.add(r, t) for r, t in (("a", 10.0), ("b", 11.0), ("c", 12.5))] == [True, False, True]
    assert log.total == 3 and list(log.recent) == ["b", "c"]


def test_context_queue_drops_the_oldest_and_releases_in_order_while_ready():
    q = ContextQueue(limit=2)
    assert not q.hold({"_stamp": 1}) and not q.hold({"_stamp": 2})
    assert q.hold({"_stamp": 3})  # full: frame 1 goes
    budget = iter([True, False])
    assert [g["_stamp"] for g in q.release(lambda: next(budget))] == [2]
    assert len(q) == 1
    assert [g["_stamp"] for g in q.release(lambda: True)] == [3] and len(q) == 0


def _group(stamp_ns, frame="cam"):
    return {"_stamp": stamp_ns, "depth": SimpleNamespace(header=SimpleNamespace(frame_id=frame))}


def test_tf_queue_waits_for_late_transforms_then_skips_them():
    known = {}

    def lookup(target, source, stamp):
        if source == "nowhere":
            raise TfError("frame 'nowhere' is not connected to 'map'")
        if stamp not in known:
            raise ExtrapolationError("not yet")
        return known[stamp]

    q = TfQueue(lookup, "map", 0.5)
    for g in (_group(1_000_000_000), _group(1_200_000_000)):
        q.add(g)
    assert list(q.drain(newest_ns=1_300_000_000)) == [] and len(q) == 2  # may still come
    known[1_200_000_000] = np.eye(4)
    out = list(q.drain(newest_ns=1_600_000_000))  # frame 1 is 0.6 s behind: given up; frame 2 is in
    assert out[0][0] is None and "no transform map -> cam within 0.5 s" in out[0][1]
    assert out[1][0]["_stamp"] == 1_200_000_000 and out[1][0]["_T"] is known[1_200_000_000] and len(q) == 0
    q.add(_group(2_000_000_000, "nowhere"))
    (g, why), = q.drain(newest_ns=2_000_000_000)
    assert g is None and "not connected" in why


def _depth(w, h):
    return SimpleNamespace(encoding="32FC1", is_bigendian=0, height=h, width=w, step=4 * w,
                           data=np.ones((h, w), "<f4").tobytes(), header=SimpleNamespace(frame_id="cam"))


def _info(w, h):
    return SimpleNamespace(k=[100.0, 0, w / 2, 0, 100.0, h / 2, 0, 0, 1], width=w, height=h)


def _pose(x):
    p = SimpleNamespace(position=SimpleNamespace(x=x, y=0.0, z=1.0), orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0))
    return SimpleNamespace(pose=p)


def test_frame_arrays_checks_context_and_sizes():
    g = {"depth": _depth(4, 3), "pose": _pose(2.0)}
    with pytest.raises(FrameError, match="camera_info not received"):
        frame_arrays(g, None, "camera_pose", 0.88, 0.0)
    depth, K, T, rgb, ids = frame_arrays(g, _info(4, 3), "camera_pose", 0.88, 0.0)
    assert depth.shape == (3, 4) and T[0, 3] == 2.0 and rgb is None and ids is None and K[0, 0] == 100.0
    with pytest.raises(FrameError, match="does not match camera_info 5x3"):
        frame_arrays(g, _info(5, 3), "camera_pose", 0.88, 0.0)
    tf = {"depth": _depth(4, 3), "_T": np.diag([1.0, 1.0, 1.0, 1.0])}
    assert frame_arrays(tf, _info(4, 3), "tf", 0.88, 0.0)[2] is tf["_T"]


def test_same_pose_tolerance():
    T = np.eye(4)
    assert not same_pose(T, None)
    assert same_pose(T + 5e-5, T) and not same_pose(T + 1e-3, T)


class _Msg:
    def __init__(self, stamp_ns, frame="cam"):
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        self.header = SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nsec), frame_id=frame)


def _intake(keys=("depth", "pose"), lookup=None, context=None):
    from personal.mapping.frame_intake import FrameIntake

    out = {"integrated": [], "skipped": [], "progress": []}
    context = context if context is not None else {"missing": ""}
    intake = FrameIntake(keys, 0.02, 0.5, lambda: context["missing"], lambda g: out["integrated"].append(g["_stamp"]),
                         out["skipped"].append, out["progress"].append, lookup=lookup)
    return intake, out, context


def test_intake_holds_frames_until_their_context_then_reports_progress():
    intake, out, context = _intake(context={"missing": "camera/color/camera_info"})
    for t in (1_000_000_000, 2_000_000_000):
        intake.add("depth", _Msg(t))
        intake.add("pose", _Msg(t))
    assert out["integrated"] == [] and out["progress"] == [] and intake.waiting() == 2
    context["missing"] = ""
    intake.context_arrived()
    assert out["integrated"] == [1_000_000_000, 2_000_000_000] and out["progress"] == [2_000_000_000]
    intake.add("depth", _Msg(3_000_000_000))
    intake.add("pose", _Msg(3_000_000_000))
    assert out["integrated"][-1] == 3_000_000_000 and out["progress"][-1] == 3_000_000_000


def test_intake_skips_unmatched_frames_naming_the_stale_pose():
    intake, out, _ = _intake()
    intake.add("depth", _Msg(1_000_000_000))
    intake.add("depth", _Msg(2_000_000_000))  # 1 s later: the first frame's pose is overdue
    intake.expire()
    assert out["integrated"] == [] and any("no pose (stale or missing) within 20 ms" in r for r in out["skipped"])
    intake.add("depth", SimpleNamespace(header=None))
    assert out["skipped"][-1].startswith("depth: ")


def test_intake_with_tf_waits_for_the_transform_of_each_frame():
    known = {}

    def lookup(target, source, stamp):
        if stamp not in known:
            raise ExtrapolationError("later")
        return known[stamp]

    intake, out, _ = _intake(keys=("depth",), lookup=lookup)
    intake.add("depth", _Msg(1_000_000_000))
    assert out["integrated"] == [] and intake.waiting() == 1 and out["progress"] == []
    known[1_000_000_000] = np.eye(4)
    intake.expire()
    assert out["integrated"] == [1_000_000_000] and intake.waiting() == 0


def _live(**over):
    from personal.mapping.live_map import LiveMap

    p = dict(encoder="none", model_path="", scene_json="", episodes_dir="", feature_resolution=1.0, occupancy_resolution=0.1,
             stride=1, min_depth=0.1, max_depth=5.0, floor_z=0.0, agent_radius=0.18, pose_source="camera_pose",
             camera_height=0.88, camera_pitch=0.0, skip_static_frames=True, feature_process=False, map_name="")
    p.update(over)
    return LiveMap(p, SimpleNamespace(info=lambda m: None, error=lambda m: None, warning=lambda m: None))


def test_live_map_integrates_new_poses_only_and_skips_bad_frames():
    from personal.mapping.live_map import SkipFrame

    live = _live()
    assert live.missing_context(False) == "camera/color/camera_info" and live.missing_context(True) == ""
    g = {"depth": _depth(4, 3), "pose": _pose(2.0)}
    f = live.integrate(g, _info(4, 3))
    assert f is not None and live.frames == 1 and f.pose[0] == pytest.approx(2.0) and live.complete(f) == []
    assert live.integrate(g, _info(4, 3)) is None and live.frames == 1  # same pose: a re-published frame
    with pytest.raises(SkipFrame, match="does not match camera_info"):
        live.integrate({"depth": _depth(4, 3), "pose": _pose(3.0)}, _info(6, 3))
    live.integrate({"depth": _depth(4, 3), "pose": _pose(3.0)}, _info(4, 3))
    assert live.frames == 2
    live.reset()
    assert live.frames == 0 and live.last_pose is None and live.map_name() == "map"
    live.set_scene("synth_00001")
    assert live.map_name() == "synth_00001" and not live.needs_episode()  # no ORACLE encoder: no captions needed


def test_end_of_input_skips_what_cannot_complete_and_reports_the_newest_stamp():
    """A bag whose pose stream stopped before its depth stream: message-time expiry never fires (nothing
    newer comes); end_of_input (map/flush) gives the last frames up and reports progress to the end."""
    intake, out, _ = _intake()
    intake.add("depth", _Msg(1_000_000_000))
    intake.add("pose", _Msg(1_000_000_000))
    intake.add("depth", _Msg(1_100_000_000))  # its pose was never recorded
    intake.add("pose", _Msg(1_050_000_000))  # a pose of no frame (50 ms off): the newest stamp seen is 1.1 s
    intake.expire()
    assert out["integrated"] == [1_000_000_000] and out["skipped"] == [] and out["progress"] == [1_000_000_000]
    assert intake.end_of_input() == 1
    assert out["skipped"] == ["frame at 1.100 s: no pose by the end of the input"]
    assert out["progress"][-1] == 1_100_000_000 and out["integrated"] == [1_000_000_000]
    assert intake.end_of_input() == 0  # nothing left; progress stays at the end


def test_end_of_input_gives_up_frames_still_waiting_for_transform_or_context():
    intake, out, _ = _intake(keys=("depth",), lookup=lambda *a: (_ for _ in ()).throw(ExtrapolationError("later")))
    intake.add("depth", _Msg(1_000_000_000))
    assert intake.end_of_input() == 1 and "no transform map -> cam" in out["skipped"][0]
    intake, out, context = _intake(context={"missing": "the episode descriptor"})
    intake.add("depth", _Msg(2_000_000_000))
    intake.add("pose", _Msg(2_000_000_000))
    assert intake.end_of_input() == 1 and out["skipped"] == ["1 frames: the episode descriptor never arrived by the end of the input"]
    assert intake.waiting() == 0 and out["progress"] == [2_000_000_000]
