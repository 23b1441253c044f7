"""LiveSync: the navigation node's observation pairing for live sensors (sync:=live)."""
from personal.navigation.sync import LiveSync

MS = 1_000_000


def test_only_frames_after_arming_and_settling_count():
    s = LiveSync(("depth", "rgb"), slop_ns=20 * MS, settle_s=0.3)
    s.add("depth", 100 * MS, "old depth", now=0.0)  # nothing is collected before arming
    s.add("pose", 0, "old pose", now=0.0)
    s.arm(1.0)
    s.add("depth", 200 * MS, "blurred", now=1.1)  # inside the settle time
    s.add("rgb", 200 * MS, "blurred", now=1.1)
    s.add("pose", 0, "pose", now=1.1)
    assert s.match() is None
    s.add("pose", 5, "still pose", now=1.35)
    s.add("depth", 600 * MS, "depth", now=1.4)
    assert s.match() is None  # the colour frame of that stamp is still missing
    s.add("rgb", 610 * MS, "rgb", now=1.41)  # within the slop
    g = s.match()
    assert g is not None and g.parts == {"depth": "depth", "rgb": "rgb", "pose": "still pose"}
    assert g.stamp == (0, 600 * MS)


def test_images_must_share_a_stamp_and_a_pose_is_required():
    s = LiveSync(("depth", "rgb"), slop_ns=20 * MS)
    s.arm(0.0)
    s.add("depth", 100 * MS, "d", now=0.1)
    s.add("rgb", 200 * MS, "c", now=0.1)  # 100 ms apart: not the same frame
    s.add("pose", 0, "p", now=0.1)
    assert s.match() is None
    s.add("depth", 200 * MS, "d2", now=0.2)
    assert s.match().parts["depth"] == "d2"
    s.arm(None)  # taken: nothing more until the next action's state
    s.add("depth", 300 * MS, "d3", now=0.3)
    assert s.match() is None


def test_depth_only():
    s = LiveSync(("depth",))
    s.arm(0.0)
    s.add("depth", 1, "d", now=0.0)
    assert s.match() is None  # no pose yet
    s.add("pose", 1, "p", now=0.0)
    assert s.match().parts == {"depth": "d", "pose": "p"}
