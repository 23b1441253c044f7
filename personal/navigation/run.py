"""One navigation run's bookkeeping without ROS (nodes/navigation_node.py is its rclpy shell):
which agent state answers the last action, the trajectory so far, the step timeout, and the
NavigationRun fields at the end.
"""
from __future__ import annotations

import json
import math

import numpy as np


# the navigation node's parameters: {name: (default, description)}
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
    "reject_unsure": (False, "value-map-*+verify: an unsure verdict also rejects the candidate (the search goes on)"),
}



class NavRun:
    """A run of ``loop`` (a NavigationLoop) for ``episode_id``; times are ``time.monotonic()`` values."""

    def __init__(self, episode_id: str, policy: str, loop, spec, now: float, command: dict | None = None) -> None:
        self.episode_id, self.policy, self.loop, self.spec = episode_id, policy, loop, spec
        self.command = command  # the nav/start (as a dict) that began the run; None: autostart
        self.done = False
        self.started = False
        self.awaiting: tuple[str, int] = ("", 0)  # (request_id, step) of the agent state that answers
        self.state: dict | None = None  # the agent state to observe from (None: waiting for one)
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.yaws: list[float] = []
        self.actions: list[int] = []
        self.collided: list[bool] = []
        self.since = self.t0 = now
        self.t_first: float | None = None
        self.t_last: float | None = None

    def repeated_by(self, command: dict) -> bool:
        """Whether ``command`` (a nav/start as a dict) repeats the start of this run while it is in progress: a
        sender that heard no progress says its start again (Fast DDS can lose a message sent as soon as its
        publisher sees the subscriber), and that repeat is not a new run."""
        return not self.done and command == self.command

    def begin(self, now: float) -> None:
        """The loop is reset: await the reset's state (request_id "" at step 0)."""
        self.started = True
        self.since = now  # loop.reset may have loaded the text model
        self.awaiting = ("", 0)

    def answers(self, st: dict, live: bool) -> bool:
        """Whether agent state ``st`` answers the last action. Live: the base driver keeps its own
        step count and episode id, so the request id alone identifies the answer."""
        if live:
            return bool(st["request_id"]) and st["request_id"] == self.awaiting[0]
        return st["episode_id"] == self.episode_id and (st["request_id"], st["step"]) == self.awaiting

    def accept(self, st: dict, live: bool, now: float) -> str | None:
        """Agent state ``st`` arrived: None when it does not answer the last action, else 'finish'
        (STOP answered or the step budget spent: no observation needed) or 'observe'."""
        if not self.answers(st, live):
            return None
        self.since = now
        if st["stopped"] or self.loop.done:
            self.record(st)
            return "finish"
        self.state = st
        return "observe"

    def observation(self, parts: dict, K: np.ndarray):
        """The loop's Frame of the paired sensor ``parts`` seen from the awaited state (recorded in the
        trajectory; the run then waits for the next agent state). ValueError: colour and depth differ."""
        from personal.navigation.loop import Frame

        rgb = parts.get("rgb")
        if rgb is not None and rgb.shape[:2] != parts["depth"].shape[:2]:
            raise ValueError(f"camera/color/image_raw {rgb.shape[1]}x{rgb.shape[0]} does not match the aligned "
                             f"depth {parts['depth'].shape[1]}x{parts['depth'].shape[0]}: frame skipped")
        st, self.state = self.state, None
        pose = self.record(st)
        return Frame(pose, parts["depth"], K, parts["pose"], parts.get("ids"), rgb, bool(st["collided"]))

    def record(self, st: dict) -> tuple[float, float, float]:
        """Append ``st``'s pose to the trajectory (and its collision flag once an action was taken)."""
        pose = (st["position"]["x"], st["position"]["y"], st["yaw"])
        self.xs.append(pose[0])
        self.ys.append(pose[1])
        self.yaws.append(pose[2])
        if self.actions:
            self.collided.append(bool(st["collided"]))
        return pose

    def took(self, action: int, now: float) -> str:
        """Note the action the loop chose; returns its request id (the answer must carry it)."""
        self.actions.append(int(action))
        if self.t_first is None:
            self.t_first = now
        self.t_last = now
        step = self.loop.step_count
        request_id = f"{self.episode_id}:{self.policy}:{step}"
        self.awaiting = (request_id, step)
        self.since = now
        return request_id

    def overdue(self, now: float, timeout: float) -> str | None:
        """What the run has waited for longer than ``timeout`` (None: nothing, or not running)."""
        if self.done or not self.started or now - self.since <= timeout:
            return None
        return "agent_state" if self.state is None else "an observation matching the agent state"

    def result(self, failure: str, now: float) -> tuple[dict, dict]:
        """Close the run: (NavigationRun fields, info with the step rates and timings)."""
        self.done = True
        loop = self.loop
        n = len(self.actions)
        self.collided += [False] * (n - len(self.collided))
        wall = now - self.t0
        info = dict(getattr(loop.policy, "info", {}) or {})
        if loop.stop_verifier is not None:
            info["stop_checks"] = [c.to_dict() for c in loop.stop_verifier.checks]
        info["timing_ms_per_step"] = {k: round(1e3 * v / max(n, 1), 2) for k, v in loop.timing.items()}
        info["steps_per_s"] = round(n / wall, 2) if wall > 0 else None  # from the start request, incl. setup
        span = (self.t_last or 0.0) - (self.t_first or 0.0)
        info["loop_steps_per_s"] = round((n - 1) / span, 2) if n > 1 and span > 0 else None  # first to last action
        result = {
            "episode_id": self.episode_id, "policy": self.policy, "is_oracle": bool(loop.policy.is_oracle),
            "stopped": bool(n and self.actions[-1] == 0), "steps": n,
            "xs": self.xs, "ys": self.ys, "yaws": self.yaws, "actions": self.actions, "collided": self.collided,
            "guard_overrides": loop.guard.overrides, "info_json": json.dumps(info, default=str), "failure_reason": failure,
        }
        return result, info


