"""RobosuiteTabletop: the evaluation simulator, a robosuite 1.5.2 / MuJoCo Panda tabletop.

One robosuite environment per mission (object identities and sizes are fixed per mission); each
reset moves the objects to the episode's seeded layout. Blocks and the vase are free bodies
(the vase can be knocked over); the bin and the mat are fixed. Cameras are rendered on demand
(``render=True``) because offscreen EGL rendering on the CPU costs ~50 ms per 128x128 image,
five times a physics step.
"""
from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

import logging  # noqa: E402

import numpy as np  # noqa: E402

from personal.manipulation.backends.base import (  # noqa: E402
    CAMERAS,
    IMAGE_SIZE,
    OracleState,
    TabletopBackend,
    check_action,
    yaw_from_quat_xyzw,
)
from personal.manipulation.layout import Layout, ObjectSpec  # noqa: E402

logging.getLogger("robosuite_logs").setLevel(logging.ERROR)


def _env_class():
    """Defined lazily: importing robosuite takes ~1 s and needs EGL."""
    from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
    from robosuite.models.arenas import TableArena
    from robosuite.models.objects import Bin, BoxObject, CylinderObject, HammerObject
    from robosuite.models.tasks import ManipulationTask
    from robosuite.utils.mjcf_utils import array_to_string

    class PrefTabletopEnv(ManipulationEnv):
        def __init__(self, specs: list[ObjectSpec], **kwargs):
            self.specs = specs
            self.table_offset = np.array((0, 0, 0.8))
            super().__init__(robots="Panda", gripper_types="default", base_types="default", **kwargs)

        def _load_model(self):
            super()._load_model()
            robot = self.robots[0]
            robot.robot_model.set_base_xpos(robot.robot_model.base_xpos_offset["table"](0.8))
            arena = TableArena(table_full_size=(0.8, 0.8, 0.05), table_friction=(1.0, 5e-3, 1e-4),
                               table_offset=self.table_offset)
            arena.set_origin([0, 0, 0])
            self.objs = {}
            for s in self.specs:
                self.objs[s.name] = _make_object(s, BoxObject, CylinderObject, Bin, HammerObject)
            self.model = ManipulationTask(mujoco_arena=arena, mujoco_robots=[robot.robot_model],
                                          mujoco_objects=list(self.objs.values()))
            for s in self.specs:  # fixed bodies: initial pose in the xml, moved per episode at reset
                if s.shape in ("bin", "mat"):
                    body = self.model.worldbody.find(f"./body[@name='{self.objs[s.name].root_body}']")
                    body.set("pos", array_to_string(np.array(s.pos) - np.array([0, 0, s.half_size[2] if s.shape == "bin" else 0])))

        def _setup_references(self):
            super()._setup_references()
            self.body_ids = {n: self.sim.model.body_name2id(o.root_body) for n, o in self.objs.items()}

        def _reset_internal(self):
            super()._reset_internal()
            self.place(self.specs)

        def place(self, specs: list[ObjectSpec]):
            self.specs = specs
            for s in specs:
                obj = self.objs[s.name]
                quat_wxyz = np.array([np.cos(s.yaw / 2), 0, 0, np.sin(s.yaw / 2)])
                if s.shape == "hammer":  # on its side, handle (local z) along world -x, head at +x
                    yaw = np.array([np.cos((s.yaw - np.pi / 2) / 2), 0, 0, np.sin((s.yaw - np.pi / 2) / 2)])
                    quat_wxyz = _quat_mul(yaw, np.array([np.cos(-np.pi / 4), np.sin(-np.pi / 4), 0, 0]))
                if obj.joints:
                    self.sim.data.set_joint_qpos(obj.joints[0], np.concatenate([np.array(s.pos), quat_wxyz]))
                else:
                    base = np.array(s.pos) - np.array([0, 0, s.half_size[2] if s.shape == "bin" else 0])
                    self.sim.model.body_pos[self.body_ids[s.name]] = base
            self.sim.forward()

        def reward(self, action=None):
            return 0.0

        def _check_success(self):
            return False

    return PrefTabletopEnv


