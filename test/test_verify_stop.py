"""Verify before stop: the candidate at a detected point is checked against the owner's
description with the depth segmenter's proposal as its mask (nothing reads instance ids at
inference; the test reads them only to choose views and points)."""
import random
from dataclasses import dataclass

import numpy as np
import pytest

from personal.grounding.extract import OwnershipPhrase
from personal.navigation.verify_stop import StopCheck, StopVerifier, target_descriptions

OTHER = {"red": "blue", "blue": "red", "green": "pink", "black": "white", "white": "black", "grey": "yellow",
         "brown": "blue", "yellow": "purple", "pink": "green", "purple": "yellow", "orange": "blue", "navy": "red",
         "beige": "black", "teal": "red", "cream": "black", "tan": "blue", "dark green": "pink", "dark brown": "white"}


def test_target_descriptions_are_the_owners_named_objects():
    phrases = [OwnershipPhrase("Lily", "red backpack", "bedroom"), OwnershipPhrase("Lily", "green mug"),
               OwnershipPhrase("Tom", "blue backpack")]
    assert target_descriptions("Find Lily's backpack.", phrases, "Lily") == ["red backpack"]
    assert target_descriptions("Find Lily's thing.", phrases, "Lily") == ["red backpack", "green mug"]
    assert target_descriptions("Find Ann's mug.", phrases, "Ann") == []


@dataclass
class _Frame:
    rgb: np.ndarray
    depth: np.ndarray
    K: np.ndarray
    T_map_camera: np.ndarray


@pytest.fixture(scope="module")
def views():
    """(frame, object) pairs: rendered views in which one small object covers a good share of the image."""
    from personal.perception.dataset import sample_poses
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer

    cam = CameraSpec(width=320, height=240)
    out = []
    for seed in (3, 4, 5):
        scene = generate_scene(seed)
        by_id = {o.instance_id: o for o in scene.objects}
        r = Renderer(scene_mesh(scene), cam, nthreads=1)
        for x, y, yaw, pitch in sample_poses(scene, 40, random.Random(seed)):
            T = camera_pose(AgentState(x, y, 0.0, yaw, pitch), cam)
            rgb, depth, ids, _ = r.render_labels(T)
            counts = np.bincount(ids.ravel())
            for iid in np.argsort(counts)[::-1][:4]:
                o = by_id.get(int(iid))
                if o is not None and not o.is_furniture and counts[iid] > 1500 and o.color in OTHER:
                    out.append((_Frame(rgb, depth, cam.intrinsics(), T), o))
                    break
    assert len(out) >= 8
    return out


def _verdicts(views, describe):
    got = []
    for frame, o in views:
        v = StopVerifier()
        v.descriptions = [describe(o)]
        point = (o.box.center[0], o.box.center[1])
        got.append(v.check(frame, point, floor_z=0.0).verdict)
    return got


def test_the_right_description_is_rarely_rejected_and_a_wrong_colour_mostly_is(views):
    right = _verdicts(views, lambda o: f"{o.color} {o.category}")
    wrong = _verdicts(views, lambda o: f"{OTHER[o.color]} {o.category}")
    assert right.count("no") / len(right) <= 0.25, right
    assert wrong.count("no") / len(wrong) >= 0.5, wrong
    assert right.count("yes") > wrong.count("yes")


def test_nothing_to_check_is_unsure_and_unsure_is_kept_unless_asked():
    v = StopVerifier()
    frame = _Frame(np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), np.float32), np.eye(3), np.eye(4))
    check = v.check(frame, (0.0, 0.0))
    assert check.verdict == "unsure" and "no description" in check.reason and not v.rejects(check)
    assert StopVerifier(reject_unsure=True).rejects(StopCheck("unsure", "", (0, 0)))



