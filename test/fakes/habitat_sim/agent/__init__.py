"""``habitat_sim.agent`` of the contract fake.

Read from habitat-sim 0.3:

- ``src_python/habitat_sim/agent/agent.py``: ``ActionSpec(name, actuation=None)``,
  ``SixDOFPose``, ``AgentState`` (position, rotation, sensor_states; attrs classes with
  ``slots=True`` whose validators ``all_is_finite`` / ``is_unit_length`` (tol 1e-4) run in
  ``set_state``), ``AgentConfiguration`` (height 1.5, radius 0.1, sensor_specifications,
  action_space, body_type), ``Agent.act`` (asserts the id is in the action space; body actions
  go through ``controls.action(..., apply_filter=True)``, sensor actions are applied to every
  sensor without the filter; returns whether it collided), ``Agent.get_state`` (position =
  the body's absolute translation as float32, rotation = the body rotation; sensor states =
  absolute sensor positions and body rotation * sensor rotation), ``Agent.set_state(state,
  reset_sensors=True, infer_sensor_states=True, is_initial=False)`` (coefficient rotations go
  through ``quat_from_coeffs``; the body is placed exactly at ``state.position``, no snapping;
  ``reset_sensors`` puts each sensor back to its spec pose).
- ``src_python/habitat_sim/agent/controls/controls.py``: ``ActuationSpec(amount,
  constraint=None)``.
- ``src_python/habitat_sim/agent/controls/default_controls.py``: move_forward / backward /
  left / right translate the body along its local -z / +z / -x / +x by ``amount`` (body
  actions); turn_left / turn_right rotate the body about its local +y by +/- ``amount``
  degrees (body actions); look_up / look_down rotate each sensor about its local +x by +/-
  ``amount`` degrees, and with a ``constraint`` the look angle (from the sensor's front
  vector) is clamped to +/- ``constraint`` degrees (``_rotate_local``).
- ``src_python/habitat_sim/agent/controls/object_controls.py``: after a body action the
  filter (``Simulator.step_filter`` -> ``pathfinder.try_step`` when ``allow_sliding``, else
  ``try_step_no_sliding``; no filter without a navmesh) corrects the end position, and the
  action collided when it moved less than before the filter (squared distances, EPS 1e-5).

Poses are stored in float32, as magnum's ``Vector3`` / ``Quaternion`` hold them.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import attr
import numpy as np
import quaternion as qt

from ..utils.common import quat_from_coeffs, quat_rotate_vector

__all__ = ["ActionSpec", "ActuationSpec", "SixDOFPose", "AgentState", "AgentConfiguration", "Agent"]

EPS = 1e-5  # object_controls.py


def _all_is_finite(instance, attribute, value) -> None:
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{value} contains non-finite values which are forbidden in the {attribute.name} of {instance}")


def _is_unit_length(instance, attribute, value, tol=1e-4) -> None:
    if isinstance(value, qt.quaternion):
        if not np.isclose(value.norm(), 1.0, rtol=tol, atol=0):
            raise ValueError(f"{value} is suppose to be a normalized quaternion but is not {value.norm()}")
    else:
        v = np.asarray(value)
        assert v.ndim == 1
        if not np.isclose(np.linalg.norm(v), 1.0, rtol=tol, atol=0):
            raise ValueError(f"{value} is not a unit length vector which is required for {attribute.name}")


@attr.s(auto_attribs=True, slots=True)
class ActuationSpec:
    amount: float
    constraint: Optional[float] = None


@attr.s(auto_attribs=True, slots=True)
class ActionSpec:
    name: str
    actuation: Optional[ActuationSpec] = None


@attr.s(auto_attribs=True, slots=True)
class SixDOFPose:
    position: np.ndarray = attr.ib(factory=lambda: np.zeros(3), validator=_all_is_finite)
    rotation: Any = attr.ib(factory=lambda: qt.quaternion(1, 0, 0, 0), validator=_is_unit_length)


@attr.s(auto_attribs=True, slots=True)
class AgentState:
    position: np.ndarray = attr.ib(factory=lambda: np.zeros(3), validator=_all_is_finite)
    rotation: Any = attr.ib(factory=lambda: qt.quaternion(1, 0, 0, 0), validator=_is_unit_length)
    sensor_states: Dict[str, SixDOFPose] = attr.ib(factory=dict)


def _default_action_space() -> Dict[str, ActionSpec]:
    return dict(
        move_forward=ActionSpec("move_forward", ActuationSpec(amount=0.25)),
        turn_left=ActionSpec("turn_left", ActuationSpec(amount=10.0)),
        turn_right=ActionSpec("turn_right", ActuationSpec(amount=10.0)),
    )


@attr.s(auto_attribs=True, slots=True)
class AgentConfiguration:
    height: float = 1.5
    radius: float = 0.1
    sensor_specifications: List[Any] = attr.Factory(list)
    action_space: Dict[Any, ActionSpec] = attr.Factory(_default_action_space)
    body_type: str = "cylinder"


# move functions of the default registry: name -> (body action?, kind, axis or sign)
_BODY_MOVES = {"move_forward": (2, -1.0), "move_backward": (2, 1.0), "move_left": (0, -1.0), "move_right": (0, 1.0)}
_BODY_TURNS = {"turn_left": 1.0, "turn_right": -1.0}
_SENSOR_LOOKS = {"look_up": 1.0, "look_down": -1.0}
_REAL_ONLY = {"move_up", "move_down", "look_left", "look_right", "rotate_sensor_clockwise",
              "rotate_sensor_anti_clockwise", "pyrobot_noisy_move_forward", "pyrobot_noisy_turn_left",
              "pyrobot_noisy_turn_right", "velocity_control"}


def _f32_quat(q: qt.quaternion) -> qt.quaternion:
    """The quaternion as magnum stores it (float32 coefficients)."""
    w, x, y, z = (float(np.float32(v)) for v in (q.w, q.x, q.y, q.z))
    return qt.quaternion(w, x, y, z)


def _axis_rotation(axis: int, degrees: float) -> qt.quaternion:
    half = math.radians(degrees) / 2
    v = [0.0, 0.0, 0.0]
    v[axis] = math.sin(half)
    return qt.quaternion(math.cos(half), *v)


def _normalized(q: qt.quaternion) -> qt.quaternion:
    return q / math.sqrt(q.norm())  # numpy-quaternion's norm() is the squared magnitude


class _SensorNode:
    """A sensor's scene node: local translation and rotation relative to the agent body."""

    def __init__(self, spec) -> None:
        self.spec = spec
        self.reset()

    def reset(self) -> None:
        """``Sensor::setTransformationFromSpec``: translate by position, rotateX/Y/Z by orientation."""
        self.position = np.asarray(self.spec.position, dtype=np.float32)
        ox, oy, oz = (float(v) for v in self.spec.orientation)
        r = _axis_rotation(2, math.degrees(oz)) * _axis_rotation(1, math.degrees(oy)) * _axis_rotation(0, math.degrees(ox))
        self.rotation = _f32_quat(r)