def _make_object(s: ObjectSpec, BoxObject, CylinderObject, Bin, HammerObject):
    if s.shape == "box":
        return BoxObject(name=s.name, size=list(s.half_size), rgba=list(s.rgba), density=300, friction=[1.5, 0.005, 0.0001])
    if s.shape == "cylinder":
        return CylinderObject(name=s.name, size=[s.half_size[0], s.half_size[2]], rgba=list(s.rgba), density=300)
    if s.shape == "bin":
        return Bin(name=s.name, bin_size=(2 * s.half_size[0], 2 * s.half_size[1], 2 * s.half_size[2]),
                   transparent_walls=False, use_texture=False, rgba=s.rgba)
    if s.shape == "mat":
        return BoxObject(name=s.name, size=list(s.half_size), rgba=list(s.rgba), joints=None, friction=[1.0, 0.005, 0.0001])
    if s.shape == "hammer":  # fixed dimensions: 16 cm box handle (3 cm thick), 7 cm head
        return HammerObject(name=s.name, handle_shape="box", handle_radius=(0.015, 0.015), handle_length=(0.16, 0.16),
                            handle_density=(150, 150), handle_friction=(4.0, 4.0), head_density_ratio=1.0,
                            use_texture=False, rgba_handle=s.rgba, rng=np.random.default_rng(0))
    raise ValueError(f"robosuite backend cannot build shape {s.shape!r} ({s.name})")


def _quat_mul(a, b):
    """Hamilton product of wxyz quaternions."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


class RobosuiteTabletop(TabletopBackend):
    name = "robosuite"

    def __init__(self, **_ignored) -> None:
        self.env = None
        self.mission = None
        self.layout: Layout | None = None

    def _ensure_env(self, layout: Layout) -> None:
        if self.env is not None and self.mission == layout.mission:
            return
        self.close()
        cls = _env_class()
        self.env = cls(list(layout.objects), has_renderer=False, has_offscreen_renderer=True, use_camera_obs=False,
                       control_freq=20, horizon=10_000, ignore_done=True, hard_reset=False,
                       initialization_noise=None, camera_names=list(CAMERAS))
        self.mission = layout.mission

    def reset(self, layout: Layout, render: bool = True) -> dict:
        self._ensure_env(layout)
        self.layout = layout
        self.env.specs = list(layout.objects)
        self.env.reset()
        self._grip = -1.0
        return self._obs(render)

    def step(self, action, render: bool = True) -> dict:
        if self.env is None:
            raise RuntimeError("RobosuiteTabletop.step before reset")
        a = check_action(action)
        self._grip = 1.0 if a[6] > 0 else -1.0
        self.env.step(a)
        return self._obs(render)

    def _eef(self):
        robot = self.env.robots[0]
        site = robot.eef_site_id["right"]
        pos = np.array(self.env.sim.data.site_xpos[site])
        from robosuite.utils.transform_utils import mat2quat

        quat = mat2quat(np.array(self.env.sim.data.site_xmat[site]).reshape(3, 3))  # xyzw
        return pos, quat

    def _obs(self, render: bool) -> dict:
        pos, quat = self._eef()
        robot = self.env.robots[0]
        qpos = np.array(self.env.sim.data.qpos[robot._ref_gripper_joint_pos_indexes["right"]])
        obs = {"robot0_eef_pos": pos, "robot0_eef_quat": quat, "robot0_gripper_qpos": qpos}
        if render:
            for cam in CAMERAS:
                img = self.env.sim.render(camera_name=cam, width=IMAGE_SIZE, height=IMAGE_SIZE)
                obs[f"{cam}_image"] = np.ascontiguousarray(img[::-1, ::-1])  # LIBERO/openpi orientation
        return obs

    def _held(self) -> str:
        """Both finger pads touch the object AND it sits between the fingers (closed fingers pushing a
        block from behind touch it with both pads too, but that is not a grasp)."""
        gripper = self.env.robots[0].gripper["right"]
        eef, _ = self._eef()
        for s in self.layout.candidates:
            centre = np.array(self.env.sim.data.body_xpos[self.env.body_ids[s.name]])
            between = np.linalg.norm(centre - eef) < 0.6 * max(s.half_size) + 0.01
            if between and self.env._check_grasp(gripper=gripper, object_geoms=self.env.objs[s.name]):
                return s.name
        return ""

    def oracle_state(self) -> OracleState:
        pos, quat = self._eef()
        objects = {n: np.array(self.env.sim.data.body_xpos[i]) for n, i in self.env.body_ids.items()}
        return OracleState(pos, yaw_from_quat_xyzw(quat), self._grip, self._held(), objects)

    def success(self) -> bool:
        rec = self.layout.get(self.layout.target)
        held = self._held()
        for s in self.layout.candidates:
            p = np.array(self.env.sim.data.body_xpos[self.env.body_ids[s.name]])
            v = np.array(self.env.sim.data.cvel[self.env.body_ids[s.name]][3:])
            if s.name != held and rec.contains(p) and np.linalg.norm(v) < 0.05:
                return True
        return False

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
