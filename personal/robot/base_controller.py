"""Closed-loop execution of PersONAL's discrete actions on a differential base.

Feed it odometry poses and call ``tick(now)`` at the control rate; it returns the
velocity command and, once the action ends, an ``Outcome``. It enforces velocity and
acceleration limits, fails safe (zero velocity) on stale odometry, emergency stop,
no progress (blocked) or an action that outlives its time budget. Non-finite odometry
counts as stale (NaN would otherwise disable the progress and blocked checks), and a
non-finite velocity command ends the action as a ``fault``; both stop the base and say why.

LOOK_UP / LOOK_DOWN set a new camera target (``camera_command``: pan, tilt in the Interbotix
convention, positive tilt = down, within the URDF limits of ``personal.robot.conventions``) and
end only when the measured joint positions (``update_joints``, from ``joint_states``) reach it,
or time out saying where the joint stands: the map must never assume a tilt the camera did not make.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from personal.robot import conventions as C

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, LOOK_UP, LOOK_DOWN = range(6)
ACTION_NAMES = ["STOP", "MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "LOOK_UP", "LOOK_DOWN"]


@dataclass
class Limits:
    forward_m: float = 0.25
    turn_rad: float = math.radians(30.0)
    tilt_rad: float = math.radians(30.0)  # one LOOK_UP / LOOK_DOWN step
    max_tilt_rad: float = math.radians(60.0)  # |tilt| bound, within the URDF's limits (conventions.TILT_LIMITS)
    look_tolerance: float = 0.02  # rad: the joint counts as at its target within this
    look_timeout: float = 3.0  # s for the tilt joint to reach its target
    max_linear: float = 0.3  # m/s
    max_angular: float = 1.0  # rad/s
    linear_accel: float = 0.6  # m/s^2
    angular_accel: float = 2.0  # rad/s^2
    linear_tolerance: float = 0.02  # m
    angular_tolerance: float = math.radians(2.0)
    action_timeout: float = 8.0  # s per action
    odom_timeout: float = 0.5  # s without odometry = stale
    blocked_window: float = 1.0  # s without progress while commanding = blocked
    blocked_progress: float = 0.01  # m or rad that counts as progress in that window


LIMIT_PARAMS = ("max_linear", "max_angular", "linear_accel", "angular_accel", "linear_tolerance",
                "action_timeout", "odom_timeout", "blocked_window", "forward_m", "look_timeout")
CAMERA_POSES = ("tf", "fixed")
_LIMIT_UNITS = {"max_linear": "m/s", "max_angular": "rad/s", "linear_accel": "m/s^2", "angular_accel": "rad/s^2",
                "linear_tolerance": "m", "action_timeout": "s per action", "odom_timeout": "s without odometry = stale",
                "blocked_window": "s without progress while commanding = blocked", "forward_m": "m per MOVE_FORWARD",
                "look_timeout": "s for the tilt joint to reach its target"}
# the base driver node's parameters: {name: (default, description)}
DRIVER_PARAMETERS = {
    **{name: (getattr(Limits(), name), f"controller limit: {_LIMIT_UNITS[name]}") for name in LIMIT_PARAMS},
    "turn_deg": (30.0, "degrees per TURN_LEFT / TURN_RIGHT"),
    "angular_tolerance_deg": (2.0, "degrees: a turn counts as done within this"),
    "tilt_step_deg": (30.0, "degrees per LOOK_UP / LOOK_DOWN"),
    "control_rate": (20.0, "control loop rate, Hz"),
    "base": ("create3", "base profile (personal.robot.conventions.BASES)"),
    "robot_name": ("", "Interbotix robot_name; empty = the namespace, locobot at the root"),
    "camera_pose": ("tf", "tf (look the camera up in TF) | fixed (the URDF mount at the measured joints)"),
    "odom_frame": ("", "odometry frame of camera/pose; empty = <robot_name>/odom"),
    "camera_frame": (C.COLOR_OPTICAL_FRAME, "optical frame whose pose is published"),
    "episode_id": ("locobot", "echoed in agent_state"),
}


def check_driver_parameters(p: dict) -> None:
    """ValueError naming a ``base`` or ``camera_pose`` that is not one of the known ones."""
    for name, options in (("base", tuple(C.BASES)), ("camera_pose", CAMERA_POSES)):
        if p[name] not in options:
            raise ValueError(f"parameter '{name}': {p[name]!r} unknown ({' | '.join(options)})")


def limits_from(p: dict) -> Limits:
    """The controller limits of the driver's parameters (angles given in degrees)."""
    return Limits(**{n: float(p[n]) for n in LIMIT_PARAMS}, turn_rad=math.radians(p["turn_deg"]),
                  angular_tolerance=math.radians(p["angular_tolerance_deg"]), tilt_rad=math.radians(p["tilt_step_deg"]))


