"""A RealSense-like camera model between the renderer and everyone who reads its frames.

The renderer produces ideal frames: exact depth, perfect pose, a fixed 0.88 m / 79° camera.
:class:`SensorSpec` describes a camera (field of view, mounting height and pitch, frame rate)
and the imperfections of a real one; :class:`SensorModel` applies them to an
:class:`~personal.sim.backends.base.Observation`; :class:`SensorBackend` wraps any simulator
backend so that every frame it returns went through the model. ``ideal`` (the default) is no
model at all: :func:`make_sensor_backend` returns the plain backend, so ideal frames are
byte-identical to the renderer's.

Depth (Intel RealSense D435; sources in docs/simulator.md "Camera and sensor model"):

- RMS error growing with the square of range, Intel's formula (Grunnet-Jepsen, Sweetser,
  Woodfill, *Tuning depth cameras for best performance*, rev 2.0):
  ``RMS = Z² · subpixel / (f_px · B)`` with ``f_px = ½ Xres / tan(HFOV/2)`` of the depth imager
  (D435: 848 px wide, 87° HFOV, baseline B = 50 mm; subpixel ≈ 0.08 on textured surfaces).
  Stereo matching runs over a window, so the error is spatially correlated over
  ``noise_corr_px`` (renormalised: the per-pixel RMS stays the formula's).
- the IR shadow: background pixels the right imager cannot see past a nearer object (the
  "invalid depth band" left of near objects in the left-imager depth frame), computed from the
  rendered depth's own disparities — exact occlusion, not a guess;
- invalid pixels at depth edges (``edge_invalid``: probability per pixel next to a jump);
- missing returns on dark surfaces (low albedo: too little IR texture) and on specular
  highlights (saturated colour), each with its probability;
- minimum range (Min-Z) and 1 mm quantisation (the z16 stream's depth unit).

Colour: exposure gain and white-balance gains (drawn once per episode, jittered per frame),
Gaussian read noise, horizontal motion blur while the base turns (blur length = turn rate ×
exposure time × focal length in pixels). Pose: optional odometry drift of the camera pose
the frames are mapped with (the agent state used for scoring and planning stays true).

Every draw comes from one RNG seeded by (``seed``, episode key, frame index): the same run
gives the same frames.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from personal.sim.backends.base import Action, CameraSpec, Observation, SimBackend

# Intel RealSense D435 depth imager (datasheet, D400 series rev. 0.7+; tuning white paper rev 2.0)
D435_DEPTH_WIDTH_PX = 848  # the depth stream's optimal resolution
D435_DEPTH_HFOV_DEG = 87.0
D435_BASELINE_M = 0.050
D435_SUBPIXEL = 0.08  # typical subpixel RMS on a well-textured target
D435_MIN_Z_M = 0.28  # Min-Z at the highest depth resolution (lower at lower resolutions)
DEPTH_UNIT_M = 0.001  # z16: 1 mm per count


@dataclass(frozen=True)
class SensorSpec:
    """Camera geometry and imperfections. Numbers of 0 switch a component off."""

    name: str = "ideal"
    # geometry
    hfov_deg: float = 79.0
    height_m: float = 0.88
    pitch_deg: float = 0.0  # mounting pitch, positive = looking up
    fps: float = 30.0
    min_range_m: float = 0.5  # the renderer's near clip (ideal) / the sensor's Min-Z
    # depth
    subpixel: float = 0.0  # RMS disparity error, px (0 = exact depth)
    depth_focal_px: float = 0.5 * D435_DEPTH_WIDTH_PX / math.tan(math.radians(D435_DEPTH_HFOV_DEG / 2))
    baseline_m: float = D435_BASELINE_M
    noise_corr_px: float = 0.0  # spatial correlation (Gaussian sigma, px of the rendered image)
    ir_shadow: bool = False
    edge_invalid: float = 0.0  # probability that a pixel beside a depth jump is invalid
    edge_jump: float = 0.05  # a jump: neighbours differ by more than this fraction of the range
    dark_invalid: float = 0.0  # probability of no return where the surface is dark
    dark_level: float = 0.08  # luminance (0-1) below which a surface counts as dark
    specular_invalid: float = 0.0  # probability of no return on a saturated highlight
    quantise: bool = False  # 1 mm depth unit
    # colour
    rgb_noise: float = 0.0  # read noise, DN (of 255)
    exposure: float = 0.0  # episode gain drawn from [1 - e, 1 + e]
    white_balance: float = 0.0  # per-channel gains drawn from [1 - w, 1 + w]
    jitter: float = 0.0  # per-frame relative jitter of those gains
    exposure_ms: float = 0.0  # exposure time (motion blur while turning; 0 = no blur)
    turn_rate_dps: float = 60.0  # the base's rotation rate while turning, deg/s
    # pose
    odom_drift: float = 0.0  # translation error, fraction of the distance moved (1 sigma)
    odom_yaw_drift_deg: float = 0.0  # yaw error per turn action, deg (1 sigma)
    seed: int = 0

    @property
    def noisy(self) -> bool:
        """Any imperfection on (else the frames are the renderer's, untouched)."""
        geometry = ("name", "hfov_deg", "height_m", "pitch_deg", "fps", "min_range_m", "seed", "depth_focal_px",
                    "baseline_m", "edge_jump", "dark_level", "turn_rate_dps")
        return any(getattr(self, f.name) != getattr(IDEAL, f.name) for f in fields(self) if f.name not in geometry)

    def camera(self, width: int = 640, height: int = 480, max_depth: float = 5.0) -> CameraSpec:
        return CameraSpec(width=int(width), height=int(height), hfov_deg=self.hfov_deg, height_m=self.height_m,
                          min_depth=self.min_range_m, max_depth=max_depth, pitch_deg=self.pitch_deg)

    def depth_rms(self, z: np.ndarray | float) -> np.ndarray | float:
        """Intel's RMS depth error at range ``z`` (m): z² · subpixel / (f_px · B)."""
        return np.asarray(z, dtype=np.float64) ** 2 * self.subpixel / (self.depth_focal_px * self.baseline_m)

    def record(self) -> dict:
        """The spec as a report's run section shows it."""
        return asdict(self)

    def describe(self) -> str:
        d = self.record()
        try:
            base = _preset(self.name)
        except SensorSpecError:  # a spec built by hand: its changes are against the ideal camera
            base = IDEAL
        changed = {k: v for k, v in d.items() if k not in ("name",) and v != getattr(base, k)}
        geo = f"HFOV {self.hfov_deg:g}°, {self.height_m:g} m, pitch {self.pitch_deg:g}°, {self.fps:g} fps"
        if self.subpixel:
            geo += f"; depth RMS {1000 * float(self.depth_rms(1.0)):.1f} mm at 1 m, {1000 * float(self.depth_rms(3.0)):.0f} mm at 3 m"
        return f"{self.name} ({geo})" + (f"; overrides {changed}" if changed else "")


IDEAL = SensorSpec()
PRESETS: dict[str, SensorSpec] = {
    "ideal": IDEAL,
    # the D435's depth and colour imperfections on PersONAL's LoCoBot camera geometry (79°, 0.88 m),
    # so that the preset measures the sensor, not a new viewpoint; the D435 colour camera's own
    # HFOV is 69°: sensor_overrides:=hfov_deg=69
    "d435": replace(IDEAL, name="d435", min_range_m=D435_MIN_Z_M, subpixel=D435_SUBPIXEL, noise_corr_px=1.0,
                    ir_shadow=True, edge_invalid=0.5, dark_invalid=0.5, specular_invalid=0.5, quantise=True,
                    rgb_noise=3.0, exposure=0.15, white_balance=0.05, jitter=0.02, exposure_ms=10.0),
    # a worse day: poorly textured surfaces (subpixel 0.2), more holes, harsher exposure, drift
    "d435-harsh": replace(IDEAL, name="d435-harsh", min_range_m=D435_MIN_Z_M, subpixel=0.2, noise_corr_px=1.5,
                          ir_shadow=True, edge_invalid=0.9, dark_invalid=0.9, specular_invalid=0.9, quantise=True,
                          rgb_noise=6.0, exposure=0.4, white_balance=0.12, jitter=0.05, exposure_ms=25.0,
                          odom_drift=0.02, odom_yaw_drift_deg=1.0),
}

# override name -> (low, high): the valid range of each overridable field (personal/graphs
# declares the same ranges for its sensor_overrides argument; test_sensor_model keeps them equal)
OVERRIDE_RANGES: dict[str, tuple[float, float]] = {
    "hfov_deg": (20.0, 150.0), "height_m": (0.1, 2.5), "pitch_deg": (-60.0, 60.0), "fps": (1.0, 120.0),
    "min_range_m": (0.05, 3.0), "subpixel": (0.0, 2.0), "noise_corr_px": (0.0, 10.0), "edge_invalid": (0.0, 1.0),
    "dark_invalid": (0.0, 1.0), "specular_invalid": (0.0, 1.0), "rgb_noise": (0.0, 64.0), "exposure": (0.0, 0.9),
    "white_balance": (0.0, 0.5), "jitter": (0.0, 0.5), "exposure_ms": (0.0, 100.0), "turn_rate_dps": (1.0, 360.0),
    "odom_drift": (0.0, 0.5), "odom_yaw_drift_deg": (0.0, 20.0), "ir_shadow": (0.0, 1.0), "quantise": (0.0, 1.0),
}


# the preset fields each imperfection of the model is made of: ``d435[gains]`` is the ideal camera with
# only d435's gains (``d435[depth+rgb_noise]``: two of them), to measure which part of a preset costs
# an encoder; a preset's geometry (field of view, height, pitch, frame rate) is kept either way
COMPONENTS: dict[str, tuple[str, ...]] = {
    "depth": ("min_range_m", "subpixel", "depth_focal_px", "baseline_m", "noise_corr_px", "ir_shadow", "edge_invalid",
              "edge_jump", "dark_invalid", "dark_level", "specular_invalid", "quantise"),
    "gains": ("exposure", "white_balance", "jitter"),
    "rgb_noise": ("rgb_noise",),
    "blur": ("exposure_ms", "turn_rate_dps"),
    "odometry": ("odom_drift", "odom_yaw_drift_deg"),
}
GEOMETRY = ("hfov_deg", "height_m", "pitch_deg", "fps")


class SensorSpecError(ValueError):
    """A preset or override that does not exist or is out of range (names the argument)."""


def parse_overrides(text: str, argument: str = "sensor_overrides") -> dict[str, float]:
    """``"hfov_deg=69,height_m=1.25"`` -> {"hfov_deg": 69.0, "height_m": 1.25}, range-checked."""
    out: dict[str, float] = {}
    for item in (t.strip() for t in str(text or "").split(",")):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in OVERRIDE_RANGES:
            raise SensorSpecError(f"{argument}: {item!r} is not NAME=VALUE with NAME one of {', '.join(OVERRIDE_RANGES)}")
        try:
            value = float(raw)
        except ValueError:
            raise SensorSpecError(f"{argument}: {key}={raw!r} is not a number") from None
        low, high = OVERRIDE_RANGES[key]
        if not (math.isfinite(value) and low <= value <= high):
            raise SensorSpecError(f"{argument}: {key}={raw} out of range (valid: {low:g} .. {high:g})")
        out[key] = value
    return out


def sensor_spec(preset: str = "ideal", overrides: str | dict = "", seed: int = 0) -> SensorSpec:
    """The preset with ``overrides`` applied (text as :func:`parse_overrides`, or a dict).
    ``preset[component+...]`` keeps only those :data:`COMPONENTS` of the preset (and its geometry)."""
    spec = _preset(preset)  # the preset's name is checked first
    values = parse_overrides(overrides) if isinstance(overrides, str) else dict(overrides)
    typed = {}
    for k, v in values.items():
        kind = type(getattr(IDEAL, k))
        typed[k] = bool(v) if kind is bool else float(v)
    return replace(spec, seed=int(seed), **typed)


def _preset(name: str) -> SensorSpec:
    base, bracket, rest = name.partition("[")
    if base not in PRESETS:
        raise SensorSpecError(f"sensor: {name!r} unknown (presets: {', '.join(PRESETS)}, each optionally "
                              f"'[component+...]' with components {', '.join(COMPONENTS)})")
    if not bracket:
        return PRESETS[base]
    comps = rest[:-1].split("+") if rest.endswith("]") else []
    unknown = [c for c in comps if c not in COMPONENTS]
    if not comps or unknown or not all(comps):
        raise SensorSpecError(f"sensor: {name!r}: write {base}[component+...] with components {', '.join(COMPONENTS)}")
    keep = GEOMETRY + tuple(f for c in comps for f in COMPONENTS[c])
    return replace(IDEAL, name=name, **{f: getattr(PRESETS[base], f) for f in keep})


# -- the model ------------------------------------------------------------------------------------


def _gaussian_blur(a: np.ndarray, sigma: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(a, sigma, mode="reflect")


def correlated_noise(rng: np.random.Generator, shape: tuple[int, int], corr_px: float) -> np.ndarray:
    """Unit-variance Gaussian noise, smoothed over ``corr_px`` (0 = independent per pixel)."""
    n = rng.standard_normal(shape, dtype=np.float32)
    if corr_px <= 0:
        return n
    s = _gaussian_blur(n, corr_px)
    return s / max(float(s.std()), 1e-12)


def ir_shadow_mask(depth: np.ndarray, focal_px: float, baseline_m: float) -> np.ndarray:
    """Pixels of the (left-imager) depth frame that the right imager, ``baseline_m`` to the right,
    cannot see: a nearer surface to their right covers them there. Pixel u maps to
    ``u - f·B/Z`` in the right image; it is occluded when some u' > u maps at or left of it."""
    h, w = depth.shape
    valid = depth > 0
    disp = np.where(valid, focal_px * baseline_m / np.where(valid, depth, 1.0), 0.0)
    xr = np.arange(w, dtype=np.float64)[None, :] - disp
    xr = np.where(valid, xr, np.inf)  # holes occlude nothing
    right_min = np.minimum.accumulate(xr[:, ::-1], axis=1)[:, ::-1]  # min over u' >= u
    beyond = np.concatenate([right_min[:, 1:], np.full((h, 1), np.inf)], axis=1)  # min over u' > u
    return valid & (beyond <= xr)


def depth_edges(depth: np.ndarray, jump: float) -> np.ndarray:
    """Pixels with a 4-neighbour whose range differs by more than ``jump`` × range (or a hole)."""
    d = depth.astype(np.float32)
    edge = np.zeros(d.shape, bool)
    for axis in (0, 1):
        a, b = np.take(d, range(0, d.shape[axis] - 1), axis), np.take(d, range(1, d.shape[axis]), axis)
        big = np.abs(a - b) > jump * np.maximum(np.minimum(a, b), 1e-6)
        big |= (a > 0) != (b > 0)
        pad = [(0, 0), (0, 0)]
        pad[axis] = (0, 1)
        e1 = np.pad(big, pad)
        pad[axis] = (1, 0)
        e2 = np.pad(big, pad)
        edge |= e1 | e2
    return edge & (depth > 0)


def motion_blur(rgb: np.ndarray, length_px: float) -> np.ndarray:
    """Horizontal box blur of ``length_px`` (the image smear of a yaw rotation during exposure)."""
    k = int(round(length_px))
    if k < 2:
        return rgb
    pad = np.pad(rgb.astype(np.float32), ((0, 0), (k // 2, k - 1 - k // 2), (0, 0)), mode="edge")
    c = np.cumsum(pad, axis=1, dtype=np.float64)
    c = np.concatenate([np.zeros_like(c[:, :1]), c], axis=1)
    out = (c[:, k:] - c[:, :-k]) / k
    return out[:, : rgb.shape[1]].astype(np.float32)


def gains_and_noise(images: np.ndarray, gains: np.ndarray, rgb_noise: float, rng: np.random.Generator) -> np.ndarray:
    """(N, H, W, 3) uint8: each float image times its (N, 3) channel gains, plus Gaussian read noise
    of ``rgb_noise`` DN, rounded and clipped as the sensor's 8-bit output."""
    img = np.asarray(images, np.float32)
    img = img.reshape((-1,) + img.shape[-3:]) * np.asarray(gains)[:, None, None, :]  # float64 gains, as ever
    if rgb_noise:
        img = img + np.float32(rgb_noise) * rng.standard_normal(img.shape, dtype=np.float32)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def colour_gains(spec: "SensorSpec", rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) channel gains as ``n`` independent episodes of ``spec`` would see them (exposure and
    white balance drawn per episode, jitter per frame): for training crops, one episode each."""
    gain = 1.0 + rng.uniform(-spec.exposure, spec.exposure, (n, 1)) if spec.exposure else np.ones((n, 1))
    wb = 1.0 + rng.uniform(-spec.white_balance, spec.white_balance, (n, 3)) if spec.white_balance else np.ones((n, 3))
    jitter = 1.0 + spec.jitter * rng.standard_normal((n, 3)) if spec.jitter else 1.0
    return gain * wb * jitter


class SensorModel:
    """Applies a :class:`SensorSpec` to observations, reproducibly."""

    def __init__(self, spec: SensorSpec) -> None:
        self.spec = spec
        self.reset("")

    def reset(self, key: str) -> None:
        """A new episode (``key``: its id): RNG, episode gains and odometry drift restart."""
        self._key = zlib.crc32(str(key).encode())
        self._frame = 0
        rng = np.random.default_rng([self.spec.seed, self._key, 2**31 - 1])
        s = self.spec
        self.gain = 1.0 + rng.uniform(-s.exposure, s.exposure) if s.exposure else 1.0
        self.wb = 1.0 + rng.uniform(-s.white_balance, s.white_balance, 3) if s.white_balance else np.ones(3)
        self.drift = np.zeros(3)  # reported - true pose (x, y, yaw) in the map frame, accumulated
        self._last_true: tuple[float, float, float] | None = None

    def _rng(self) -> np.random.Generator:
        rng = np.random.default_rng([self.spec.seed, self._key, self._frame])
        self._frame += 1
        return rng

    def frame(self, rgb: np.ndarray, depth: np.ndarray, K: np.ndarray, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(rgb, depth) of one still frame as the sensor reports it, as the first frame of episode
        ``key`` (its own exposure and white balance): for datasets of single views."""
        self.reset(key)
        rng = self._rng()
        noisy_depth = self.depth(depth, rgb, K, rng)  # the order of apply(): depth draws, then colour
        return self.colour(rgb, K, rng, False), noisy_depth

    def apply(self, obs: Observation, action: Action | None = None) -> Observation:
        """The observation as the modelled sensor reports it (``action``: the step's action, for blur
        and odometry). The ground truth stays in ``extras`` (``ideal_depth``) for evaluation."""
        rng = self._rng()
        s = self.spec
        turning = action in (Action.TURN_LEFT, Action.TURN_RIGHT)
        rgb_in = obs.rgb
        obs.extras["ideal_depth"] = obs.depth
        obs.depth = self.depth(obs.depth, rgb_in, obs.K, rng)
        obs.rgb = self.colour(rgb_in, obs.K, rng, turning)
        if s.odom_drift or s.odom_yaw_drift_deg:
            obs.extras["true_T_map_camera"] = obs.T_map_camera
            obs.T_map_camera = self.drifted(obs, rng)
        obs.extras["sensor"] = s.name
        return obs

    def depth(self, depth: np.ndarray, rgb: np.ndarray, K: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        s = self.spec
        z = depth.astype(np.float32)
        valid = z > 0
        invalid = ~valid
        if s.ir_shadow:
            invalid |= ir_shadow_mask(z, float(K[0, 0]), s.baseline_m)
        if s.edge_invalid:
            invalid |= depth_edges(z, s.edge_jump) & (rng.random(z.shape, dtype=np.float32) < s.edge_invalid)
        if s.dark_invalid or s.specular_invalid:
            lum = (rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)) / 255.0
            if s.dark_invalid:
                invalid |= (lum < s.dark_level) & (rng.random(z.shape, dtype=np.float32) < s.dark_invalid)
            if s.specular_invalid:
                invalid |= (rgb.min(axis=2) >= 250) & (rng.random(z.shape, dtype=np.float32) < s.specular_invalid)
        if s.subpixel:
            z = z + self.spec.depth_rms(z).astype(np.float32) * correlated_noise(rng, z.shape, s.noise_corr_px)
        invalid |= z < s.min_range_m
        if s.quantise:
            z = np.round(z / np.float32(DEPTH_UNIT_M)) * np.float32(DEPTH_UNIT_M)
        return np.where(invalid, 0.0, z).astype(np.float32)

    def colour(self, rgb: np.ndarray, K: np.ndarray, rng: np.random.Generator, turning: bool) -> np.ndarray:
        s = self.spec
        if not (s.rgb_noise or s.exposure or s.white_balance or (turning and s.exposure_ms)):
            return rgb
        img = rgb.astype(np.float32)
        if turning and s.exposure_ms:
            exposure_s = min(s.exposure_ms / 1000.0, 1.0 / s.fps)
            img = motion_blur(img, math.radians(s.turn_rate_dps) * exposure_s * float(K[0, 0]))
        gains = self.gain * self.wb * (1.0 + s.jitter * rng.standard_normal(3) if s.jitter else 1.0)
        return gains_and_noise(img, gains[None, :], s.rgb_noise, rng)[0]

    def drifted(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The camera pose integrated from noisy odometry increments (planar drift)."""
        s = self.spec
        st = obs.state
        if self._last_true is not None:
            x0, y0, yaw0 = self._last_true
            moved = math.hypot(st.x - x0, st.y - y0)
            turned = (st.yaw - yaw0 + math.pi) % (2 * math.pi) - math.pi
            e_t = s.odom_drift * moved * rng.standard_normal(2)
            e_yaw = math.radians(s.odom_yaw_drift_deg) * rng.standard_normal() if abs(turned) > 1e-6 else 0.0
            # a yaw error swings the later path about the current position
            c, sn = math.cos(self.drift[2]), math.sin(self.drift[2])
            step = np.array([st.x - x0, st.y - y0])
            rotated = np.array([c * step[0] - sn * step[1], sn * step[0] + c * step[1]])
            self.drift[:2] += rotated - step + e_t
            self.drift[2] += e_yaw
        self._last_true = (st.x, st.y, st.yaw)
        dx, dy, dyaw = self.drift
        c, sn = math.cos(dyaw), math.sin(dyaw)
        # rotate about the agent, then shift: T_err maps the true map frame to the reported one
        T_err = np.eye(4)
        T_err[:2, :2] = [[c, -sn], [sn, c]]
        T_err[:2, 3] = np.array([st.x, st.y]) - T_err[:2, :2] @ np.array([st.x, st.y]) + np.array([dx, dy])
        return T_err @ np.asarray(obs.T_map_camera, dtype=float)


class SensorBackend(SimBackend):
    """Any backend, with its frames through a :class:`SensorModel`; everything else delegated."""

    def __init__(self, inner: SimBackend, spec: SensorSpec) -> None:
        self.inner = inner
        self.model = SensorModel(spec)
        self.camera = inner.camera

    def __getattr__(self, name):  # snap_to_navigable, goal_distance, scene, mesh ... of the inner backend
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def load_scene(self, scene) -> None:
        self.inner.load_scene(scene)

    def reset(self, episode=None, state=None) -> Observation:
        obs = self.inner.reset(episode, state)
        self.model.reset(getattr(episode, "episode_id", "") or f"{getattr(state, 'x', 0)}:{getattr(state, 'y', 0)}")
        return self.model.apply(obs)

    def step(self, action) -> Observation:
        return self.model.apply(self.inner.step(action), Action(action))

    def render(self) -> Observation:
        return self.model.apply(self.inner.render())

    @property
    def state(self):
        return self.inner.state

    def geodesic_distance(self, start, goals, floor: int = 0) -> float:
        return self.inner.geodesic_distance(start, goals, floor)

    def shortest_path(self, start, goal, floor: int = 0):
        return self.inner.shortest_path(start, goal, floor)

    def is_navigable(self, x: float, y: float, floor: int = 0) -> bool:
        return self.inner.is_navigable(x, y, floor)


def make_sensor_backend(name: str, spec: SensorSpec | None = None, width: int = 640, height: int = 480, **kw) -> SimBackend:
    """``make_backend(name)`` with ``spec``'s camera; wrapped in the sensor model unless ideal
    (an ideal spec returns the plain backend with today's CameraSpec: byte-identical frames)."""
    from personal.sim.backends import make_backend

    spec = spec or IDEAL
    backend = make_backend(name, camera=spec.camera(width, height), **kw)
    return SensorBackend(backend, spec) if spec.noisy else backend