class Agent:
    """``habitat_sim.Agent`` (created by the Simulator; not constructed by callers)."""

    _real_name = "Agent"
    _real_only = ()
    _REAL_ATTRS = {"agent_config", "controls", "body", "reconfigure", "act", "get_state", "set_state", "scene_node",
                   "state", "close", "initial_state"}

    def __init__(self, agent_config: AgentConfiguration, sim) -> None:
        object.__setattr__(self, "agent_config", agent_config)
        object.__setattr__(self, "_sim", sim)
        object.__setattr__(self, "_position", np.zeros(3, np.float32))
        object.__setattr__(self, "_rotation", qt.quaternion(1, 0, 0, 0))
        object.__setattr__(self, "_sensors", {s.uuid: _SensorNode(s) for s in agent_config.sensor_specifications})
        object.__setattr__(self, "initial_state", None)

    def __setattr__(self, name, value):
        if name == "initial_state":
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"habitat-sim 0.3 Agent: cannot set attribute {name!r}")

    def __getattr__(self, name):
        from .._strict import refuse

        if name in self._REAL_ATTRS:
            raise NotImplementedError(f"habitat-sim's Agent.{name} exists but the contract fake does not implement it")
        refuse(self, name)

    # -- actions -----------------------------------------------------------
    def act(self, action_id: Any) -> bool:
        assert action_id in self.agent_config.action_space, f"No action {action_id} in action space"
        action = self.agent_config.action_space[action_id]
        name, spec = action.name, action.actuation
        if name in _REAL_ONLY:
            raise NotImplementedError(f"habitat-sim's {name!r} control exists but the contract fake does not implement it")
        assert name in _BODY_MOVES or name in _BODY_TURNS or name in _SENSOR_LOOKS, f"No move_fn for action '{name}'"
        if name in _BODY_MOVES:
            axis, sign = _BODY_MOVES[name]
            local = np.zeros(3)
            local[axis] = sign * float(spec.amount)
            start = self._position.astype(np.float64)
            end = start + quat_rotate_vector(self._rotation, local)
            filtered = np.asarray(self._sim.step_filter(start.astype(np.float32), end.astype(np.float32)), np.float64)
            object.__setattr__(self, "_position", filtered.astype(np.float32))
            before = float(np.sum((end - start) ** 2))
            after = float(np.sum((filtered - start) ** 2))
            return (after + EPS) < before
        if name in _BODY_TURNS:
            turn = _axis_rotation(1, _BODY_TURNS[name] * float(spec.amount))
            object.__setattr__(self, "_rotation", _f32_quat(_normalized(self._rotation * turn)))
            return False
        for node in self._sensors.values():
            self._look(node, _SENSOR_LOOKS[name] * float(spec.amount), spec.constraint)
        return False

    @staticmethod
    def _look(node: _SensorNode, theta: float, constraint: Optional[float]) -> None:
        """``default_controls._rotate_local`` about the sensor's local x axis."""
        if constraint is not None:
            q = node.rotation
            angle = 2 * math.acos(min(abs(q.w), 1.0))
            if angle > 0:
                axis = np.array([q.x, q.y, q.z]) / max(math.sin(angle / 2), 1e-12)
                if 1.0 - abs(axis[0]) > 1e-3:
                    raise RuntimeError("Constrained look only works for a singular look action type")
            look = quat_rotate_vector(q, np.array([0.0, 0.0, -1.0]))
            look_angle = math.degrees(math.atan2(look[1], -look[2]))
            new_angle = look_angle + theta
            if new_angle > constraint:
                theta = constraint - look_angle
            elif new_angle < -constraint:
                theta = -constraint - look_angle
        node.rotation = _f32_quat(_normalized(node.rotation * _axis_rotation(0, theta)))

    # -- state ---------------------------------------------------------------
    def get_state(self) -> AgentState:
        state = AgentState(np.array(self._position, dtype=np.float32), self._rotation)
        for uuid, node in self._sensors.items():
            pos = self._position.astype(np.float64) + quat_rotate_vector(self._rotation, node.position.astype(np.float64))
            state.sensor_states[uuid] = SixDOFPose(pos.astype(np.float32), _f32_quat(self._rotation * node.rotation))
        return state

    @property
    def state(self) -> AgentState:
        return self.get_state()

    def set_state(self, state: AgentState, reset_sensors: bool = True, infer_sensor_states: bool = True,
                  is_initial: bool = False) -> None:
        if not isinstance(state, AgentState):
            raise TypeError(f"set_state(state): expected habitat_sim.AgentState, got {type(state).__name__}")
        attr.validate(state)
        if not infer_sensor_states:
            raise NotImplementedError("set_state(infer_sensor_states=False) is not implemented by the contract fake")
        if not isinstance(state.rotation, qt.quaternion):
            state.rotation = quat_from_coeffs(state.rotation)
        position = np.asarray(state.position, dtype=np.float64).reshape(-1)
        if position.shape != (3,):
            raise TypeError(f"set_state: position must have three components, got {state.position!r}")
        object.__setattr__(self, "_position", position.astype(np.float32))
        object.__setattr__(self, "_rotation", _f32_quat(state.rotation))
        if reset_sensors:
            for node in self._sensors.values():
                node.reset()
        if is_initial:
            object.__setattr__(self, "initial_state", state)

    def _sensor_pose(self, uuid: str):
        s = self.get_state().sensor_states[uuid]
        return np.asarray(s.position, np.float64), qt.as_rotation_matrix(s.rotation)

    def close(self) -> None:
        object.__setattr__(self, "_sensors", {})
