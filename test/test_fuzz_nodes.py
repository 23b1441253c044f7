"""Fuzz tests, one per node family (issue 15): malformed and extreme messages — random field values
within the typed schema, mutations of good messages (NaN / inf, integer extremes, huge and odd
strings, empty and mis-sized arrays such as image data that does not fit its size) and raw garbage
frames — are thrown at running nodes; then each node must still answer a good message, and its
executor must still be alive (crashes 0). The figures (messages per node, dropped by the guard,
crashes) are printed at the end of the session (test/conftest.py).
"""
from __future__ import annotations

import array
import json
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from conftest import wait_for  # noqa: E402
from fuzz_support import SCALE, Campaign  # noqa: E402
from personal.interfaces.convert import from_dict, to_dict  # noqa: E402

pytestmark = pytest.mark.timeout(int(240 * max(1.0, SCALE)))  # bench/bench_fuzz.py scales the campaigns
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
DATA = Path(__file__).parent / "data" / "smarthome_household.json"


def _params(**kw):
    return [Parameter(k, value=v) for k, v in kw.items()]


def _assert_survived(figures: dict) -> None:
    assert figures["crashes"] == 0, figures


def _call(node, srv_type, name: str, timeout: float = 20.0):
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=timeout), name
    future = client.call_async(srv_type.Request())
    return wait_for(lambda: future.result() if future.done() else None, timeout)


# -- sim bridge ---------------------------------------------------------------------------------

def test_fuzz_sim_bridge(ros_context):
    from geometry_msgs.msg import Twist
    from std_srvs.srv import Trigger

    from personal.msg import AgentState, DiscreteAction
    from sim_bridge.bridge_node import SimBridgeNode

    bridge = ros_context.add_node(SimBridgeNode(context=ros_context.context, parameter_overrides=_params(
        scenes=1, episodes_per_scene=1, split="easy", rate=2.0, log_every=0.0)))
    fz = Campaign(ros_context, "sim bridge", seed=1)
    fz.fuzz_node(bridge, good={"action": lambda: DiscreteAction(action=2, request_id="g"), "cmd_vel": Twist}, n=120)
    states = []
    fz.io.create_subscription(AgentState, "agent_state", lambda m: states.append(to_dict(m)), STATE_QOS)
    assert _call(fz.io, Trigger, "episode/reset").success  # a fuzzed STOP may have ended the episode
    fz.publisher("action", DiscreteAction).publish(DiscreteAction(action=DiscreteAction.TURN_LEFT, request_id="probe"))
    wait_for(lambda: any(s["request_id"] == "probe" for s in states), 20)
    _assert_survived(fz.record(bridge))


# -- mapping + exploration -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def frames():
    from personal.sim.backends.base import Action, AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend
    from personal.sim.toy_scene import two_room_scene

    be = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    be.load_scene(two_room_scene())
    return [be.reset(state=AgentState(2.0, 1.0, 0.0, 0.0)), be.step(Action.TURN_LEFT), be.step(Action.TURN_LEFT)]