def test_a_pan_episode_with_verify_before_stop_records_its_checks():
    """value-map-*+verify runs the same loop with the verifier; every check it made is in the trajectory."""
    from personal.navigation.eval.pan_run import build_loop, generate_pan_set, make_components
    from personal.navigation.loop import run_episode
    from personal.navigation.policies import parse_policy_list
    from personal.sim.backends import make_backend

    assert parse_policy_list("value-map-rpg+verify,oracle") == ["value-map-rpg+verify", "oracle"]
    with pytest.raises(ValueError, match="only the value-map explorers"):
        build_loop("random-frontier+verify", make_components("oracle"))
    scenes, eps = generate_pan_set(1, ("hard",), 1, 300)
    sim = make_backend("synthetic")
    sim.load_scene(scenes[eps[0].scene_id])
    comps = make_components("oracle")
    comps.encoder.set_captions(__import__("personal.models.oracle", fromlist=["x"]).captions_from_scene(scenes[eps[0].scene_id]))
    loop = build_loop("value-map-rpg-owner+verify", comps, max_steps=150)
    assert loop.stop_verifier is not None and loop.stop_verifier.descriptions == []
    traj = run_episode(sim, eps[0], loop)
    assert loop.stop_verifier.descriptions, "the owner's object descriptions were read from the summary"
    checks = traj.info["stop_checks"]
    assert all(c["verdict"] in ("yes", "no", "unsure") for c in checks)
    if traj.stopped and "stop_point_target" in traj.info:  # it stopped on a detection: that one was checked
        assert checks and checks[-1]["verdict"] != "no"


def _scripted(verdicts, **kw):
    """A verifier whose per-view check returns ``verdicts`` in turn (the rule under test is how
    the views combine, not the colour measurement)."""
    v = StopVerifier(**kw)
    v.descriptions = ["red backpack"]
    seq = iter(verdicts)
    v._check = lambda frame, point, floor_z, cell_feature=None: StopCheck(next(seq), "scripted", point)
    return v


@pytest.mark.parametrize("second, final", [("no", "no"), ("yes", "yes"), ("unsure", "unsure")])
def test_a_rejection_stands_only_if_a_second_view_agrees(second, final):
    v = _scripted(["no", second])
    older, now = object(), object()
    v.observe(_Frame(np.zeros((2, 2, 3), np.uint8), np.ones((2, 2), np.float32), np.eye(3), np.eye(4)))
    check = v.check(now, (1.0, 2.0))
    assert check.verdict == final and v.rejects(check) == (final == "no")
    assert not _scripted(["no"]).check(older, (0.0, 0.0)).reason.startswith("first view"), "no earlier frame: the first view stands"
    assert _scripted(["no"], second_view=False).check(now, (0.0, 0.0)).verdict == "no"


def test_a_part_colour_no_does_not_reject_but_a_clear_main_colour_no_does():
    from personal.verification.verifier import Judgement
    from personal.navigation.verify_stop import colour_gap

    grey = np.full((20, 20, 3), 128, np.uint8)
    mask = np.zeros((20, 20), bool)
    mask[4:16, 4:16] = True
    view = type("V", (), {"rgb": grey, "mask": mask})()
    assert colour_gap(view, "red") > colour_gap(view, "black") > 0 and abs(colour_gap(view, "grey")) < 1e-6
    part = Judgement("strap color", "No", "no black part visible")
    main = Judgement("color", "No", "only 0% is red; mostly grey")
    attr = type("A", (), {"expected": "red"})()
    assert StopVerifier()._margin_gate(part, attr, view) == "Unsure"
    assert StopVerifier(part_rejects=True)._margin_gate(part, attr, view) == "No"
    assert StopVerifier()._margin_gate(main, attr, view) == "No"
    assert StopVerifier(colour_margin=1e3)._margin_gate(main, attr, view) == "Unsure"


def test_the_candidate_is_the_proposal_whose_embedding_made_the_detection(views):
    """With the encoder and the detected cell's feature, of the proposals near the point the one
    whose crop embedding is most like the cell is the mask, not merely the nearest one."""
    from types import SimpleNamespace

    from personal.perception.segment import segment_rgbd

    class OneHotEncoder:  # crop i of a call -> unit vector i
        config = SimpleNamespace(image_size=48)

        def segments(self, depth, K, T):
            return segment_rgbd(depth, K, T, floor_z=0.0)

        def embed_crops(self, crops, masks):
            return np.eye(len(crops), 64, dtype=np.float32), np.ones(len(crops))

    tried = 0
    for frame, _ in views:
        seg = segment_rgbd(np.asarray(frame.depth), frame.K, frame.T_map_camera, floor_z=0.0)
        objects = seg.objects()
        for a in objects:
            point = tuple(seg.centroid[a, :2])
            dist = np.hypot(*(seg.centroid[objects, :2] - point).T)
            near = objects[dist <= 0.8]
            if len(near) < 2:
                continue
            want = int(near[-1]) if near[-1] != a else int(near[0])
            feature = np.eye(64, dtype=np.float32)[list(near).index(want)]
            v = StopVerifier(encoder=OneHotEncoder())
            mask, *_ = v._candidates(frame, np.asarray(frame.depth), point, 0.0, feature)[0]
            assert (mask == (seg.full_labels(frame.depth.shape) == want)).all()
            mask, *_ = StopVerifier()._candidates(frame, np.asarray(frame.depth), point, 0.0, None)[0]
            assert (mask == (seg.full_labels(frame.depth.shape) == a)).all(), "without the feature: the nearest"
            tried += 1
            break
    assert tried >= 3


