"""What the learned policy sees: proprioception, a low-dimensional object state, and the split prompt.

``observation/environment_state`` (LeRobot's ``observation.environment_state``) holds four object
slots, each ``[present, x, y, z, hx, hy, hz, r, g, b]`` (position in the world frame, box half
extents, colour): two candidates in layout order, the obstacle, the receptacle. In simulation it is
filled from the simulator's object poses plus the objects' known size and colour (privileged
low-dimensional state, as in robomimic's low-dim tasks); on a robot it would come from a pose
estimator. It never carries the plan, the target choice or the preference.

The prompt is split at ``Preference:`` into a task sentence and a preference sentence, each embedded
separately (a sentence embedding of the whole prompt is dominated by the task; see docs).
"""
from __future__ import annotations

import re

import numpy as np

from personal.manipulation.layout import Layout
from personal.manipulation.policies.base import ObservationError

ENV_KEY = "observation/environment_state"
SLOT_FIELDS = ("present", "x", "y", "z", "hx", "hy", "hz", "r", "g", "b")
SLOTS = ("candidate_0", "candidate_1", "obstacle", "receptacle")
SLOT_DIM = len(SLOT_FIELDS)
ENV_DIM = SLOT_DIM * len(SLOTS)
ENV_NAMES = [f"{slot}.{f}" for slot in SLOTS for f in SLOT_FIELDS]
STATE_NAMES = ["eef_x", "eef_y", "eef_z", "eef_ax", "eef_ay", "eef_az", "gripper_q0", "gripper_q1"]


def slot_objects(layout: Layout) -> list:
    """The layout's objects in slot order (None where a slot is empty)."""
    cands = layout.candidates[:2]
    return [cands[0] if cands else None, cands[1] if len(cands) > 1 else None, layout.obstacle,
            layout.get(layout.target)]


def environment_state(layout: Layout, positions: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The object-state vector (ENV_DIM float32) for ``layout`` with live ``positions`` (default: as laid out)."""
    out = np.zeros((len(SLOTS), SLOT_DIM), np.float32)
    for i, spec in enumerate(slot_objects(layout)):
        if spec is None:
            continue
        pos = positions.get(spec.name, spec.pos) if positions else spec.pos
        out[i] = [1.0, *np.asarray(pos, float)[:3], *spec.half_size, *spec.rgba[:3]]
    return out.reshape(-1)


def check_environment_state(obs: dict) -> np.ndarray:
    if ENV_KEY not in obs:
        raise ObservationError(f"missing key {ENV_KEY!r}: the learned policy needs the object state "
                               f"({len(SLOTS)} slots of {SLOT_FIELDS})")
    env = np.asarray(obs[ENV_KEY])
    if env.shape != (ENV_DIM,) or not np.issubdtype(env.dtype, np.number):
        raise ObservationError(f"{ENV_KEY!r} must be {ENV_DIM} numbers, got shape {env.shape} {env.dtype}")
    if not np.all(np.isfinite(env)):
        raise ObservationError(f"{ENV_KEY!r} has non-finite values")
    return env.astype(np.float32)


# -- network input ----------------------------------------------------------------------------

def input_features(state: np.ndarray, env: np.ndarray) -> np.ndarray:
    """(..., 8) state + (..., ENV_DIM) object state -> (..., FEATURE_DIM) network input (before normalising).

    Adds the yaw as sin/cos (the axis-angle of a downward gripper flips sign near pi) and each object's
    offset from the end effector, which makes reaching and carrying translation-invariant."""
    state = np.asarray(state, np.float32)
    env = np.asarray(env, np.float32).reshape(*state.shape[:-1], len(SLOTS), SLOT_DIM)
    eef = state[..., :3]
    yaw = _yaw(state[..., 3:6])
    present = env[..., 0:1]
    rel = (env[..., 1:4] - eef[..., None, :]) * present
    slots = np.concatenate([env, rel], axis=-1).reshape(*state.shape[:-1], -1)
    return np.concatenate([eef, np.sin(yaw)[..., None], np.cos(yaw)[..., None], state[..., 6:8], slots],
                          axis=-1).astype(np.float32)


ROBOT_DIM = 3 + 2 + 2  # eef xyz, sin/cos yaw, gripper joints
OBJECT_DIM = SLOT_DIM + 3  # the slot, then its offset from the eef
FEATURE_DIM = ROBOT_DIM + len(SLOTS) * OBJECT_DIM


def swap_candidates(env: np.ndarray) -> np.ndarray:
    """Training augmentation: the two candidate slots exchanged (the policy must read colour and size,
    not the slot index)."""
    e = np.array(env, np.float32).reshape(*np.shape(env)[:-1], len(SLOTS), SLOT_DIM)
    e[..., [0, 1], :] = e[..., [1, 0], :]
    return e.reshape(np.shape(env))


def _yaw(aa: np.ndarray) -> np.ndarray:
    """Vectorised ``policies.base.axis_angle_to_yaw``: heading of the gripper x axis about world z."""
    aa = np.asarray(aa, np.float64)
    angle = np.linalg.norm(aa, axis=-1)
    k = aa / np.maximum(angle, 1e-9)[..., None]
    c, s = np.cos(angle), np.sin(angle)
    r00 = c + k[..., 0] ** 2 * (1 - c)
    r10 = k[..., 1] * k[..., 0] * (1 - c) + k[..., 2] * s
    return np.where(angle < 1e-9, 0.0, np.arctan2(r10, r00)).astype(np.float32)


# -- prompt ------------------------------------------------------------------------------------

_PREF = re.compile(r"(?is)\bpreference\s*:")


def split_prompt(prompt: str) -> tuple[str, str]:
    """``Task: X. Preference: Y.`` -> (``X``, ``Y``).

    Without a ``Preference:`` part, any text after the first sentence of the task (e.g. a ComprePref
    contextual rewrite) is taken as the preference; a bare ``Task: X.`` gives ``""`` = no preference.
    A prompt without ``Task:`` is all task."""
    text = " ".join(str(prompt).split())
    m = _PREF.search(text)
    if m:
        task, pref = text[: m.start()], text[m.end():]
    else:
        t = re.match(r"(?is)\s*task\s*:\s*(.*?[.!?])(\s+.*)?$", text)
        task, pref = (t.group(1), t.group(2) or "") if t else (text, "")
    task = re.sub(r"(?i)^\s*task\s*:\s*", "", task).strip().rstrip(".").strip()
    return task, pref.strip().rstrip(".").strip()