def test_fuzz_mapping_and_explore_nodes(ros_context, frames, tmp_path):
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import OccupancyGrid, Odometry
    from sensor_msgs.msg import CameraInfo, Image

    from nodes.explore_node import ExploreNode
    from nodes.mapping_node import MappingNode
    from personal.msg import AgentState, EpisodeDescriptor, MapStatus
    from test_mapping_node import frame_msgs

    mapping = ros_context.add_node(MappingNode(context=ros_context.context, parameter_overrides=_params(
        encoder="none", maps_dir=str(tmp_path / "maps"), publish_period=0.1, stride=2)))
    explore = ros_context.add_node(ExploreNode(context=ros_context.context, parameter_overrides=_params(
        exit_on_finish=False, save_on_finish=False, start_timeout=600.0)))
    fz = Campaign(ros_context, "mapping", seed=2)
    stamp = rclpy.time.Time(seconds=50).to_msg()
    info, pose, depth, ids = frame_msgs(frames[0], stamp)
    odom = Odometry()
    odom.pose.pose = pose.pose
    fz.fuzz_node(mapping, n=60, good={
        "camera/aligned_depth_to_color/image_raw": lambda: depth, "camera/semantic/image_raw": lambda: ids,
        "camera/color/image_raw": lambda: ids, "camera/color/camera_info": lambda: info, "camera/pose": lambda: pose,
        "odom": lambda: odom, "episode": lambda: EpisodeDescriptor(episode_id="e", scene_id="s")},
        counts={"camera/aligned_depth_to_color/image_raw": 80, "camera/color/camera_info": 80, "camera/pose": 80})
    fz.fuzz_node(explore, n=60, good={"map/status": lambda: MapStatus(frames=1),
                                      "agent_state": lambda: AgentState(episode_id="e", request_id="explore-1")})
    # good input: consistent frames at two poses -> the mapping node integrates them and says so
    status = []
    fz.io.create_subscription(MapStatus, "map/status", status.append, LATCHED)
    pubs = {t: fz.publisher(t, c) for t, c in (("camera/color/camera_info", CameraInfo), ("camera/pose", PoseStamped),
                                                ("camera/aligned_depth_to_color/image_raw", Image),
                                                ("camera/semantic/image_raw", Image))}
    for k, obs in enumerate(frames[1:]):
        i, p, d, s = frame_msgs(obs, rclpy.time.Time(seconds=100 + k).to_msg())
        for topic, msg in (("camera/color/camera_info", i), ("camera/semantic/image_raw", s),
                           ("camera/aligned_depth_to_color/image_raw", d), ("camera/pose", p)):
            pubs[topic].publish(msg)
        time.sleep(0.3)
    wait_for(lambda: any(st.header.stamp.sec >= 100 for st in status), 20)
    # the explore node still decides on a good map + status + state answering its last action
    sent = explore.sent
    t = rclpy.time.Time(seconds=200).to_msg()
    grid = OccupancyGrid()
    grid.header.stamp, grid.header.frame_id = t, "map"
    grid.info.resolution, grid.info.width, grid.info.height = 0.1, 40, 40
    grid.info.origin.position.x = grid.info.origin.position.y = -2.0
    cells = np.full((40, 40), -1, np.int8)
    cells[10:30, 10:30] = 0
    grid.data = cells.reshape(-1).tolist()
    st = MapStatus(x=0.0, y=0.0, yaw=0.0, frames=1)
    st.header.stamp = t
    fz.publisher("map", OccupancyGrid).publish(grid)
    fz.publisher("map/status", MapStatus).publish(st)
    fz.publisher("agent_state", AgentState).publish(AgentState(episode_id="e", request_id=f"explore-{explore.sent}"))
    wait_for(lambda: explore.sent > sent or explore.finished, 30)
    _assert_survived(fz.record(mapping))
    _assert_survived(fz.record(explore))
    assert explore.context.ok()


# -- grounding (+ the POG evaluator) --------------------------------------------------------------

def _wire_map(view, scene_id):
    from std_msgs.msg import Float32MultiArray, MultiArrayDimension

    from personal.grounding.map_wire import descriptor_to_fields, map_to_wire
    from personal.msg import FeatureMapDescriptor

    data, layout, desc = map_to_wire(view, scene_id=scene_id)
    msg = Float32MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=lb, size=s, stride=st) for lb, s, st in layout]
    msg.data = array.array("f", data.tobytes())
    return msg, from_dict(FeatureMapDescriptor, descriptor_to_fields(desc))


def test_fuzz_grounding_node(ros_context):
    from std_msgs.msg import Float32MultiArray

    from nodes.grounding_node import GroundingNode
    from personal.grounding.pipeline import MapView
    from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult

    node = ros_context.add_node(GroundingNode(context=ros_context.context, parameter_overrides=_params(
        methods="centre,qs,rpg", encoder="oracle")))
    rng = np.random.default_rng(0)
    view = MapView.from_arrays(rng.standard_normal((6, 7, node.encoder.dim)).astype(np.float32), np.ones((6, 7)),
                               (0.0, 0.0), 0.5, node.encoder.name)
    arr, desc = _wire_map(view, "s0")
    query = GroundingQuery(request_id="q", episode_id="e", scene_id="s0", summary="Ana owns the red mug in the kitchen.",
                           query="Find Ana's mug.", owner="Ana", methods=["qs"], seed=0)
    fz = Campaign(ros_context, "grounding", seed=3)
    fz.fuzz_node(node, good={"feature_map": lambda: arr, "feature_map/descriptor": lambda: desc, "grounding/query": lambda: query},
                 counts={"feature_map": 60, "feature_map/descriptor": 100, "grounding/query": 150})
    results = []
    fz.io.create_subscription(GroundingResult, "grounding/result", lambda m: results.append(to_dict(m)), RELIABLE)
    fz.publisher("feature_map", Float32MultiArray).publish(arr)
    fz.publisher("feature_map/descriptor", FeatureMapDescriptor).publish(desc)
    wait_for(lambda: "s0" in node.maps and node.maps["s0"].features.shape == (6, 7, node.encoder.dim), 20)
    query.request_id = "probe"
    query.methods = []
    fz.publisher("grounding/query", GroundingQuery).publish(query)
    wait_for(lambda: {r["method"] for r in results if r["request_id"] == "probe"} == {"centre", "qs", "rpg"}, 30)
    _assert_survived(fz.record(node))


