"""Navigation node (PersONAL PAN): drives the agent through the sim bridge (or a real base).

Given an episode's summary and query and no prior map, it runs the library's
``NavigationLoop`` step by step: each observation (depth, instance ids, camera pose,
odometry) goes into the node's own online maps (occupancy + feature map, the mapping
library's code), the policy picks an action, the collision guard vets it, and the action is
published on ``action`` (personal/msg/DiscreteAction). The next observation is the one whose
odometry equals the ``agent_state`` that answers the action's ``request_id``.

Why maps are built here rather than read from the mapping node: a 500-step episode needs
the map that includes observation N before action N+1. Reading the mapping node's outputs
would add a second process hop and a second sync point per step and move an H×W×384 feature
map (megabytes) over DDS every step; running the same library code in-process costs ~10 ms a
step and keeps the loop above 20 steps/s on an idle machine.

Subscribes: ``episode`` (EpisodeDescriptor), ``agent_state`` (AgentState),
``camera/aligned_depth_to_color/image_raw``, ``camera/semantic/image_raw`` (only with the
ORACLE caption encoder, ``encoder:=oracle``), ``camera/color/image_raw`` (only with an image
encoder, ``encoder:=lit`` (default) or ``clip|siglip|blip2`` + ``model_path``), ``camera/color/camera_info``,
``camera/pose``, ``odom``, ``nav/start`` (NavigationStart, from the evaluator or a user).
Publishes: ``action``, ``nav/result`` (NavigationRun), ``nav/occupancy``
(nav_msgs/OccupancyGrid, transient local).

A ``nav/start`` that carries a ``query`` (and ``summary`` / ``owner``) needs no episode
descriptor: that is how a run starts on a real robot. ``sync:=live`` pairs observations for
live sensors: the base driver (nodes/base_driver_node.py) answers each action with an
``agent_state`` once it has executed it closed-loop, the base then stands still, and the next
frame arriving after that (plus ``settle_s``) is the observation; the first pose is the newest
odometry. ``sync:=bridge`` (default) is the sim bridge's exact pairing (one stamp per observation).
"""
from __future__ import annotations

import json
import math
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from personal.interfaces.convert import from_dict, packed, to_dict
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, NavigationRun, NavigationStart
from nodes.lifecycle import run_node, subscribe

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)

PARAMETERS = {
    "policy": ("value-map-rpg-owner", "default policy: random-frontier | value-map-qs | value-map-rpg | value-map-rpg-owner | oracle"),
    "autostart": (True, "drive every new episode with the default policy (false: wait for nav/start)"),
    "max_steps": (500, "step budget (PersONAL PAN: 500)"),
    "encoder": ("lit", "feature encoder for the value-map explorers: lit (the learned tower, the default) | oracle "
                       "(ground-truth captions, an ORACLE) | clip | siglip | blip2 (dense image features of camera/color/image_raw)"),
    "model_path": ("", "local model directory for clip / siglip / blip2 (never downloaded)"),
    "sync": ("bridge", "observation pairing: bridge (one stamp per observation, odom = agent state) | "
                       "live (real sensors: the first frame after each agent_state)"),
    "settle_s": (0.0, "sync:=live: frames younger than this after the agent_state are skipped, s"),
    "image_slop": (0.02, "sync:=live: depth and colour match when their stamps differ by at most this, s"),
    "map_frame": ("map", "frame_id of nav/occupancy (odom on a robot without localisation)"),
    "floor_z": (0.0, "floor height for runs started by a nav/start query (no episode descriptor), m"),
    "threshold": (-2.0, "value-map detection threshold (cosine); below -1 (default): the encoder's own, chosen on "
                        "validation households (personal/navigation/thresholds.py)"),
    "phrase_floor": (-2.0, "RPG scorers: least ownership-phrase similarity of a detection; below -1 (default): the "
                           "encoder's own"),
    "extractor": ("builtin", "ownership-phrase extractor: builtin | llm"),
    "episodes_dir": ("", "episode source of the bridge (scenes for ORACLE perception / the oracle policy)"),
    "split": ("all", "as the bridge"),
    "scenes": (1, "as the bridge"),
    "seed": (0, "as the bridge"),
    "map_publish_every": (10, "publish nav/occupancy every N steps (0 = only at the end)"),
    "step_timeout": (10.0, "seconds to wait for the bridge's answer before giving the run up"),
}