def summary_line(run: NavRun, result: dict, info: dict, failure: str) -> str:
    return (f"{run.episode_id} {run.policy}: {result['steps']} steps, stopped={result['stopped']}, "
            f"{info['steps_per_s']} steps/s ({info['loop_steps_per_s']} steps/s first to last action), "
            f"ms/step {info['timing_ms_per_step']}" + (f", failure: {failure}" if failure else ""))


def episode_spec(ep: dict):
    """The loop's EpisodeSpec of an EpisodeDescriptor (as a dict)."""
    from personal.navigation.policies import EpisodeSpec

    return EpisodeSpec(ep["episode_id"], ep["query"], ep["summary"], ep["owner"], float(ep["start_position"]["z"]),
                       int(ep["floor_id"]))


def command_spec(start: dict, floor_z: float):
    """The EpisodeSpec a NavigationStart (as a dict) carries, or None without a query: a real robot
    has no episode descriptor, so the task comes with the command."""
    if not start["query"].strip():
        return None
    from personal.navigation.policies import EpisodeSpec

    return EpisodeSpec(start["episode_id"], start["query"], start["summary"], start["owner"], float(floor_z))


def failed_run(episode_id: str, policy: str, failure: str) -> dict:
    """NavigationRun fields of a run that could not start."""
    return {"episode_id": episode_id, "policy": policy, "stopped": False, "steps": 0, "xs": [], "ys": [], "yaws": [],
            "actions": [], "collided": [], "failure_reason": failure}


def start_state(episode_id: str, odom: tuple[float, float, float, float]) -> dict:
    """Live runs: the step-0 agent state where odometry (x, y, z, yaw) says the base stands."""
    x, y, z, yaw = odom
    return {"episode_id": episode_id, "position": {"x": x, "y": y, "z": z}, "yaw": yaw,
            "collided": False, "step": 0, "stopped": False, "request_id": ""}


IMAGE_TOPICS = {"depth": "camera/aligned_depth_to_color/image_raw", "ids": "camera/semantic/image_raw",
                "rgb": "camera/color/image_raw"}


class Sensing:
    """What the navigation node reads, from its parameters: the ORACLE caption encoder maps instance
    ids, image encoders the colour image; ``sync`` bridge | live (anything else: bridge, with ``error``)."""

    def __init__(self, p: dict) -> None:
        self.oracle_perception = str(p["encoder"]).startswith("oracle")
        self.feature_key = "ids" if self.oracle_perception else "rgb"
        self.live = p["sync"] == "live"
        self.error = "" if p["sync"] in ("bridge", "live") else \
            f"parameter 'sync': {p['sync']!r} unknown (bridge | live); using bridge"

    def image_keys(self) -> tuple[str, ...]:
        """Images to subscribe to; under the ORACLE encoder colour only for verify before stop (bridge)."""
        return ("depth", self.feature_key) + (("rgb",) if self.oracle_perception and not self.live else ())

    def pairing(self, p: dict):
        """The observation pairing these sensors need (``image_slop`` s, ``settle_s`` s)."""
        from personal.navigation.sync import ObservationPairing

        return ObservationPairing(self.live, self.feature_key, int(float(p["image_slop"]) * 1e9), float(p["settle_s"]))

    def needs_episode(self, run: NavRun) -> bool:
        """Whether the run waits for the episode descriptor: the oracle policy and ORACLE captions read its
        ground truth, and a run without a nav/start query takes its task from it."""
        policy = run.loop.policy
        return run.spec is None or policy.is_oracle or (policy.needs_features and self.oracle_perception)


def episode_rejected(episode_id: str, scene_id: str) -> str:
    return f"topic 'episode': rejected message without episode_id / scene_id ({episode_id!r}, {scene_id!r})"


def start_rejected(episode_id: str, max_steps: int) -> str:
    return (f"topic 'nav/start': rejected message: needs an episode_id and max_steps >= 1 "
            f"(got {episode_id!r}, {max_steps})")


def map_due(step: int, every: int) -> bool:
    """Whether nav/occupancy goes out after ``step`` (every N steps; 0: only at the end)."""
    return every > 0 and step % every == 0