def test_fuzz_pog_evaluator(ros_context, tmp_path):
    from std_msgs.msg import Float32MultiArray

    from nodes.pog_evaluator_node import PogEvaluatorNode
    from personal.grounding.pipeline import MapView
    from personal.msg import FeatureMapDescriptor, GroundingResult

    ev = ros_context.add_node(PogEvaluatorNode(context=ros_context.context, parameter_overrides=_params(
        map_source="topic", scenes=1, splits="easy", episodes_per_split=1, methods="centre", grounding_wait_s=1.0,
        out_dir=str(tmp_path / "runs"), sample_maps=0, map_timeout_s=120.0)))
    sid = ev.session.scene_order[0]
    view = MapView.from_arrays(np.ones((4, 4, 8), np.float32), np.ones((4, 4)), (0.0, 0.0), 1.0, "x")
    arr, desc = _wire_map(view, sid)
    fz = Campaign(ros_context, "pog evaluator", seed=4)
    fz.fuzz_node(ev, good={"grounding/result": lambda: GroundingResult(request_id="r", method="centre"),
                           "feature_map": lambda: arr, "feature_map/descriptor": lambda: desc},
                 counts={"grounding/result": 150, "feature_map": 50, "feature_map/descriptor": 100})
    # good input: the scene's map; with no grounding node the episodes become recorded failures and the run ends
    fz.publisher("feature_map", Float32MultiArray).publish(arr)
    fz.publisher("feature_map/descriptor", FeatureMapDescriptor).publish(desc)
    wait_for(lambda: ev.exit_code is not None, 120)
    assert ev.exit_code == 3 and len(ev.session.results) == 1  # finished, flagged incomplete (no grounding node)
    _assert_survived(fz.record(ev))


# -- navigation (with the bridge) ---------------------------------------------------------------

def test_fuzz_navigation_node(ros_context):
    from std_srvs.srv import Trigger

    from nodes.navigation_node import NavigationNode
    from personal.msg import AgentState, EpisodeDescriptor, NavigationRun, NavigationStart
    from sim_bridge.bridge_node import SimBridgeNode

    source = dict(scenes=1, split="easy", seed=7)
    ros_context.add_node(SimBridgeNode(context=ros_context.context, parameter_overrides=_params(
        **source, episodes_per_scene=1, rate=2.0, log_every=0.0)))
    nav = ros_context.add_node(NavigationNode(context=ros_context.context, parameter_overrides=_params(
        **source, autostart=False)))
    fz = Campaign(ros_context, "navigation", seed=5)
    fz.fuzz_node(nav, n=40, good={
        "nav/start": lambda: NavigationStart(episode_id="e", policy="random-frontier", max_steps=1),
        "episode": lambda: EpisodeDescriptor(episode_id="e", scene_id="synth_00007"),
        "agent_state": lambda: AgentState(episode_id="e", request_id="r")},
        counts={"nav/start": 100, "episode": 60, "agent_state": 80})
    runs = []
    fz.io.create_subscription(NavigationRun, "nav/result", lambda m: runs.append(to_dict(m)), RELIABLE)
    episodes = []
    fz.io.create_subscription(EpisodeDescriptor, "episode", lambda m: episodes.append(to_dict(m)), LATCHED)
    assert _call(fz.io, Trigger, "episode/reset").success  # the bridge re-announces the real episode
    wait_for(lambda: nav.episode is not None and nav.episode.get("episode_id", "").startswith("synth_00007"), 20)
    eid = nav.episode["episode_id"]
    fz.publisher("nav/start", NavigationStart).publish(NavigationStart(episode_id=eid, policy="random-frontier", max_steps=2))
    wait_for(lambda: any(r["episode_id"] == eid and r["steps"] >= 1 for r in runs), 60)
    _assert_survived(fz.record(nav))


# -- robot base ---------------------------------------------------------------------------------