def image_array(msg: Image) -> np.ndarray:
    """numpy view of a depth (16UC1 / 32FC1) or id (32SC1 / 16UC1) image."""
    dtypes = {"16UC1": np.uint16, "32FC1": np.float32, "32SC1": np.int32, "mono16": np.uint16}
    if msg.encoding not in dtypes:
        raise ValueError(f"unsupported image encoding {msg.encoding!r} (expected one of {sorted(dtypes)})")
    dt = np.dtype(dtypes[msg.encoding]).newbyteorder(">" if msg.is_bigendian else "<")
    arr = np.frombuffer(bytes(msg.data), dtype=dt).reshape(msg.height, msg.width)
    if msg.encoding == "32FC1":
        arr = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
    return arr


def pose_matrix(p) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    T = np.eye(4)
    q = p.orientation
    T[:3, :3] = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
    T[:3, 3] = (p.position.x, p.position.y, p.position.z)
    return T


def yaw_of(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class NavigationNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("navigation", **kwargs)
        from rcl_interfaces.msg import ParameterDescriptor

        for name, (default, description) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=description))
        self.p = {name: self.get_parameter(name).value for name in PARAMETERS}
        self._components = None
        self._scenes: dict | None = None
        self._loops: dict = {}
        self.episode: dict | None = None
        self.run: dict | None = None  # the run in progress
        self.latest_state: dict | None = None
        self.K: np.ndarray | None = None
        from personal.navigation.sync import FrameSync

        from personal.navigation.sync import LiveSync

        # the ORACLE caption encoder reads instance ids; image encoders read the colour image
        self.oracle_perception = str(self.p["encoder"]).startswith("oracle")
        self.feature_key = "ids" if self.oracle_perception else "rgb"
        self.live = self.p["sync"] == "live"
        if self.p["sync"] not in ("bridge", "live"):
            self.get_logger().error(f"parameter 'sync': {self.p['sync']!r} unknown (bridge | live); using bridge")
        self.sync = FrameSync(required=("depth", "pose", "odom"))
        self.sync_feat = FrameSync(required=("depth", "pose", "odom", self.feature_key))
        self.live_sync = LiveSync(("depth",), int(float(self.p["image_slop"]) * 1e9), float(self.p["settle_s"]))
        self.live_sync_feat = LiveSync(("depth", self.feature_key), int(float(self.p["image_slop"]) * 1e9),
                                       float(self.p["settle_s"]))
        self.latest_odom: tuple[float, float, float, float] | None = None  # x, y, z, yaw

        self.pub_action = self.create_publisher(DiscreteAction, "action", COMMAND_QOS)
        self.pub_result = self.create_publisher(NavigationRun, "nav/result", COMMAND_QOS)
        self.pub_map = self.create_publisher(OccupancyGrid, "nav/occupancy", LATCHED)
        subscribe(self, EpisodeDescriptor, "episode", self.on_episode, LATCHED)
        subscribe(self, AgentState, "agent_state", self.on_state, STATE_QOS)
        subscribe(self, NavigationStart, "nav/start", self.on_start, COMMAND_QOS)
        subscribe(self, Image, "camera/aligned_depth_to_color/image_raw", self.on_depth, qos_profile_sensor_data)
        if self.oracle_perception:
            subscribe(self, Image, "camera/semantic/image_raw", self.on_ids, qos_profile_sensor_data)
        else:
            subscribe(self, Image, "camera/color/image_raw", self.on_rgb, qos_profile_sensor_data)
        subscribe(self, CameraInfo, "camera/color/camera_info", self.on_info, qos_profile_sensor_data)
        subscribe(self, PoseStamped, "camera/pose", self.on_pose, qos_profile_sensor_data)
        subscribe(self, Odometry, "odom", self.on_odom, qos_profile_sensor_data)
        self.create_timer(0.5, self.watchdog)
        self.get_logger().info(f"navigation ready: default policy {self.p['policy']!r}, encoder {self.p['encoder']!r}, "
                               f"sync {self.p['sync']!r}, autostart={self.p['autostart']}")

    # -- components (lazy: the text model loads only when a value-map policy runs) ---------
    def components(self):
        if self._components is None:
            from personal.navigation.eval.pan_run import make_components

            self._components = make_components(self.p["encoder"], self.p["extractor"], self.p["model_path"])
        return self._components

    def scenes(self) -> dict:
        """Scenes of the bridge's episode source (ground truth: ORACLE perception / oracle policy only)."""
        if self._scenes is None:
            if self.p["episodes_dir"]:
                from personal.world.habitat_format import load_episode_set

                self._scenes, _ = load_episode_set(self.p["episodes_dir"])
            else:
                from personal.world.generator import generate_scene

                s0 = int(self.p["seed"])
                self._scenes = {f"synth_{k:05d}": generate_scene(k, scene_id=f"synth_{k:05d}")
                                for k in range(s0, s0 + int(self.p["scenes"]))}
        return self._scenes

    def loop_for(self, policy: str):
        if policy not in self._loops:
            from personal.navigation.eval.pan_run import build_loop
            from personal.navigation.policies import POLICIES

            if policy not in POLICIES:
                raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
            needs_model = policy.startswith("value-map")
            comps = self.components() if needs_model else None
            if comps is None:
                from personal.navigation.eval.pan_run import PanComponents

                comps = PanComponents(encoder=None, embed=None, extractor=None)
            loop = build_loop(policy, comps, max_steps=int(self.p["max_steps"]))
            if needs_model:  # build_loop set the encoder's own pair; a value in [-1, 1] overrides it
                if float(self.p["threshold"]) >= -1.0:
                    loop.policy.vcfg.threshold = float(self.p["threshold"])
                if float(self.p["phrase_floor"]) >= -1.0:
                    loop.policy.scorer.phrase_floor = float(self.p["phrase_floor"])
                self.get_logger().info(f"{policy}: detection threshold {loop.policy.vcfg.threshold:g}, phrase floor "
                                       f"{loop.policy.scorer.phrase_floor:g}, relative margin "
                                       f"{loop.policy.scorer.relative_margin} ({loop.policy.thresholds.source})")
            self._loops[policy] = loop
            if needs_model:
                comps.embed(["warm up the text model"])  # load it now, not inside a timed step
        return self._loops[policy]

    # -- episode / start -----------------------------------------------------------------
    def on_episode(self, msg: EpisodeDescriptor) -> None:
        if not msg.episode_id or not msg.scene_id:
            self.get_logger().error(f"topic 'episode': rejected message without episode_id / scene_id "
                                    f"({msg.episode_id!r}, {msg.scene_id!r})")
            return
        ep = to_dict(msg)
        new = self.episode is None or ep["episode_id"] != self.episode["episode_id"]
        self.episode = ep
        if new and self.p["autostart"]:
            self.start(ep["episode_id"], self.p["policy"], int(self.p["max_steps"]))

    def on_start(self, msg: NavigationStart) -> None:
        if not msg.episode_id or msg.max_steps < 1:
            self.get_logger().error(f"topic 'nav/start': rejected message: needs an episode_id and max_steps >= 1 "
                                    f"(got {msg.episode_id!r}, {msg.max_steps})")
            return
        d = to_dict(msg)
        spec = None
        if d["query"].strip():  # the task comes with the command (a real robot has no episode descriptor)
            from personal.navigation.policies import EpisodeSpec

            spec = EpisodeSpec(d["episode_id"], d["query"], d["summary"], d["owner"], float(self.p["floor_z"]))
        self.start(d["episode_id"], d["policy"] or self.p["policy"], int(d["max_steps"]), spec)

    def start(self, episode_id: str, policy: str, max_steps: int, spec=None) -> None:
        if self.run is not None and not self.run["done"]:
            self.finish("superseded by a new start")
        ep = self.episode
        try:
            loop = self.loop_for(policy)
        except Exception as exc:  # unknown policy, encoder that cannot load...
            self.get_logger().error(f"cannot start {policy!r}: {exc}")
            self._publish_failed(episode_id, policy, f"cannot start: {exc}")
            return
        loop.max_steps = max_steps
        self.run = {"episode_id": episode_id, "policy": policy, "loop": loop, "done": False, "await": ("", 0),
                    "state": None, "xs": [], "ys": [], "yaws": [], "actions": [], "collided": [],
                    "since": time.monotonic(), "t0": time.monotonic(), "failure": "", "started": False, "spec": spec}
        if spec is None and (ep is None or ep["episode_id"] != episode_id):
            self.get_logger().info(f"start {policy} for {episode_id}: waiting for that episode on 'episode'")
        self._try_begin()

    def _try_begin(self) -> None:
        """Reset the loop once the task (episode descriptor, or the nav/start query) and the
        step-0 state (the bridge's reset state; live: the newest odometry) are in."""
        run, ep = self.run, self.episode
        if run is None or run["started"]:
            return
        from personal.navigation.policies import EpisodeSpec

        loop = run["loop"]
        spec = run["spec"]
        oracle_captions = loop.policy.needs_features and self.oracle_perception
        if spec is None or loop.policy.is_oracle or oracle_captions:  # these read the episode's ground truth
            if ep is None or ep["episode_id"] != run["episode_id"]:
                return
            try:
                if loop.policy.is_oracle:
                    self._oracle_ground_truth(loop.policy, ep)
                if oracle_captions:
                    self._oracle_captions(ep)
            except Exception as exc:
                self.get_logger().error(f"episode {ep['episode_id']}: {exc}")
                self.finish(f"setup failed: {exc}")
                return
        if self.live and self.latest_odom is None:
            return  # retried on the next odometry message
        loop.reset(spec or EpisodeSpec(ep["episode_id"], ep["query"], ep["summary"], ep["owner"],
                                       float(ep["start_position"]["z"]), int(ep["floor_id"])))
        run["started"] = True
        run["since"] = time.monotonic()  # loop.reset may have loaded the text model
        run["await"] = ("", 0)  # the reset's state: request_id "" at step 0
        if self.live:  # the base stands where odometry says; observe from here
            x, y, z, yaw = self.latest_odom
            self._arm()
            run["state"] = {"episode_id": run["episode_id"], "position": {"x": x, "y": y, "z": z}, "yaw": yaw,
                            "collided": False, "step": 0, "stopped": False, "request_id": ""}
            self.get_logger().info(f"{run['episode_id']} {run['policy']}: driving for {loop.policy.spec.query!r}")
            self._advance()
            return
        st = self.latest_state
        if st is not None and st["episode_id"] == run["episode_id"] and st["request_id"] == "" and st["step"] == 0:
            run["state"] = st
            self._advance()

    def _oracle_captions(self, ep: dict) -> None:
        enc = self.components().encoder
        if hasattr(enc, "set_captions"):  # ORACLE perception needs this scene's captions
            from personal.models.oracle import captions_from_scene

            scene = self.scenes().get(ep["scene_id"])
            if scene is None:
                raise RuntimeError(f"scene {ep['scene_id']!r} is not in the episode source "
                                   "(set episodes_dir / scenes / seed like the bridge)")
            enc.set_captions(captions_from_scene(scene))
            enc.encode_text([o.caption for o in scene.objects])  # embed them once, outside the timed steps

    def _oracle_ground_truth(self, policy, ep: dict) -> None:
        from personal.sim.navgrid import NavGrid

        scene = self.scenes().get(ep["scene_id"])
        if scene is None:
            raise RuntimeError(f"oracle: scene {ep['scene_id']!r} is not in the episode source")
        policy.set_ground_truth(NavGrid(scene, int(ep["floor_id"])), [scene.object(o).box for o in ep["target_object_ids"]])

    # -- observations --------------------------------------------------------------------
    @staticmethod
    def _stamp(msg) -> tuple[int, int]:
        return int(msg.header.stamp.sec), int(msg.header.stamp.nanosec)

    def _add(self, msg, key: str, value) -> None:
        st = self._stamp(msg)
        if self.live:
            now, ns = time.monotonic(), st[0] * 1_000_000_000 + st[1]
            self.live_sync.add(key, ns, value, now)
            self.live_sync_feat.add(key, ns, value, now)
        else:
            self.sync.add(st, key, value)
            self.sync_feat.add(st, key, value)
        self._advance()

    def _arm(self) -> None:
        now = time.monotonic()
        self.live_sync.arm(now)
        self.live_sync_feat.arm(now)

    def on_depth(self, msg: Image) -> None:
        try:
            self._add(msg, "depth", image_array(msg))
        except ValueError as exc:
            self.get_logger().error(f"topic 'camera/aligned_depth_to_color/image_raw': {exc}", throttle_duration_sec=5.0)

    def on_ids(self, msg: Image) -> None:
        try:
            self._add(msg, "ids", image_array(msg).astype(np.int32, copy=False))
        except ValueError as exc:
            self.get_logger().error(f"topic 'camera/semantic/image_raw': {exc}", throttle_duration_sec=5.0)

    def on_rgb(self, msg: Image) -> None:
        from personal.mapping.ros_io import rgb_from_msg

        try:
            self._add(msg, "rgb", rgb_from_msg(msg, "camera/color/image_raw"))
        except ValueError as exc:
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)

    def on_info(self, msg: CameraInfo) -> None:
        K = np.asarray(msg.k, dtype=float).reshape(3, 3)
        if K[0, 0] > 0 and K[1, 1] > 0:
            self.K = K
        else:
            self.get_logger().error("topic 'camera/color/camera_info': K has non-positive focal lengths", throttle_duration_sec=5.0)

    def on_pose(self, msg: PoseStamped) -> None:
        self._add(msg, "pose", pose_matrix(msg.pose))

    def on_odom(self, msg: Odometry) -> None:
        p = msg.pose.pose
        self.latest_odom = (p.position.x, p.position.y, p.position.z, yaw_of(p.orientation))
        if self.live and self.run is not None and not self.run["started"] and not self.run["done"]:
            self._try_begin()
            return
        self._add(msg, "odom", (p.position.x, p.position.y, yaw_of(p.orientation)))

    def on_state(self, msg: AgentState) -> None:
        p = msg.position
        if not all(math.isfinite(v) for v in (p.x, p.y, p.z, msg.yaw)):
            self.get_logger().error(f"topic 'agent_state': rejected message with a non-finite pose "
                                    f"({p.x}, {p.y}, {p.z}, yaw {msg.yaw})")
            return
        st = to_dict(msg)
        self.latest_state = st
        run = self.run
        if run is None or run["done"]:
            return
        if not run["started"]:
            self._try_begin()
            return
        if self.live:  # the base driver's own step count / episode id: the request id identifies the answer
            answers = bool(st["request_id"]) and st["request_id"] == run["await"][0]
        else:
            answers = st["episode_id"] == run["episode_id"] and (st["request_id"], st["step"]) == run["await"]
        if answers:
            run["since"] = time.monotonic()
            if self.live:
                self._arm()
            if st["stopped"] or run["loop"].done:  # STOP answered or budget spent: no observation needed
                self._record(run, st)
                self.finish("")
                return
            run["state"] = st
            self._advance()

    @staticmethod
    def _record(run: dict, st: dict) -> tuple[float, float, float]:
        pose = (st["position"]["x"], st["position"]["y"], st["yaw"])
        run["xs"].append(pose[0])
        run["ys"].append(pose[1])
        run["yaws"].append(pose[2])
        if run["actions"]:
            run["collided"].append(bool(st["collided"]))
        return pose

    # -- the loop ------------------------------------------------------------------------
    def _advance(self) -> None:
        run = self.run
        if run is None or run["done"] or not run["started"] or run["state"] is None or self.K is None:
            return
        st = run["state"]
        pose = (st["position"]["x"], st["position"]["y"], st["yaw"])
        loop = run["loop"]
        if self.live:
            group = (self.live_sync_feat if loop.policy.needs_features else self.live_sync).match()
        else:
            group = (self.sync_feat if loop.policy.needs_features else self.sync).match(pose)
        if group is None:
            return
        from personal.navigation.loop import Frame

        parts = group.parts
        rgb = parts.get("rgb")
        if rgb is not None and rgb.shape[:2] != parts["depth"].shape[:2]:
            self.get_logger().error(f"camera/color/image_raw {rgb.shape[1]}x{rgb.shape[0]} does not match the aligned "
                                    f"depth {parts['depth'].shape[1]}x{parts['depth'].shape[0]}: frame skipped",
                                    throttle_duration_sec=5.0)
            return
        if self.live:
            self.live_sync.arm(None)  # this observation is taken; collect again after the next action
            self.live_sync_feat.arm(None)
        run["state"] = None
        self._record(run, st)
        frame = Frame(pose, parts["depth"], self.K, parts["pose"], parts.get("ids"), rgb, bool(st["collided"]))
        try:
            action = loop.step(frame)
        except Exception as exc:  # a bug in a policy must not take the node down
            self.get_logger().error(f"{run['policy']} failed at step {loop.step_count}: {type(exc).__name__}: {exc}")
            self.finish(f"policy error: {exc}")
            return
        run["actions"].append(int(action))
        run.setdefault("t_first", time.monotonic())
        run["t_last"] = time.monotonic()
        request_id = f"{run['episode_id']}:{run['policy']}:{loop.step_count}"
        run["await"] = (request_id, loop.step_count)
        run["since"] = time.monotonic()
        self.pub_action.publish(DiscreteAction(action=int(action), request_id=request_id))
        every = int(self.p["map_publish_every"])
        if loop.mapper is not None and every > 0 and loop.step_count % every == 0:
            self.publish_map(loop.mapper)

    def watchdog(self) -> None:
        run = self.run
        if run is None or run["done"] or not run["started"]:
            return
        if time.monotonic() - run["since"] > float(self.p["step_timeout"]):
            what = "agent_state" if run["state"] is None else "an observation matching the agent state"
            self.get_logger().error(f"{run['episode_id']}: no {what} within {self.p['step_timeout']} s "
                                    f"(awaiting {run['await']}); giving the run up")
            self.finish(f"timeout waiting for {what}")

    def finish(self, failure: str) -> None:
        run = self.run
        if run is None or run["done"]:
            return
        run["done"] = True
        loop = run["loop"]
        n = len(run["actions"])
        run["collided"] += [False] * (n - len(run["collided"]))
        wall = time.monotonic() - run["t0"]
        info = dict(getattr(loop.policy, "info", {}) or {})
        info["timing_ms_per_step"] = {k: round(1e3 * v / max(n, 1), 2) for k, v in loop.timing.items()}
        info["steps_per_s"] = round(n / wall, 2) if wall > 0 else None  # from the start request, incl. setup
        span = run.get("t_last", 0.0) - run.get("t_first", 0.0)
        info["loop_steps_per_s"] = round((n - 1) / span, 2) if n > 1 and span > 0 else None  # first to last action
        result = {
            "episode_id": run["episode_id"], "policy": run["policy"], "is_oracle": bool(loop.policy.is_oracle),
            "stopped": bool(n and run["actions"][-1] == 0), "steps": n,
            "xs": run["xs"], "ys": run["ys"], "yaws": run["yaws"], "actions": run["actions"], "collided": run["collided"],
            "guard_overrides": loop.guard.overrides, "info_json": json.dumps(info, default=str), "failure_reason": failure,
        }
        self.pub_result.publish(from_dict(NavigationRun, result))
        if loop.mapper is not None:
            self.publish_map(loop.mapper)
        self.get_logger().info(f"{run['episode_id']} {run['policy']}: {n} steps, stopped={result['stopped']}, "
                               f"{info['steps_per_s']} steps/s ({info['loop_steps_per_s']} steps/s first to last action), "
                               f"ms/step {info['timing_ms_per_step']}"
                               + (f", failure: {failure}" if failure else ""))

    def _publish_failed(self, episode_id: str, policy: str, failure: str) -> None:
        result = {"episode_id": episode_id, "policy": policy, "stopped": False, "steps": 0, "xs": [], "ys": [], "yaws": [],
                  "actions": [], "collided": [], "failure_reason": failure}
        self.pub_result.publish(from_dict(NavigationRun, result))

    def publish_map(self, mapper) -> None:
        f = mapper.occupancy.to_occupancy_grid_msg_fields()
        msg = OccupancyGrid()
        msg.header.frame_id = str(self.p["map_frame"])
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.info.resolution = f["resolution"]
        msg.info.width, msg.info.height = f["width"], f["height"]
        msg.info.origin.position.x, msg.info.origin.position.y, msg.info.origin.position.z = f["origin"]["position"]
        msg.info.origin.orientation.w = 1.0
        msg.data = packed("b", np.asarray(f["data"], dtype=np.int8))
        self.pub_map.publish(msg)


def main(args=None) -> None:
    run_node(NavigationNode, args)


if __name__ == "__main__":
    main()