class StepCount:
    """AgentState's ``step`` and ``stopped``: actions executed since start or since the last STOP
    (a rejected action is not executed; the first action after a STOP begins a new run)."""

    def __init__(self) -> None:
        self.steps, self.stopped = 0, False

    def count(self, out: "Outcome") -> None:
        if out.status == "rejected":
            return
        if self.stopped:
            self.steps, self.stopped = 0, False
        self.steps += 1
        self.stopped = out.action == STOP and out.succeeded


@dataclass
class Pose2D:
    x: float
    y: float
    yaw: float
    stamp: float  # seconds, controller clock


@dataclass
class Outcome:
    action: int
    status: str  # succeeded | blocked | timed_out | stale_odom | estop | rejected | fault
    detail: str
    duration: float
    distance: float = 0.0
    rotation: float = 0.0

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


def wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


class BaseController:
    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.pose: Pose2D | None = None
        self.camera_command = (0.0, 0.0)  # (pan, tilt) target, radians, Interbotix convention (tilt > 0: down)
        self.joints: tuple[float, float, float] | None = None  # measured (pan, tilt, stamp) from joint_states
        self._look_target: float | None = None
        self.estopped = False
        self._action: int | None = None
        self._start: Pose2D | None = None
        self._t0 = 0.0
        self._cmd = (0.0, 0.0)
        self._last_cmd_t: float | None = None
        self._progress_mark: tuple[float, float] = (0.0, 0.0)  # (time, progress)
        self.bad_odometry = ""  # why the latest odometry was refused (non-finite), "" once a good one arrives

    @property
    def busy(self) -> bool:
        return self._action is not None

    @property
    def tilt(self) -> float:
        """The camera tilt now: measured when joint_states arrive, else the last command (positive = down)."""
        return self.joints[1] if self.joints is not None else self.camera_command[1]

    def update_joints(self, pan: float, tilt: float, stamp: float) -> bool:
        """Measured pan / tilt (radians); False for non-finite values (ignored)."""
        if not all(math.isfinite(v) for v in (pan, tilt, stamp)):
            return False
        self.joints = (pan, tilt, stamp)
        return True

    def update_odometry(self, pose: Pose2D) -> bool:
        """Take a pose; False (and the odometry counts as stale) when it is not finite."""
        if not all(math.isfinite(v) for v in (pose.x, pose.y, pose.yaw, pose.stamp)):
            self.bad_odometry = f"non-finite odometry (x={pose.x}, y={pose.y}, yaw={pose.yaw})"
            return False
        self.pose, self.bad_odometry = pose, ""
        return True

    def set_estop(self, engaged: bool) -> None:
        self.estopped = engaged

    def start(self, action: int, now: float) -> Outcome | None:
        """Begin an action. Instant actions (STOP, LOOK_*) and rejections return an Outcome now."""
        if action not in range(6):
            return Outcome(action, "rejected", f"action {action} is outside the action space 0..5", 0.0)
        if self.busy:
            return Outcome(action, "rejected", f"busy executing {ACTION_NAMES[self._action]}", 0.0)
        if self.estopped and action in (MOVE_FORWARD, TURN_LEFT, TURN_RIGHT):
            return Outcome(action, "estop", "emergency stop engaged", 0.0)
        if action == STOP:
            self._cmd = (0.0, 0.0)
            return Outcome(action, "succeeded", "stopped", 0.0)
        if action in (LOOK_UP, LOOK_DOWN):
            step = self.limits.tilt_rad * (C.LOOK_UP_SIGN if action == LOOK_UP else -C.LOOK_UP_SIGN)
            lim = self.limits.max_tilt_rad
            pan, tilt = C.clamp_pan_tilt(self.camera_command[0], max(-lim, min(lim, self.camera_command[1] + step)))
            self.camera_command = (pan, tilt)
            self._action, self._t0, self._look_target = action, now, tilt
            return None
        stale = self._stale(now)
        if stale:
            return Outcome(action, "stale_odom", stale, 0.0)
        self._action, self._start, self._t0 = action, self.pose, now
        self._progress_mark = (now, 0.0)
        self._last_cmd_t = now
        return None

    def _stale(self, now: float) -> str:
        if self.bad_odometry:
            return self.bad_odometry
        if self.pose is None:
            return "no odometry received"
        age = now - self.pose.stamp
        if age > self.limits.odom_timeout:
            return f"odometry is {age:.2f} s old (limit {self.limits.odom_timeout:.2f} s)"
        return ""

    def _progress(self) -> tuple[float, float]:
        """(distance along the start heading, signed rotation since start)."""
        s, p = self._start, self.pose
        along = (p.x - s.x) * math.cos(s.yaw) + (p.y - s.y) * math.sin(s.yaw)
        return along, wrap(p.yaw - s.yaw)

    def _ramp(self, target: float, current: float, accel: float, dt: float) -> float:
        step = accel * dt
        return max(current - step, min(current + step, target))

    def _finish(self, status: str, detail: str, now: float) -> tuple[tuple[float, float], Outcome]:
        along, turned = self._progress() if self.pose and self._start else (0.0, 0.0)
        out = Outcome(self._action, status, detail, now - self._t0, distance=along, rotation=turned)
        self._action, self._cmd = None, (0.0, 0.0)
        return self._cmd, out

    def _look_progress(self, now: float) -> Outcome | None:
        target, lim = self._look_target, self.limits
        if self.joints is not None and self.joints[2] >= self._t0 and abs(self.joints[1] - target) <= lim.look_tolerance:
            return self._finish_look("succeeded", f"camera tilt {math.degrees(self.joints[1]):.1f} deg (joint_states; "
                                                  f"commanded {math.degrees(target):.1f})", now)
        if now - self._t0 > lim.look_timeout:
            where = ("no joint_states received (is the Interbotix xs_sdk running?)" if self.joints is None else
                     f"tilt joint at {math.degrees(self.joints[1]):.1f} deg")
            return self._finish_look("timed_out", f"{where}, commanded {math.degrees(target):.1f} deg: not reached in "
                                                  f"{lim.look_timeout:.1f} s", now)
        return None

    def _finish_look(self, status: str, detail: str, now: float) -> Outcome:
        out = Outcome(self._action, status, detail, now - self._t0)
        self._action = self._look_target = None
        return out

    def tick(self, now: float) -> tuple[tuple[float, float], Outcome | None]:
        """Velocity command (v, w) for this control period and the outcome if the action ended."""
        if not self.busy:
            self._cmd = (0.0, 0.0)
            return self._cmd, None
        if self._action in (LOOK_UP, LOOK_DOWN):
            return (0.0, 0.0), self._look_progress(now)
        lim = self.limits
        if self.estopped:
            return self._finish("estop", "emergency stop engaged", now)
        stale = self._stale(now)
        if stale:
            return self._finish("stale_odom", stale, now)
        if now - self._t0 > lim.action_timeout:
            return self._finish("timed_out", f"not done after {lim.action_timeout:.1f} s", now)
        along, turned = self._progress()
        dt = max(0.0, now - (self._last_cmd_t or now))
        self._last_cmd_t = now
        if self._action == MOVE_FORWARD:
            remaining, progress = lim.forward_m - along, along
            # done inside the tolerance once slow enough to stop within the accel limit
            if abs(remaining) <= lim.linear_tolerance and abs(self._cmd[0]) <= lim.linear_accel * dt:
                return self._finish("succeeded", f"moved {along:.3f} m", now)
        else:
            sign = 1.0 if self._action == TURN_LEFT else -1.0
            remaining, progress = lim.turn_rad - sign * turned, sign * turned
            if abs(remaining) <= lim.angular_tolerance and abs(self._cmd[1]) <= lim.angular_accel * dt:
                return self._finish("succeeded", f"turned {math.degrees(turned):.1f} deg", now)
        if now - self._progress_mark[0] >= lim.blocked_window:
            if progress - self._progress_mark[1] < lim.blocked_progress:
                return self._finish("blocked", f"no progress in {lim.blocked_window:.1f} s", now)
            self._progress_mark = (now, progress)
        v, w = self._cmd
        if self._action == MOVE_FORWARD:
            # decelerate so we can stop at the goal: v <= sqrt(2 a d)
            target_v = math.copysign(min(lim.max_linear, math.sqrt(2 * lim.linear_accel * abs(remaining))), remaining)
            heading_error = wrap(self._start.yaw - self.pose.yaw)
            v = self._ramp(target_v, v, lim.linear_accel, dt)
            w = max(-lim.max_angular, min(lim.max_angular, 2.0 * heading_error))
        else:
            target_w = sign * math.copysign(
                min(lim.max_angular, math.sqrt(2 * lim.angular_accel * abs(remaining))), remaining)
            w = self._ramp(target_w, w, lim.angular_accel, dt)
            v = 0.0
        if not (math.isfinite(v) and math.isfinite(w)):  # e.g. a NaN limit: never send it to the motors
            return self._finish("fault", f"non-finite velocity command ({v}, {w}); check the limits", now)
        self._cmd = (v, w)
        return self._cmd, None