def test_fuzz_base_driver_and_kinematic_base(ros_context):
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from interbotix_xs_msgs.msg import JointGroupCommand
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    from nodes.base_driver_node import BaseDriver
    from nodes.kinematic_base_node import KinematicBaseNode
    from personal.msg import ActionOutcome, DiscreteAction

    base = ros_context.add_node(KinematicBaseNode(context=ros_context.context))
    driver = ros_context.add_node(BaseDriver(context=ros_context.context))  # camera_pose:=tf: TF is fuzzed too
    fz = Campaign(ros_context, "robot base", seed=6)
    good_odom = Odometry()
    good_odom.pose.pose.orientation.w = 1.0
    fz.fuzz_node(driver, n=60, good={"action": lambda: DiscreteAction(action=2, request_id="g"), "odom": lambda: good_odom,
                                     "estop": lambda: Bool(data=False),
                                     "joint_states": lambda: JointState(name=["pan", "tilt"], position=[0.0, 0.1])},
                 counts={"action": 100, "odom": 120, "estop": 40, "/tf_static": 30})
    fz.fuzz_node(base, n=60, good={"cmd_vel": Twist, "commands/joint_group": lambda: JointGroupCommand(
        name="camera", cmd=[0.0, 0.1])}, counts={"cmd_vel": 80})
    outcomes = []
    fz.io.create_subscription(ActionOutcome, "action_outcome", lambda m: outcomes.append(to_dict(m)), 50)
    fz.publisher("estop", Bool).publish(Bool(data=False))
    wait_for(lambda: not driver.ctl.estopped and not driver.ctl.busy, 20)
    wait_for(lambda: driver.ctl.pose is not None and time.monotonic() - driver.ctl.pose.stamp < 0.1
             and not driver.ctl.bad_odometry, 20)
    fz.publisher("action", DiscreteAction).publish(DiscreteAction(action=DiscreteAction.TURN_LEFT, request_id="probe"))
    wait_for(lambda: any(o["request_id"] == "probe" for o in outcomes), 20)
    probe = next(o for o in outcomes if o["request_id"] == "probe")
    assert probe["status"] in ("succeeded", "blocked", "timed_out"), probe  # it ran (a fuzzed wall may block it)
    _assert_survived(fz.record(driver))
    _assert_survived(fz.record(base))


# -- manipulation -------------------------------------------------------------------------------

def test_fuzz_policy_and_tabletop_nodes(ros_context):
    from sensor_msgs.msg import Image
    from std_msgs.msg import Float32MultiArray

    from nodes.policy_node import PolicyNode
    from nodes.tabletop_sim_node import TabletopSimNode
    from personal.interfaces.tabletop import layout_fields
    from personal.manipulation.suite import make_layout
    from personal.msg import PermEpisode, TabletopLayout, TabletopState, TaskPrompt

    sim = ros_context.add_node(TabletopSimNode(context=ros_context.context, parameter_overrides=_params(
        backend="kinematic", image_every=5)))
    policy = ros_context.add_node(PolicyNode(context=ros_context.context, parameter_overrides=_params(backend="scripted")))
    layout = from_dict(TabletopLayout, layout_fields(make_layout("bin", 0).to_dict(), "t0"))
    img = Image(height=128, width=128, encoding="rgb8", step=384, data=array.array("B", bytes(128 * 128 * 3)))
    state = Float32MultiArray(data=[0.1, 0.0, 1.0, 3.14, 0.0, 0.0, 0.04, -0.04])
    fz = Campaign(ros_context, "manipulation", seed=7)
    fz.fuzz_node(policy, n=60, good={
        "perm/agentview_image": lambda: img, "perm/eye_in_hand_image": lambda: img, "perm/robot_state": lambda: state,
        "perm/prompt": lambda: TaskPrompt(task_id="t", prompt="Task: put a block in the bin."),
        "perm/oracle/layout": lambda: layout},
        counts={"perm/agentview_image": 40, "perm/eye_in_hand_image": 40, "perm/robot_state": 100})
    fz.fuzz_node(sim, good={"perm/episode": lambda: PermEpisode(task_id="t", mission="bin", seed=0),
                            "perm/action": lambda: Float32MultiArray(data=[0.0] * 7)},
                 counts={"perm/episode": 80, "perm/action": 100})
    # good input: a prompt and an episode -> the simulator and the policy run it in lockstep
    states = []
    fz.io.create_subscription(TabletopState, "perm/oracle/state", lambda m: states.append(to_dict(m)), 50)
    fz.publisher("perm/prompt", TaskPrompt).publish(TaskPrompt(task_id="probe", prompt="Task: put a block in the bin."))
    wait_for(lambda: policy.prompt == "Task: put a block in the bin.", 30)  # the prompt first, then the episode
    fz.publisher("perm/episode", PermEpisode).publish(PermEpisode(task_id="probe", mission="bin", seed=0))
    wait_for(lambda: any(s["task_id"] == "probe" and s["step"] >= 3 for s in states), 60)
    _assert_survived(fz.record(policy))
    _assert_survived(fz.record(sim))