def test_the_instance_check_says_no_when_another_described_object_fits_the_crop_better(views):
    """The learned check: the candidate's crop embedding against the text of every described object;
    another one beating the owner's by the margin rejects even where the colour matched."""
    from types import SimpleNamespace

    class TextEncoder:  # every crop embeds as e0; "the other" text is e0 too, the owner's halfway off
        config = SimpleNamespace(image_size=48)

        def embed_crops(self, crops, masks):
            return np.tile(np.eye(8, dtype=np.float32)[0], (len(crops), 1)), np.ones(len(crops))

        def encode_text(self, texts):
            own, other = np.eye(8, dtype=np.float32)[[0, 1]].sum(0), np.eye(8, dtype=np.float32)[0]
            return np.stack([other if t == "white sideboard" else own for t in texts])

    frame, o = views[0]
    point = (o.box.center[0], o.box.center[1])
    own = f"{o.color} {o.category}"
    phrases = [OwnershipPhrase("Lily", own), OwnershipPhrase("Tom", "white sideboard")]
    v = StopVerifier(encoder=TextEncoder(), instance_margin=0.2)
    v.prepare(f"Find Lily's {o.category}.", phrases, "Lily")
    assert v.descriptions == [own] and v.others == ["white sideboard"]
    check = v.check(frame, point, floor_z=0.0)
    assert check.verdict == "no" and "white sideboard" in check.reason
    assert abs(v.last_instance_gap - (1 - 2 ** -0.5)) < 1e-5
    off = StopVerifier(encoder=TextEncoder(), instance_margin=0.5)  # the gap (0.29) is below this margin
    off.prepare(f"Find Lily's {o.category}.", phrases, "Lily")
    assert "white sideboard" not in off.check(frame, point, floor_z=0.0).reason
    assert StopVerifier(encoder=TextEncoder()).instance_margin is None  # off by default


class _StopPolicy:
    """Stops on a candidate at ``point`` until told it is not the one, then explores forward."""
    name, needs_map, needs_features, turn_left_hint = "scripted-stop", False, False, True

    def __init__(self, point):
        from personal.navigation.follower import PathFollower

        self.point, self.follower, self.info = point, PathFollower(turn_deg=30.0), {}

    def reset(self, spec):
        self.info = {}

    def act(self, inp):
        from personal.mapping.exploration import Act

        if self.point is None:
            return int(Act.MOVE_FORWARD)
        self.info["stop_point_target"] = list(self.point)
        return int(Act.STOP)

    def reject_target(self, point):
        self.point = None
        self.info.pop("stop_point_target", None)


def _drive(loop, in_view_when_tilted: bool, verdict: str, steps: int = 12):
    """Run ``loop`` on a pose that turns 30 deg per turn action; the candidate shows only in a tilted view."""
    import math

    from personal.mapping.exploration import Act
    from personal.navigation.loop import Frame
    from personal.navigation.policies import EpisodeSpec

    v = loop.stop_verifier
    tilt = {"down": 0}
    v.sees = lambda frame, point, floor_z=None, cell_feature=None: in_view_when_tilted and tilt["down"] > 0
    judged = []
    v.check = lambda frame, point, floor_z=None, step=0, cell_feature=None: judged.append(tilt["down"]) or StopCheck(verdict, "scripted", point, step)
    loop.reset(EpisodeSpec("e", "Find Lily's backpack.", "", "Lily", 0.0))
    yaw, actions = 0.0, []
    for _ in range(steps):
        a = loop.step(Frame((0.0, 0.0, yaw)))
        actions.append(Act(a).name)
        if loop.done:
            break
        yaw += math.radians(30) * {Act.TURN_LEFT: 1, Act.TURN_RIGHT: -1}.get(Act(a), 0)
        tilt["down"] += {Act.LOOK_DOWN: 1, Act.LOOK_UP: -1}.get(Act(a), 0)
    return actions, judged


