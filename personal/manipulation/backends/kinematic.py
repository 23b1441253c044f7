"""KinematicStandIn: a cheap, physics-free tabletop for tests and quick checks. NOT the evaluation simulator.

The end effector follows the commanded delta with a first-order lag (like an operational-space
controller would), closing the gripper near a candidate attaches it, opening drops it onto
whatever is below (table, mat, bin floor), and a closed gripper moving low through a block
pushes it. Images are flat top-down renderings of the object footprints, enough to exercise
the observation plumbing, not to train on.
"""
from __future__ import annotations

import numpy as np

from personal.manipulation.backends.base import (
    IMAGE_SIZE,
    OracleState,
    TabletopBackend,
    check_action,
    quat_xyzw_from_yaw_down,
)
from personal.manipulation.layout import Layout

POS_SCALE = 0.05  # m per step at |a| = 1 (robosuite OSC output_max)
ROT_SCALE = 0.5  # rad per step at |a| = 1
LAG = 0.6  # fraction of the commanded delta reached within one step
GRASP_XY, GRASP_Z = 0.025, 0.03


class KinematicStandIn(TabletopBackend):
    name = "kinematic"

    def __init__(self, **_ignored) -> None:
        self.layout: Layout | None = None

    def reset(self, layout: Layout, render: bool = True) -> dict:
        self.layout = layout
        self.eef = np.array(layout.eef_start, dtype=float)
        self.vel = np.zeros(3)
        self.yaw = 0.0
        self.grip = -1.0
        self.held = ""
        self.grasp_offset = np.zeros(3)
        self.objects = {o.name: np.array(o.pos, dtype=float) for o in layout.objects}
        self.specs = {o.name: o for o in layout.objects}
        return self._obs(render)

    def step(self, action, render: bool = True) -> dict:
        if self.layout is None:
            raise RuntimeError("KinematicStandIn.step before reset")
        a = check_action(action)
        self.vel = LAG * a[:3] * POS_SCALE + (1 - LAG) * self.vel
        prev = self.eef.copy()
        self.eef = self.eef + self.vel
        self.eef[2] = max(self.eef[2], self.layout.table_z + 0.005)
        self.yaw += a[5] * ROT_SCALE * LAG
        closing = a[6] > 0
        if closing and self.grip <= 0 and not self.held:
            self._try_grasp()
        if not closing and self.held:
            self._release()
        self.grip = 1.0 if closing else -1.0
        if self.held:
            self.objects[self.held] = self.eef + self.grasp_offset
        elif closing:
            self._push(self.eef - prev)
        return self._obs(render)

    # -- contact-free "physics" ---------------------------------------------------------

    def _movable(self):
        return [o for o in self.layout.objects if o.role == "candidate"]

    def _try_grasp(self) -> None:
        for o in self._movable():
            d = self.eef - self.objects[o.name]
            if np.linalg.norm(d[:2]) < max(GRASP_XY, 0.6 * max(o.half_size[:2])) and abs(d[2]) < GRASP_Z:
                self.held, self.grasp_offset = o.name, -d
                return

    def _release(self) -> None:
        name, self.held = self.held, ""
        p = self.objects[name]
        p[2] = self._support_z(p) + self.specs[name].half_size[2]

    def _support_z(self, p) -> float:
        z = self.layout.table_z
        for rec in self.layout.receptacles.values():
            hx, hy, _ = rec.half_size
            if abs(p[0] - rec.pos[0]) <= hx and abs(p[1] - rec.pos[1]) <= hy:
                z = self.layout.table_z + (0.01 if rec.shape == "bin" else 2 * rec.half_size[2])
        return z

    def _push(self, delta) -> None:
        for o in self._movable():
            p = self.objects[o.name]
            hx, hy, hz = o.half_size
            inside = abs(self.eef[0] - p[0]) < hx + 0.01 and abs(self.eef[1] - p[1]) < hy + 0.01
            if inside and self.eef[2] < p[2] + hz:
                p[:2] += delta[:2]
                p[2] = self._support_z(p) + hz

    # -- observation ----------------------------------------------------------------------

    def oracle_state(self) -> OracleState:
        return OracleState(self.eef.copy(), float(self.yaw), float(self.grip), self.held,
                           {k: v.copy() for k, v in self.objects.items()})

    def success(self) -> bool:
        rec = self.layout.get(self.layout.target)
        return any(rec.contains(self.objects[o.name]) and o.name != self.held for o in self._movable())

    def _obs(self, render: bool) -> dict:
        width = 0.04 if self.grip < 0 else 0.0
        obs = {
            "robot0_eef_pos": self.eef.copy(),
            "robot0_eef_quat": quat_xyzw_from_yaw_down(self.yaw),
            "robot0_gripper_qpos": np.array([width, -width]),
        }
        if render:
            top = self._top_down()
            obs["agentview_image"] = top
            obs["robot0_eye_in_hand_image"] = self._crop_around_eef(top)
        return obs

    def _px(self, x, y):
        s = IMAGE_SIZE / 0.8
        return int((y + 0.4) * s), int((x + 0.4) * s)

    def _top_down(self) -> np.ndarray:
        img = np.full((IMAGE_SIZE, IMAGE_SIZE, 3), 150, np.uint8)
        for o in sorted(self.layout.objects, key=lambda o: o.role != "receptacle"):
            p = self.objects[o.name]
            r0, c0 = self._px(p[0] - o.half_size[0], p[1] - o.half_size[1])
            r1, c1 = self._px(p[0] + o.half_size[0], p[1] + o.half_size[1])
            img[max(r0, 0) : max(r1, r0 + 1), max(c0, 0) : max(c1, c0 + 1)] = (np.array(o.rgba[:3]) * 255).astype(np.uint8)
        r, c = self._px(self.eef[0], self.eef[1])
        img[max(r - 2, 0) : r + 2, max(c - 2, 0) : c + 2] = 255
        return img

    def _crop_around_eef(self, top: np.ndarray) -> np.ndarray:
        r, c = self._px(self.eef[0], self.eef[1])
        r, c = int(np.clip(r, 0, IMAGE_SIZE)), int(np.clip(c, 0, IMAGE_SIZE))
        pad = np.pad(top, ((32, 32), (32, 32), (0, 0)), mode="edge")
        crop = pad[r : r + 64, c : c + 64]
        return np.repeat(np.repeat(crop, 2, axis=0), 2, axis=1)[:IMAGE_SIZE, :IMAGE_SIZE]
