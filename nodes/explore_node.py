"""Exploration node: the frontier policy (``personal.mapping.exploration``) driving the sim
bridge with discrete actions until no reachable frontier is left (PersONAL pre-exploration,
at most ``max_steps`` = 2,500 actions), then asks the mapping node to save its maps.

Loop (event driven: each input is acted on at once; a 0.1 s timer covers the timeouts): send
``action`` (personal/msg/DiscreteAction, request id ``explore-<n>``) ->
wait for ``agent_state`` echoing that id (pose, collision) -> wait until the mapping node
reports (``map/status``, personal/msg/MapStatus) a frame integrated at that pose and the ``map`` (OccupancyGrid)
stamped with it (a blocked move keeps the pose, whose map is already there), or ``map_timeout`` as a
bound -> decide the next action on that grid.

On finish: STOP is sent, ``map/save`` (std_srvs/Trigger) is called when ``save_on_finish``,
and the node exits when ``exit_on_finish`` (as the required node of the ``explore`` graph).

``all_episodes:=true``: explore every episode the bridge holds in turn (``episode/load`` of the next
index after each scene's map is saved, said again until answered; the mapping node starts fresh
maps for a new scene), so one graph — one start-up — pre-explores several scenes (the POG evaluator
writes one episode per scene). A new scene's first decision waits for a map of that scene
(``map/status`` scene id), so each scene is explored exactly as by a graph of its own.
"""
from __future__ import annotations

import random
import time

import numpy as np
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from personal import exit_codes
from personal.interfaces.convert import to_dict
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, MapStatus
from personal.srv import LoadEpisode
from personal.mapping.exploration import PARAMETERS, Act, ExplorerConfig, FrontierExplorer, map_matches_pose
from personal.mapping.grid import GridGeometry
from nodes.goals import call_until_answered
from nodes.lifecycle import run_node, subscribe
from nodes.parameters import declare_parameters

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LOAD_RESEND_S, LOAD_TIMEOUT_S = 5.0, 60.0  # all_episodes: episode/load said again until answered, then given up


class ExploreNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("explore", **kwargs)
        self.p = declare_parameters(self, PARAMETERS)
        self.explorer = self._new_explorer()
        self.episode: dict | None = None  # the bridge's current episode (all_episodes: which scene to map)
        self.want_index: int | None = None  # all_episodes: the episode index asked for with episode/load
        self.grid: OccupancyGridMsg | None = None
        self.state: dict | None = None
        self.status: dict | None = None
        self.sent = 0
        self.t_first: float | None = None  # the first action of the current scene
        self.phase = "start"  # start -> wait_state -> wait_map -> (decide) ... -> saving -> finished
        self.phase_since = time.monotonic()
        self.want_grid_ns: int | None = None
        self.finished = False
        # exit code of the node (the explore graph's, which marks it required): a run that made no
        # progress — no input, no step taken, maps not saved — is INCOMPLETE (3), never a success
        self.exit_code = exit_codes.OK
        self.failures: list[str] = []
        self.t0 = time.monotonic()
        self.pub_action = self.create_publisher(DiscreteAction, "action", RELIABLE)
        subscribe(self, OccupancyGridMsg, "map", self._on_grid, LATCHED)
        subscribe(self, MapStatus, "map/status", self._on_status, LATCHED)  # the newest, even if integrated before we started
        subscribe(self, AgentState, "agent_state", self._on_state, STATE_QOS)
        subscribe(self, EpisodeDescriptor, "episode", self._on_episode, LATCHED)
        self.save_client = self.create_client(Trigger, "map/save")
        self.load_client = self.create_client(LoadEpisode, "episode/load")
        self.load_deadline: tuple | None = None  # (monotonic deadline, future) of an episode/load awaited
        self.create_timer(0.1, self._tick)  # timeouts only: every input acts at once
        self.get_logger().info(f"explore ready: frontier policy, budget {self.p['max_steps']} steps")

    def _new_explorer(self) -> FrontierExplorer:
        return FrontierExplorer(ExplorerConfig(max_steps=int(self.p["max_steps"]), agent_radius=float(self.p["agent_radius"])))

    # -- input ---------------------------------------------------------------------
    def _on_episode(self, msg: EpisodeDescriptor) -> None:
        self.episode = {"episode_id": msg.episode_id, "scene_id": msg.scene_id, "index": int(msg.index), "count": int(msg.count)}
        self._tick()

    def _on_grid(self, msg: OccupancyGridMsg) -> None:
        self.grid = msg
        self._tick()  # decide as soon as the input is there, not on the next timer tick

    def _on_status(self, msg: MapStatus) -> None:
        stamp = msg.header.stamp
        self.status = {"x": msg.x, "y": msg.y, "yaw": msg.yaw, "frames": msg.frames, "scene_id": msg.scene_id,
                       "stamp_ns": stamp.sec * 1_000_000_000 + stamp.nanosec}
        self._tick()

    def _on_state(self, msg: AgentState) -> None:
        st = to_dict(msg)
        self.state = st
        if st.get("stopped") and not self.finished and self.phase not in ("saving", "start"):
            # the episode was ended by someone else's STOP: our actions would be ignored from now on
            self.get_logger().error("agent_state: episode stopped by another node; exploration ends here")
            self._finish("episode stopped externally", save=bool(self.p["save_on_finish"]))
            return
        self._tick()

    # -- loop ----------------------------------------------------------------------
    def _set(self, phase: str) -> None:
        self.phase, self.phase_since = phase, time.monotonic()

    def _pose(self) -> tuple[float, float, float]:
        s = self.state
        return float(s["position"]["x"]), float(s["position"]["y"]), float(s["yaw"])

    def _map_matches_state(self) -> bool:
        if self.status is None or self.state is None:
            return False
        if self.want_index is not None:  # a later scene of all_episodes: its own episode, state and map only
            ep = self.episode
            if ep is None or ep["index"] != self.want_index or self.state.get("episode_id") != ep["episode_id"] \
                    or self.status.get("scene_id") != ep["scene_id"]:
                return False
        if self.grid is None:
            return False
        g = self.grid.header.stamp
        return map_matches_pose(self.status, self._pose(), g.sec * 1_000_000_000 + g.nanosec)

    def _tick(self) -> None:
        if self.load_deadline is not None and time.monotonic() > self.load_deadline[0]:
            self.load_deadline[1].cancel()  # its done callback fails the run: no answer
        if self.finished or self.phase == "saving":
            return
        if self.phase == "wait_state" and self.state is not None and self.state.get("request_id") == f"explore-{self.sent}":
            self._set("wait_map")  # the state came: the map of that pose may already be here too (checked below)
        waited = time.monotonic() - self.phase_since
        if self.phase == "start":
            if self.state is not None and self.grid is not None and self._map_matches_state():
                self._decide()
            elif waited > float(self.p["start_timeout"]):
                self.get_logger().error("no agent_state / map received: is the sim bridge and mapping node running?")
                self._finish("no input", save=False)
        elif self.phase == "wait_state":
            if waited > 10.0:
                self.get_logger().warning(f"no agent_state for action {self.sent} after 10 s; deciding again")
                self._decide()
        elif self.phase == "wait_map":
            if self._map_matches_state() or waited > float(self.p["map_timeout"]):
                self._decide()

    def _decide(self) -> None:
        if self.grid is None or self.state is None:
            self._set("start")
            return
        info = self.grid.info
        try:
            state = np.asarray(self.grid.data, dtype=np.int8).reshape(info.height, info.width)
        except ValueError as exc:
            self.get_logger().error(f"topic 'map': {len(self.grid.data)} cells for {info.width}x{info.height}: {exc}")
            self._set("wait_map")
            return
        geo = GridGeometry(float(info.resolution), (info.origin.position.x, info.origin.position.y), (int(info.height), int(info.width)))
        action = self.explorer.act(state, geo, self._pose(), bool(self.state.get("collided", False)))
        if action == Act.STOP:
            st = self.explorer.status
            self._send(Act.STOP)
            self._finish(st.reason, save=bool(self.p["save_on_finish"]))
            return
        self._send(action)
        self._set("wait_state")

    def _send(self, action: int) -> None:
        if self.t_first is None:
            self.t_first = time.monotonic()  # steps/s is counted from the first action (not the nodes' start-up)
        self.sent += 1
        self.pub_action.publish(DiscreteAction(action=int(action), request_id=f"explore-{self.sent}"))

    def _finish(self, reason: str, save: bool) -> None:
        st = self.explorer.status
        now = time.monotonic()
        moving = now - (self.t_first or now)
        rate = f", {st.steps / moving:.1f} steps/s over {moving:.1f} s from the first action" if moving > 0 else ""
        self.get_logger().info(f"exploration finished: {reason}; {st.steps} steps, {st.collisions} collisions, "
                               f"{now - self.t0:.1f} s{rate}")
        if st.steps == 0:
            self._fail(f"no progress: 0 steps taken ({reason})")
        if not save:
            self.finished = True
            return
        if not self.save_client.wait_for_service(timeout_sec=5.0):
            self._fail("service 'map/save' not available: maps not saved")
            self.finished = True
            return
        self._set("saving")
        self.save_client.call_async(Trigger.Request()).add_done_callback(self._saved)

    def _fail(self, why: str) -> None:
        self.get_logger().error(f"ERROR: {why}; this exploration is INCOMPLETE (exit code {exit_codes.INCOMPLETE})")
        self.failures.append(why)
        self.exit_code = exit_codes.INCOMPLETE

    def _saved(self, future) -> None:
        try:
            res = future.result()
            log = self.get_logger().info if res.success else self.get_logger().error
            log(f"map/save: {res.message}")
            if not res.success:
                self._fail(f"map/save: {res.message}")
        except Exception as exc:
            self._fail(f"map/save failed: {exc}")
        ep = self.episode
        if self.p["all_episodes"] and ep is not None and ep["index"] + 1 < ep["count"]:
            self._next_episode(ep["index"] + 1)
            return
        self.finished = True

    def _next_episode(self, index: int) -> None:
        """all_episodes: the bridge's episode ``index`` (a new scene), explored from its start by a fresh
        explorer. episode/load by index is said again until answered (the bridge loads it once)."""
        if not self.load_client.wait_for_service(timeout_sec=5.0):
            self._fail("service 'episode/load' not available: the remaining episodes are not explored")
            self.finished = True
            return

        def done(future) -> None:
            self.load_deadline = None
            res = None if future.cancelled() else future.result()
            if res is None or not res.success:
                why = res.message if res is not None else f"no answer in {LOAD_TIMEOUT_S:g} s"
                self._fail(f"episode/load {index}: {why}: the remaining episodes are not explored")
                self.finished = True
                return
            self.get_logger().info(f"next scene: {res.message}")
            self.explorer, self.want_index, self.t0, self.t_first = self._new_explorer(), index, time.monotonic(), None
            self._set("start")
            self._tick()

        request = LoadEpisode.Request(index=index, request_id=random.getrandbits(63))
        future = call_until_answered(self, self.load_client, request, LOAD_RESEND_S)
        future.add_done_callback(done)
        self.load_deadline = (time.monotonic() + LOAD_TIMEOUT_S, future)  # then _tick cancels it: a failure, not a hang


def main(args=None) -> None:
    run_node(ExploreNode, args, until=lambda n: n.finished and n.p["exit_on_finish"], exit_code=lambda n: n.exit_code)


if __name__ == "__main__":
    main()