def test_look_before_verifying_faces_the_candidate_tilts_to_it_and_levels_again_after_a_rejection():
    from personal.navigation.loop import NavigationLoop
    from personal.navigation.policies import looks_before_verifying, split_verify

    assert split_verify("value-map-rpg-owner+look+verify") == ("value-map-rpg-owner", True)
    assert looks_before_verifying("value-map-rpg-owner+look+verify") and not looks_before_verifying("value-map-rpg+verify")
    behind = (-2.0, 0.1)  # 180 deg away: six turns of 30 deg bring it within half a turn of the heading
    loop = NavigationLoop(_StopPolicy(behind), stop_verifier=StopVerifier(), look_before_verifying=True)
    actions, judged = _drive(loop, in_view_when_tilted=True, verdict="no")
    assert actions[:8] == ["TURN_LEFT"] * 6 + ["LOOK_DOWN", "LOOK_UP"], actions
    assert judged == [1], "judged once, in the tilted view that shows the candidate"
    assert actions[8] == "MOVE_FORWARD", "the search goes on with the camera level"
    # accepted: it stops in the view it judged, still tilted
    actions, judged = _drive(NavigationLoop(_StopPolicy(behind), stop_verifier=StopVerifier(), look_before_verifying=True),
                             in_view_when_tilted=True, verdict="yes")
    assert actions == ["TURN_LEFT"] * 6 + ["LOOK_DOWN", "STOP"] and judged == [1]
    # plain +verify judges where it stands
    actions, judged = _drive(NavigationLoop(_StopPolicy(behind), stop_verifier=StopVerifier()), True, "yes")
    assert actions == ["STOP"] and judged == [0]


def test_look_before_verifying_spends_bounded_steps_on_a_candidate_it_cannot_see():
    from personal.navigation.loop import NavigationLoop

    ahead = (2.0, 0.0)  # already faced: no turn; never in view: one tilt, then judged anyway
    loop = NavigationLoop(_StopPolicy(ahead), stop_verifier=StopVerifier(), look_before_verifying=True)
    actions, judged = _drive(loop, in_view_when_tilted=False, verdict="unsure")
    assert actions == ["LOOK_DOWN", "STOP"] and judged == [1]


def test_near_judges_every_proposal_by_the_point_and_rejects_only_if_all_contradict():
    """The detection's own proposal (listed first) is blue, its neighbour red; the owner's object is
    red. ``detected`` judges the blue one alone and says no; ``near`` finds the red one: yes."""
    from personal.navigation import verify_stop

    rgb = np.zeros((80, 80, 3), np.uint8)
    rgb[:, :40], rgb[:, 40:] = (30, 60, 200), (200, 30, 30)
    blue, red = np.zeros((80, 80), bool), np.zeros((80, 80), bool)
    blue[10:70, 5:35], red[10:70, 45:75] = True, True  # 1,800 pixels each: large enough to judge a backpack
    frame = _Frame(rgb, np.full((80, 80), 1.5, np.float32), np.array([[80.0, 0, 40], [0, 80.0, 40], [0, 0, 1]]), np.eye(4))
    verdicts = {}
    for mode in verify_stop.CANDIDATE_MODES:
        v = StopVerifier(candidates=mode, second_view=False)
        v.descriptions = ["red backpack"]
        found = [(blue, np.array([0.5, 0.0, 1.5]), None, 1), (red, np.array([-0.5, 0.0, 1.5]), None, 2)]
        v._located = lambda *a, found=found, mode=mode: (frame.depth, found if mode == "near" else found[:1])
        verdicts[mode] = v.check(frame, (0.0, 0.0)).verdict
    assert verdicts == {"detected": "no", "near": "yes"}


@pytest.mark.parametrize("verdicts, final", [(["no", "yes"], "yes"), (["no", "no"], "no"), (["no", "unsure"], "unsure"),
                                             (["unsure", "no"], "unsure"), (["no"], "no")])
def test_near_combines_the_proposals_verdicts(verdicts, final):
    from personal.navigation.verify_stop import _combine

    out = _combine([StopCheck(v, f"proposal {i}", (0.0, 0.0)) for i, v in enumerate(verdicts)])
    assert out.verdict == final
    if final == "no" and len(verdicts) > 1:
        assert out.reason.startswith("proposal 0") and "1 other proposal" in out.reason


def test_an_unknown_candidates_mode_is_refused_by_name(tmp_path):
    from typer.testing import CliRunner

    from personal.navigation.cli import app

    with pytest.raises(ValueError, match="candidates must be one of detected, near"):
        StopVerifier(candidates="all")
    res = CliRunner().invoke(app, ["eval", "--methods", "oracle", "--verify-candidates", "all", "--out", str(tmp_path / "ev")])
    assert res.exit_code == 2 and "--verify-candidates" in res.output