# -- smart home ---------------------------------------------------------------------------------

def test_fuzz_appliance_node(ros_context):
    from nodes.appliance_node import ApplianceNode
    from personal.msg import HomePlan, PlanResult, ToolCall, ToolResult

    node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=_params(
        household_file=str(DATA))))
    calls = [ToolCall(request_id="g", tool="get_household_profile", arguments_json="{}"),
             ToolCall(request_id="g", tool="run_appliance_feature", arguments_json=json.dumps(
                 {"appliance_name": "tv", "feature_method": "set_power", "feature_kwargs": {"state": "on"}})),
             ToolCall(request_id="g", tool="get_owned_appliances", arguments_json='{"member_id": "hand01_1"}')]
    plan = HomePlan(request_id="p", plan_json=json.dumps([{"program_id": "p", "steps": [
        {"step_id": "s", "appliance": "tv", "feature": "set_power", "category": ["ROUTINE"], "args": {"state": "on"}}]}]))
    fz = Campaign(ros_context, "smart home", seed=8)
    k = iter(range(10**6))
    fz.fuzz_node(node, good={"home/tool_call": lambda: calls[next(k) % len(calls)], "home/plan": lambda: plan},
                 counts={"home/tool_call": 200, "home/plan": 100})
    results, plans = {}, {}
    fz.io.create_subscription(ToolResult, "home/tool_result", lambda m: results.__setitem__(m.request_id, to_dict(m)), RELIABLE)
    fz.io.create_subscription(PlanResult, "home/plan_result", lambda m: plans.__setitem__(m.request_id, to_dict(m)), RELIABLE)
    fz.publisher("home/tool_call", ToolCall).publish(ToolCall(request_id="probe", tool="get_household_profile",
                                                              arguments_json="{}"))
    fz.publisher("home/plan", HomePlan).publish(HomePlan(request_id="probe", plan_json=plan.plan_json))
    wait_for(lambda: "probe" in results and "probe" in plans, 30)
    assert results["probe"]["ok"]
    _assert_survived(fz.record(node))


# -- active instance verification ----------------------------------------------------------------

@pytest.fixture(scope="module")
def pv_index(tmp_path_factory):
    from personal.verification.writer import write_dataset

    return write_dataset(tmp_path_factory.mktemp("pvfuzz"), n_targets=1, seed=11)["index"]


def test_fuzz_verification_nodes(ros_context, pv_index):
    from nodes.aiv_replayer_node import AivReplayerNode
    from nodes.verifier_node import VerifierNode
    from personal.msg import AivCommand, AivObservation, AivVerdict

    replayer = ros_context.add_node(AivReplayerNode(context=ros_context.context, parameter_overrides=_params(
        index=str(pv_index))))
    verifier = ros_context.add_node(VerifierNode(context=ros_context.context))
    fz = Campaign(ros_context, "verification", seed=9)
    fz.fuzz_node(replayer, good={"aiv/command": lambda: AivCommand(request_id="c", episode_index=0, command="reset")},
                 counts={"aiv/command": 120})
    fz.fuzz_node(verifier, n=40, counts={"aiv/observation": 100})
    observations, verdicts = [], []
    fz.io.create_subscription(AivObservation, "aiv/observation", lambda m: observations.append(to_dict(m)), RELIABLE)
    fz.io.create_subscription(AivVerdict, "aiv/verdict", lambda m: verdicts.append(to_dict(m)), RELIABLE)
    fz.publisher("aiv/command", AivCommand).publish(AivCommand(request_id="probe", episode_index=0, command="reset"))
    wait_for(lambda: any(o["request_id"] == "probe" for o in observations)
             and any(v["request_id"] == "probe" for v in verdicts), 60)
    assert next(v for v in verdicts if v["request_id"] == "probe")["decision"] in ("Yes", "No", "Unsure")
    _assert_survived(fz.record(replayer))
    _assert_survived(fz.record(verifier))
