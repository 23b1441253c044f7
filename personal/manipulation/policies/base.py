"""The policy boundary and the observation format that crosses it (openpi's LIBERO format).

Observation keys: ``observation/image`` and ``observation/wrist_image`` (HxWx3 uint8),
``observation/state`` (8 floats: eef xyz, eef axis-angle, 2 gripper joints), ``prompt`` (str),
``observation/environment_state`` (object slots, ``learned.features``; read by the learned policy),
optionally ``oracle/layout`` (JSON of the episode layout) and ``oracle/objects`` (JSON of the live
object positions); only oracle policies read them.
Reply: ``{"actions": float array (H, 7)}``: a chunk of 7-D delta-EEF actions, gripper -1 open.
"""
from __future__ import annotations

import abc
import json

import numpy as np

from personal.manipulation.backends.base import IMAGE_SIZE

STATE_DIM = 8
MAX_PROMPT_CHARS = 10_000  # "Task: ... Preference: ..." is ~100; a megabyte prompt is an attack or a bug
IMAGE_KEYS = ("observation/image", "observation/wrist_image")


class ObservationError(ValueError):
    """A malformed observation; the message names the offending key."""


class Policy(abc.ABC):
    name = "abstract"

    @property
    def metadata(self) -> dict:
        return {"policy": self.name, "action_dim": 7, "control_hz": 20, "image_size": IMAGE_SIZE}

    @abc.abstractmethod
    def infer(self, obs: dict) -> dict: ...

    def reset(self) -> None:  # noqa: B027 - optional
        pass

    def close(self) -> None:  # noqa: B027 - optional
        pass


def validate_observation(obs, image_size: int | None = None) -> None:
    """Raise ObservationError naming the key if ``obs`` is not a well-formed policy observation.

    Images may be any H x W x 3 uint8 (openpi's LIBERO example sends 224 x 224, our suite
    renders 128 x 128); a policy that needs one size passes ``image_size``."""
    if not isinstance(obs, dict):
        raise ObservationError(f"observation must be a dict, got {type(obs).__name__}")
    for key in IMAGE_KEYS:
        if key not in obs:
            raise ObservationError(f"missing key {key!r} (have {sorted(obs)})")
        img = np.asarray(obs[key])
        if img.ndim != 3 or img.shape[2] != 3 or 0 in img.shape:
            raise ObservationError(f"{key!r} must be an H x W x 3 image, got shape {img.shape}")
        if image_size is not None and img.shape[:2] != (image_size, image_size):
            raise ObservationError(f"{key!r} must be {image_size} x {image_size}, got {img.shape[0]} x {img.shape[1]}")
        if img.dtype != np.uint8:
            raise ObservationError(f"{key!r} must be uint8, got {img.dtype}")
    if "observation/state" not in obs:
        raise ObservationError("missing key 'observation/state'")
    state = np.asarray(obs["observation/state"])
    if state.shape != (STATE_DIM,) or not np.issubdtype(state.dtype, np.number):
        raise ObservationError(f"'observation/state' must be {STATE_DIM} numbers, got shape {state.shape} {state.dtype}")
    if not np.all(np.isfinite(state)):
        raise ObservationError(f"'observation/state' has non-finite values: {state.tolist()}")
    if not isinstance(obs.get("prompt", ""), str):
        raise ObservationError(f"'prompt' must be a string, got {type(obs['prompt']).__name__}")
    if len(obs.get("prompt", "")) > MAX_PROMPT_CHARS:
        raise ObservationError(f"'prompt' has {len(obs['prompt'])} characters (limit {MAX_PROMPT_CHARS})")


def check_actions(actions) -> np.ndarray:
    a = np.asarray(actions, dtype=np.float64)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[1] != 7 or len(a) == 0:
        raise ValueError(f"policy returned actions of shape {a.shape}; expected (H, 7)")
    if not np.all(np.isfinite(a)):
        raise ValueError("policy returned non-finite actions")
    return a


def quat_to_axis_angle(q_xyzw) -> np.ndarray:
    """robosuite/openpi LIBERO example's conversion (xyzw quaternion -> axis * angle)."""
    q = np.asarray(q_xyzw, dtype=float)
    w = float(np.clip(q[3], -1.0, 1.0))
    den = np.sqrt(max(1.0 - w * w, 0.0))
    if den < 1e-9:
        return np.zeros(3)
    return q[:3] * 2.0 * np.arccos(w) / den


def axis_angle_to_yaw(aa) -> float:
    """Heading of the gripper x axis about world z, from an axis-angle orientation."""
    aa = np.asarray(aa, dtype=float)
    angle = float(np.linalg.norm(aa))
    if angle < 1e-9:
        return 0.0
    k = aa / angle
    c, s = np.cos(angle), np.sin(angle)
    r00 = c + k[0] * k[0] * (1 - c)
    r10 = k[1] * k[0] * (1 - c) + k[2] * s
    return float(np.arctan2(r10, r00))


def make_observation(env_obs: dict, prompt: str, layout=None, objects: dict | None = None,
                     environment_state: np.ndarray | None = None) -> dict:
    """Backend observation (LIBERO keys) -> policy observation (openpi LIBERO keys). ``layout`` and
    ``objects`` become the ``oracle/*`` keys (for oracle policies only); ``environment_state`` the
    object-state vector."""
    state = np.concatenate([
        np.asarray(env_obs["robot0_eef_pos"], float),
        quat_to_axis_angle(env_obs["robot0_eef_quat"]),
        np.asarray(env_obs["robot0_gripper_qpos"], float),
    ]).astype(np.float32)
    blank = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
    obs = {
        "observation/image": np.ascontiguousarray(env_obs.get("agentview_image", blank)),
        "observation/wrist_image": np.ascontiguousarray(env_obs.get("robot0_eye_in_hand_image", blank)),
        "observation/state": state,
        "prompt": prompt,
    }
    if environment_state is not None:
        obs["observation/environment_state"] = np.asarray(environment_state, np.float32)
    if layout is not None:
        obs["oracle/layout"] = json.dumps(layout.to_dict())
    if objects is not None:
        obs["oracle/objects"] = json.dumps({k: np.asarray(v, float).tolist() for k, v in objects.items()})
    return obs


def wants_oracle_inputs(policy: Policy) -> bool:
    """Whether to send ``oracle/*`` keys: only to policies that do not declare ``oracle: False`` (for a
    remote openpi policy, its server's metadata decides)."""
    meta = policy.metadata
    declared = meta.get("oracle", (meta.get("server") or {}).get("oracle"))
    return declared is not False