def is_reset_state(state: dict | None, episode_id: str) -> bool:
    """The bridge's step-0 agent state of ``episode_id`` (the answer to a reset, no action yet)."""
    return state is not None and state["episode_id"] == episode_id and state["request_id"] == "" and state["step"] == 0


def observation_image(msg, key: str, topic: str) -> np.ndarray:
    """The array of an image message of ``key`` (depth | ids | rgb); ValueError naming the topic."""
    if key == "rgb":
        from personal.mapping.ros_io import rgb_from_msg

        return rgb_from_msg(msg, topic)
    try:
        return image_array(msg) if key == "depth" else image_array(msg).astype(np.int32, copy=False)
    except ValueError as exc:
        raise ValueError(f"topic '{topic}': {exc}") from exc


def camera_matrix(k) -> np.ndarray:
    """The 3x3 intrinsics of a CameraInfo ``k``; ValueError unless both focal lengths are positive."""
    K = np.asarray(k, dtype=float).reshape(3, 3)
    if not (K[0, 0] > 0 and K[1, 1] > 0):
        raise ValueError("K has non-positive focal lengths")
    return K


def non_finite_pose(x: float, y: float, z: float, yaw: float) -> str:
    """Why an agent state is rejected ("" if its pose is finite)."""
    if all(math.isfinite(v) for v in (x, y, z, yaw)):
        return ""
    return f"topic 'agent_state': rejected message with a non-finite pose ({x}, {y}, {z}, yaw {yaw})"


# -- message-shaped inputs (duck-typed: any object with the sensor_msgs / geometry_msgs fields) --------

def image_array(msg) -> np.ndarray:
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


class PanLoops:
    """The navigation node's NavigationLoop per policy, built on first use (the text model loads
    only when a value-map policy runs). ``p``: the node's parameters; ``log``: logger-like."""

    def __init__(self, p: dict, log) -> None:
        self.p, self.log = p, log
        self._components = None
        self._scenes: dict | None = None
        self._loops: dict = {}

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
        """The loop of ``policy`` (ValueError: unknown policy)."""
        if policy not in self._loops:
            from personal.navigation.eval.pan_run import PanComponents, build_loop
            from personal.navigation.policies import POLICIES, split_verify

            if split_verify(policy)[0] not in POLICIES:
                raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
            needs_model = policy.startswith("value-map")
            comps = self.components() if needs_model else None
            if comps is None:
                comps = PanComponents(encoder=None, embed=None, extractor=None)
            loop = build_loop(policy, comps, max_steps=int(self.p["max_steps"]))
            if loop.stop_verifier is not None:
                loop.stop_verifier.reject_unsure = bool(self.p["reject_unsure"])
            if needs_model:
                self._override_thresholds(policy, loop)
            self._loops[policy] = loop
            if needs_model:
                comps.embed(["warm up the text model"])  # load it now, not inside a timed step
        return self._loops[policy]

    def _override_thresholds(self, policy: str, loop) -> None:
        """build_loop set the encoder's own pair; a parameter value in [-1, 1] overrides it."""
        if float(self.p["threshold"]) >= -1.0:
            loop.policy.vcfg.threshold = float(self.p["threshold"])
        if float(self.p["phrase_floor"]) >= -1.0:
            loop.policy.scorer.phrase_floor = float(self.p["phrase_floor"])
        self.log.info(f"{policy}: detection threshold {loop.policy.vcfg.threshold:g}, phrase floor "
                      f"{loop.policy.scorer.phrase_floor:g}, relative margin "
                      f"{loop.policy.scorer.relative_margin} ({loop.policy.thresholds.source})")

    def scene(self, scene_id: str, what: str = ""):
        """Scene ``scene_id`` of the episode source (RuntimeError: not there)."""
        scene = self.scenes().get(scene_id)
        if scene is None:
            raise RuntimeError(f"{what}scene {scene_id!r} is not in the episode source"
                               + ("" if what else " (set episodes_dir / scenes / seed like the bridge)"))
        return scene

    def prepare(self, loop, ep: dict, oracle_perception: bool) -> None:
        """What ``loop`` reads of episode ``ep``'s ground truth: the oracle policy its targets and
        navigable grid, ORACLE perception the scene's captions (RuntimeError: scene unknown)."""
        if loop.policy.is_oracle:
            from personal.sim.navgrid import NavGrid  # the oracle only: the bridge's own grid of the scene

            scene = self.scene(ep["scene_id"], "oracle: ")
            loop.policy.set_ground_truth(NavGrid(scene, int(ep["floor_id"])),
                                         [scene.object(o).box for o in ep["target_object_ids"]])
        if loop.policy.needs_features and oracle_perception:
            self.oracle_captions(ep)

    def oracle_captions(self, ep: dict) -> None:
        """ORACLE perception: the encoder gets this episode's scene captions, embedded once here
        (outside the timed steps)."""
        enc = self.components().encoder
        if hasattr(enc, "set_captions"):
            from personal.models.oracle import captions_from_scene

            scene = self.scene(ep["scene_id"])
            enc.set_captions(captions_from_scene(scene))
            enc.encode_text([o.caption for o in scene.objects])
