"""Category shapes from primitives: a mug is a cylinder with a handle, a lamp a stem with a
shade, a backpack a padded bag with straps, a bookshelf an open frame full of books.

Every object is built in its *own* frame — origin at the centre of its box, x along its
width, y along its depth (front = +y), z up, sizes from the object's box — then turned by
its quarter turns and moved into place. Each triangle carries per-corner surface coordinates
(``uv``, metres along the surface: box faces use their two in-plane axes, cylinders arc
length and height, spheres longitude and latitude times the radius), so patterns and
material textures stay glued to the object whatever its pose.

A shape is a list of :class:`Piece`: geometry plus a *role* that says how it is coloured —
``body`` (the object's colour, pattern and material), ``part:<name>`` (a coloured part of the
catalog, e.g. ``part:handle``), or a fixed look (``dark`` screens and interiors, ``light``
pages and bulbs, ``metal`` fittings, ``leaf`` foliage, ``accent`` a darker shade of the body).
Categories without a recipe (and unknown ones) are boxes, as before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

# -- geometry -------------------------------------------------------------------------------


@dataclass
class Geom:
    verts: np.ndarray  # (n, 3) float
    tris: np.ndarray  # (m, 3) int
    uv: np.ndarray  # (m, 3, 2) float, surface coordinates in metres per triangle corner

    @staticmethod
    def concat(parts: list["Geom"]) -> "Geom":
        parts = [p for p in parts if len(p.tris)]
        if not parts:
            return Geom(np.zeros((0, 3)), np.zeros((0, 3), int), np.zeros((0, 3, 2)))
        off = np.cumsum([0] + [len(p.verts) for p in parts[:-1]])
        return Geom(np.concatenate([p.verts for p in parts]), np.concatenate([p.tris + o for p, o in zip(parts, off)]),
                    np.concatenate([p.uv for p in parts]))

    def moved(self, offset) -> "Geom":
        return Geom(self.verts + np.asarray(offset, float), self.tris, self.uv)

    def turned(self, quarter_turns: int) -> "Geom":
        """Rotated about z by ``quarter_turns`` x 90 degrees (counter-clockwise)."""
        v = self.verts.copy()
        for _ in range(quarter_turns % 4):
            v[:, 0], v[:, 1] = -v[:, 1].copy(), v[:, 0].copy()
        return Geom(v, self.tris, self.uv)


@dataclass
class Piece:
    geom: Geom
    role: str  # body | accent | dark | light | metal | leaf | part:<name>


def _grid_surface(points: np.ndarray, uvs: np.ndarray) -> Geom:
    """Triangles of an (R, C) grid of points with (R, C, 2) surface coordinates."""
    r, c = points.shape[:2]
    idx = np.arange(r * c).reshape(r, c)
    a, b, d, e = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel()
    tris = np.concatenate([np.stack([a, b, e], 1), np.stack([a, e, d], 1)])
    flat_uv = uvs.reshape(-1, 2)
    return Geom(points.reshape(-1, 3).astype(float), tris, flat_uv[tris])


def box(center, size, world_uv: bool = False) -> Geom:
    """An axis-aligned box; each face's uv is its two in-plane coordinates from the box corner
    (``world_uv``: from the frame's origin, so coplanar boxes continue one texture)."""
    c, s = np.asarray(center, float), np.abs(np.asarray(size, float))
    lo = c - s / 2
    o = lo if world_uv else np.zeros(3)
    geoms = []
    for axis in range(3):
        a, b = [i for i in range(3) if i != axis]
        for side in (0, 1):
            g = np.zeros((2, 2, 3))
            uv = np.zeros((2, 2, 2))
            for i in (0, 1):
                for j in (0, 1):
                    p = lo.copy()
                    p[axis] += side * s[axis]
                    p[a] += i * s[a]
                    p[b] += j * s[b]
                    g[i, j] = p
                    uv[i, j] = (o[a] + i * s[a], o[b] + j * s[b])
            face = _grid_surface(g, uv)
            if (axis == 1) == (side == 0):  # wind counter-clockwise seen from outside
                face = Geom(face.verts, face.tris[:, ::-1], face.uv[:, ::-1])
            geoms.append(face)
    return Geom.concat(geoms)


def lathe(center, profile, n: int = 16, sx: float = 1.0, sy: float = 1.0, axis: str = "z",
          a0: float = 0.0, a1: float = 2 * math.pi) -> Geom:
    """Surface of revolution of ``profile`` [(radius, height), ...] about ``axis`` through
    ``center`` (radii scaled by sx, sy across the axis: ellipses). uv = (arc length at the
    profile's mean radius, distance along the profile)."""
    prof = np.asarray(profile, float)
    ang = np.linspace(a0, a1, n + 1)
    r_mean = max(float(prof[:, 0].mean()), 1e-3)
    along = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(prof[:, 0]), np.diff(prof[:, 1])))])
    ca, sa = np.cos(ang)[None, :], np.sin(ang)[None, :]
    p1, p2, h = prof[:, 0:1] * ca * sx, prof[:, 0:1] * sa * sy, np.repeat(prof[:, 1:2], n + 1, 1)
    pts = {"z": np.stack([p1, p2, h], -1), "x": np.stack([h, p1, p2], -1), "y": np.stack([p1, h, p2], -1)}[axis]
    uv = np.stack([np.broadcast_to(ang[None, :] * r_mean, p1.shape), np.repeat(along[:, None], n + 1, 1)], -1)
    return _grid_surface(pts + np.asarray(center, float), uv)


def cylinder(center, radius, height, n: int = 16, sx: float = 1.0, sy: float = 1.0, axis: str = "z",
             top: bool = True, bottom: bool = True) -> Geom:
    h = height / 2
    prof = ([(0.0, -h)] if bottom else []) + [(radius, -h), (radius, h)] + ([(0.0, h)] if top else [])
    return lathe(center, prof, n, sx, sy, axis)


def frustum(center, r_bottom, r_top, height, n: int = 16, top: bool = True, bottom: bool = True) -> Geom:
    h = height / 2
    prof = ([(0.0, -h)] if bottom else []) + [(r_bottom, -h), (r_top, h)] + ([(0.0, h)] if top else [])
    return lathe(center, prof, n)


def ellipsoid(center, radii, n_lat: int = 8, n_lon: int = 14) -> Geom:
    rx, ry, rz = radii
    lat = np.linspace(-math.pi / 2, math.pi / 2, n_lat + 1)
    prof = [(math.cos(t), math.sin(t)) for t in lat]
    g = lathe((0, 0, 0), prof, n_lon)
    g.verts = g.verts * np.array([rx, ry, rz]) + np.asarray(center, float)
    g.uv = g.uv * np.array([0.5 * (rx + ry), rz])
    return g


def arc_tube(center, radius, thickness, a0: float, a1: float, plane: str = "xz", n: int = 10, sides: int = 6) -> Geom:
    """A tube of ``thickness`` bent along a circular arc (handles, headbands, hooks).
    ``plane`` is the arc's plane: "xz" (arc in x-z), "yz" or "xy"."""
    t = np.linspace(a0, a1, n + 1)
    s = np.linspace(0, 2 * math.pi, sides + 1)
    R, r = radius, thickness / 2
    ring = (R + r * np.cos(s))[None, :] * np.cos(t)[:, None], (R + r * np.cos(s))[None, :] * np.sin(t)[:, None]
    off = np.broadcast_to(r * np.sin(s)[None, :], ring[0].shape)
    a, b = ring
    pts = {"xz": np.stack([a, off, b], -1), "yz": np.stack([off, a, b], -1), "xy": np.stack([a, b, off], -1)}[plane]
    uv = np.stack([np.repeat((t * R)[:, None], sides + 1, 1), np.repeat((s * r)[None, :], n + 1, 0)], -1)
    return _grid_surface(pts + np.asarray(center, float), uv)


# -- recipes ----------------------------------------------------------------------------------
# A recipe gets the object's local size (w, d, h) and returns its pieces in the local frame.
Recipe = Callable[[float, float, float], list]


def _b(role, center, size) -> Piece:
    return Piece(box(center, size), role)


def _body_box(w, d, h):
    return [_b("body", (0, 0, 0), (w, d, h))]


def _fronts(w, d, h, rows: int, cols: int, role="accent", inset=0.03, z0=None, z1=None):
    """Door / drawer fronts on the +y face: thin panels separated by dark gaps."""
    z0 = -h / 2 + inset if z0 is None else z0
    z1 = h / 2 - inset if z1 is None else z1
    out = [_b("dark", (0, d / 2 + 0.002, (z0 + z1) / 2), (w - 2 * inset + 0.01, 0.004, z1 - z0 + 0.01))]
    cw, ch = (w - 2 * inset) / cols, (z1 - z0) / rows
    for i in range(cols):
        for j in range(rows):
            cx, cz = -w / 2 + inset + (i + 0.5) * cw, z0 + (j + 0.5) * ch
            out.append(_b(role, (cx, d / 2 + 0.008, cz), (cw - 0.012, 0.012, ch - 0.012)))
    return out


def _cabinet(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 1, 2, "body")


def _sideboard(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 1, 3, "body")


def _wardrobe(w, d, h):
    return [_b("body", (0, 0, 0.02), (w, d, h - 0.04)), _b("accent", (0, 0, -h / 2 + 0.02), (w - 0.04, d - 0.04, 0.04))] + \
        _fronts(w, d, h, 1, 2, "body", z0=-h / 2 + 0.06)


def _dresser(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 3, 1, "body")


def _nightstand(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 2, 1, "body")


def _fridge(w, d, h):
    return _body_box(w, d, h) + [_b("dark", (0, d / 2 + 0.003, h * 0.18), (w, 0.006, 0.012))]


def _oven(w, d, h):
    knobs = [Piece(cylinder((x, d / 2 + 0.012, h / 2 - 0.06), 0.022, 0.025, n=10, axis="y"), "dark") for x in (-0.18, -0.06, 0.06, 0.18)]
    return _body_box(w, d, h) + [_b("accent", (0, d / 2 + 0.003, h / 2 - 0.06), (w - 0.02, 0.006, 0.1))] + knobs


def _washer(w, d, h):
    return _body_box(w, d, h) + [_b("accent", (0, d / 2 + 0.003, h / 2 - 0.07), (w - 0.02, 0.006, 0.12))]


def _counter(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 1, max(2, int(w / 0.5)), "body", z1=h / 2 - 0.08)


def _bookshelf(w, d, h):
    t = 0.025
    out = [_b("body", (-w / 2 + t / 2, 0, 0), (t, d, h)), _b("body", (w / 2 - t / 2, 0, 0), (t, d, h)),
           _b("body", (0, -d / 2 + t / 2, 0), (w, t, h))]
    shelves = 5
    for i in range(shelves + 1):
        z = -h / 2 + t / 2 + i * (h - t) / shelves
        out.append(_b("body", (0, 0, z), (w, d, t)))
    colours = ("book_a", "book_b", "book_c", "book_d")
    rng = np.random.default_rng(int(w * 1000 + h * 100))
    for i in range(shelves):
        z0 = -h / 2 + t + i * (h - t) / shelves
        x = -w / 2 + t + 0.01
        k = 0
        while x < w / 2 - t - 0.05:
            bw = float(rng.uniform(0.025, 0.05))
            bh = float(rng.uniform(0.55, 0.85)) * ((h - t) / shelves - t)
            out.append(_b(colours[k % 4], (x + bw / 2, 0.02, z0 + bh / 2), (bw - 0.003, d * 0.7, bh)))
            x += bw
            k += int(rng.integers(1, 4))
    return out


def _sofa(w, d, h, arms: bool = True):
    seat_h = 0.45 * h
    arm_w = 0.14 * w if arms else 0.0
    out = [_b("body", (0, 0.05 * d, -h / 2 + seat_h / 2), (w - 2 * arm_w, 0.9 * d, seat_h)),
           _b("accent", (0, 0.08 * d, -h / 2 + seat_h + 0.04), (w - 2 * arm_w - 0.04, 0.8 * d, 0.08))]
    if arms:
        for sx in (-1, 1):
            out.append(_b("body", (sx * (w / 2 - arm_w / 2), 0, -h / 2 + 0.32 * h), (arm_w, d, 0.64 * h)))
    # the backrest, in the catalog part's colour
    out.append(_b("part:backrest", (0, -d / 2 + 0.12 * d, -h / 2 + 0.72 * h), (w - 2 * arm_w, 0.24 * d, 0.56 * h)))
    return out


def _armchair(w, d, h):
    return _sofa(w, d, h)


def _bed(w, d, h):
    return [_b("accent", (0, 0, -h / 4), (w, d, h / 2)), _b("body", (0, 0.02, h / 4), (w - 0.04, d - 0.06, h / 2))]


def _crib(w, d, h):
    out = [_b("light", (0, 0, -h / 2 + 0.25), (w - 0.06, d - 0.06, 0.12))]
    for sx in (-1, 1):
        out.append(_b("body", (sx * (w / 2 - 0.02), 0, 0), (0.04, d, h)))
    for sy in (-1, 1):
        out.append(_b("body", (0, sy * (d / 2 - 0.02), h / 2 - 0.03), (w, 0.04, 0.06)))
        out.append(_b("body", (0, sy * (d / 2 - 0.02), -h / 2 + 0.18), (w, 0.04, 0.06)))
        for x in np.linspace(-w / 2 + 0.08, w / 2 - 0.08, 9):
            out.append(_b("body", (x, sy * (d / 2 - 0.02), 0.02), (0.02, 0.02, h - 0.3)))
    for x in np.linspace(-w / 2 + 0.08, w / 2 - 0.08, 5):
        out.append(_b("body", (x, 0, -h / 2 + 0.09), (0.03, d - 0.05, 0.18)))
    return out


def _chair(w, d, h):
    seat_z = -h / 2 + 0.48 * h
    out = [_b("body", (0, 0, seat_z), (w, d, 0.05)), _b("body", (0, -d / 2 + 0.025, seat_z + 0.26 * h), (w, 0.04, 0.48 * h))]
    for sx in (-1, 1):
        for sy in (-1, 1):
            out.append(Piece(cylinder((sx * (w / 2 - 0.03), sy * (d / 2 - 0.03), (seat_z - h / 2) / 2), 0.018, seat_z + h / 2, n=8), "body"))
    return out


def _office_chair(w, d, h):
    seat_z = -h / 2 + 0.45 * h
    return [Piece(cylinder((0, 0, seat_z), w / 2 * 0.85, 0.08, n=16), "body"),
            _b("body", (0, -d / 2 + 0.06, seat_z + 0.3 * h), (0.8 * w, 0.06, 0.5 * h)),
            Piece(cylinder((0, 0, (seat_z - h / 2) / 2 + 0.02), 0.025, seat_z + h / 2 - 0.04, n=8), "metal")]


def _bathtub(w, d, h):
    t = 0.06
    out = [_b("body", (0, 0, -h / 2 + 0.05), (w, d, 0.1))]
    for sx in (-1, 1):
        out.append(_b("body", (sx * (w / 2 - t / 2), 0, 0), (t, d, h)))
    for sy in (-1, 1):
        out.append(_b("body", (0, sy * (d / 2 - t / 2), 0), (w - 2 * t, t, h)))
    out.append(_b("light", (0, 0, -h / 2 + 0.1 + 0.1), (w - 2 * t, d - 2 * t, 0.01)))  # water line
    return out


def _toilet(w, d, h):
    bowl = lathe((0, 0.1 * d, -h / 2), [(0.0, 0.0), (0.35 * w, 0.0), (0.5 * w, 0.55 * h), (0.42 * w, 0.6 * h), (0.0, 0.58 * h)],
                 n=16, sy=1.3)
    lid = cylinder((0, 0.1 * d, -h / 2 + 0.6 * h + 0.015), 0.48 * w, 0.03, n=16, sy=1.3)
    return [Piece(bowl, "body"), Piece(lid, "part:lid"), _b("body", (0, -d / 2 + 0.09, h / 2 - 0.25), (0.95 * w, 0.18, 0.5))]


def _sink(w, d, h):
    return _body_box(w, d, h * 0.9) + _fronts(w, d, h * 0.9, 1, 2, "body")


def _round(w, d, h):
    return [Piece(cylinder((0, 0, 0), min(w, d) / 2, h, n=20), "body")]


def _hamper(w, d, h):
    return [Piece(cylinder((0, 0, 0), min(w, d) / 2, h, n=16, sx=w / min(w, d), sy=d / min(w, d)), "body")]


def _floor_lamp(w, d, h):
    return [Piece(cylinder((0, 0, -h / 2 + 0.015), w / 2 * 0.8, 0.03, n=16), "metal"),
            Piece(cylinder((0, 0, -0.1), 0.015, h - 0.2, n=8), "body")]


def _tv_stand(w, d, h):
    return _body_box(w, d, h) + _fronts(w, d, h, 1, 2, "body")


def _toy_chest(w, d, h):
    return _body_box(w, d, h)


def _piano(w, d, h):
    return [_b("body", (0, -0.1 * d, 0), (w, 0.8 * d, h)), _b("body", (0, 0.3 * d, -0.1 * h), (w, 0.4 * d, 0.06))]


def _shoe_rack(w, d, h):
    out = [_b("body", (sx * (w / 2 - 0.015), 0, 0), (0.03, d, h)) for sx in (-1, 1)]
    for z in (-h / 2 + 0.05, 0.0, h / 2 - 0.02):
        for y in (-d / 4, d / 4):
            out.append(Piece(cylinder((0, y, z), 0.012, w - 0.03, n=6, axis="x"), "body"))
    return out


# small objects
def _mug(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0), (r, 0), (r, h), (0.88 * r, h), (0.88 * r, 0.1 * h)], n=18), "body"),
            Piece(cylinder((0, 0, -h / 2 + 0.1 * h + 0.002), 0.87 * r, 0.004, n=18), "dark")]


def _bottle(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0), (r, 0), (r, 0.62 * h), (0.55 * r, 0.8 * h), (0.45 * r, h), (0, h)], n=16), "body")]


def _cup(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0), (0.85 * r, 0), (r, h), (0.9 * r, h), (0.75 * r, 0.1 * h)], n=16), "body")]


def _vase(w, d, h):
    r = min(w, d) / 2
    prof = [(0, 0), (0.6 * r, 0), (r, 0.3 * h), (0.9 * r, 0.55 * h), (0.4 * r, 0.8 * h), (0.45 * r, 0.95 * h), (0.55 * r, h), (0.35 * r, h)]
    return [Piece(lathe((0, 0, -h / 2), prof, n=18), "body")]


def _bowl(w, d, h):
    r = min(w, d) / 2
    prof = [(0.0, 0.0), (0.5 * r, 0.0), (0.85 * r, 0.45 * h), (r, h), (0.92 * r, h), (0.78 * r, 0.5 * h), (0.45 * r, 0.12 * h), (0, 0.12 * h)]
    return [Piece(lathe((0, 0, -h / 2), prof, n=20), "body")]


def _kettle(w, d, h):
    r = min(w, d) / 2
    prof = [(0, 0), (0.9 * r, 0), (r, 0.35 * h), (0.8 * r, 0.7 * h), (0.4 * r, 0.78 * h), (0, 0.8 * h)]
    spout = Piece(cylinder((0.9 * r, 0, 0.05 * h), 0.15 * r, 0.5 * r, n=8, axis="x"), "body")
    return [Piece(lathe((0, 0, -h / 2), prof, n=16, sx=w / (2 * r), sy=d / (2 * r)), "body"), spout]


def _trash(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0), (0.85 * r, 0), (r, h), (0.95 * r, h), (0.8 * r, 0.05 * h)], n=16), "body")]


def _candle(w, d, h):
    r = min(w, d) / 2
    return [Piece(cylinder((0, 0, -0.05 * h), 0.7 * r, 0.8 * h, n=12), "body"),
            Piece(ellipsoid((0, 0, 0.42 * h), (0.12 * r, 0.12 * r, 0.1 * h), 4, 6), "light")]


def _ball(w, d, h):
    return [Piece(ellipsoid((0, 0, 0), (w / 2, d / 2, h / 2), 10, 16), "body")]


def _teddy(w, d, h):
    return [Piece(ellipsoid((0, 0, -0.2 * h), (0.45 * w, 0.42 * d, 0.3 * h), 8, 12), "body"),
            Piece(ellipsoid((0, 0.05 * d, 0.28 * h), (0.32 * w, 0.32 * d, 0.22 * h), 8, 12), "body"),
            Piece(ellipsoid((-0.22 * w, 0.05 * d, 0.46 * h), (0.1 * w, 0.06 * d, 0.07 * h), 4, 8), "body"),
            Piece(ellipsoid((0.22 * w, 0.05 * d, 0.46 * h), (0.1 * w, 0.06 * d, 0.07 * h), 4, 8), "body"),
            Piece(ellipsoid((0, 0.34 * d, 0.24 * h), (0.08 * w, 0.06 * d, 0.05 * h), 4, 8), "dark"),
            Piece(ellipsoid((-0.42 * w, 0.1 * d, -0.12 * h), (0.1 * w, 0.12 * d, 0.16 * h), 4, 8), "body"),
            Piece(ellipsoid((0.42 * w, 0.1 * d, -0.12 * h), (0.1 * w, 0.12 * d, 0.16 * h), 4, 8), "body")]


def _rabbit(w, d, h):
    return [Piece(ellipsoid((0, 0, -0.22 * h), (0.45 * w, 0.45 * d, 0.28 * h), 8, 12), "body"),
            Piece(ellipsoid((0, 0.05 * d, 0.15 * h), (0.3 * w, 0.3 * d, 0.18 * h), 8, 12), "body")]


def _doll(w, d, h):
    return [Piece(frustum((0, 0, -0.2 * h), 0.5 * min(w, d), 0.25 * min(w, d), 0.6 * h, n=12), "body"),
            Piece(ellipsoid((0, 0, 0.25 * h), (0.35 * w, 0.35 * d, 0.16 * h), 6, 10), "skin")]


def _pillow(w, d, h):
    return [Piece(ellipsoid((0, 0, 0), (w / 2, d / 2, h / 2), 6, 16), "body"),
            _b("body", (0, 0, 0), (0.86 * w, 0.6 * d, 0.7 * h))]


def _cushion(w, d, h):  # stands upright against the backrest: thin along y
    return [Piece(ellipsoid((0, 0, 0), (w / 2, d / 2, h / 2), 6, 16), "body"), _b("body", (0, 0, 0), (0.85 * w, 0.55 * d, 0.85 * h))]


def _folded(w, d, h):
    out = []
    n = 3
    for i in range(n):
        out.append(_b("body", (0, 0, -h / 2 + (i + 0.5) * h / n), (w - 0.01 * (i % 2), d - 0.01 * i, h / n - 0.004)))
    return out


def _backpack(w, d, h):
    return [Piece(ellipsoid((0, 0, -0.05 * h), (w / 2, d / 2 * 0.95, h / 2 * 0.9), 8, 14), "body"),
            _b("body", (0, 0, -0.1 * h), (0.92 * w, 0.8 * d, 0.75 * h)),
            _b("accent", (0, d / 2 - 0.01, -0.2 * h), (0.65 * w, 0.05, 0.35 * h)),
            Piece(arc_tube((0, -0.1 * d, h / 2 - 0.06), 0.04, 0.015, 0, math.pi, "xz", 6, 5), "body")]


def _handbag(w, d, h):
    out = []
    for sy in (-1, 1):  # a tapering bag: front/back panels, a narrower top, a wider base
        out.append(_b("body", (0, sy * (d / 2 - 0.01), -0.1 * h), (0.85 * w, 0.02, 0.8 * h)))
    out.append(_b("body", (0, 0, 0), (0.78 * w, d * 0.9, h)))
    out.append(_b("body", (0, 0, -0.3 * h), (w, d * 0.9, 0.4 * h)))
    return out


def _shoes(w, d, h):
    return [Piece(ellipsoid((sx * 0.25 * w, 0, -0.1 * h), (0.2 * w, 0.48 * d, 0.45 * h), 6, 12), "body") for sx in (-1, 1)] + \
        [_b("light", (sx * 0.25 * w, 0, -h / 2 + 0.012), (0.36 * w, 0.9 * d, 0.024)) for sx in (-1, 1)]


def _slippers(w, d, h):
    return [Piece(ellipsoid((sx * 0.25 * w, 0, -0.15 * h), (0.2 * w, 0.48 * d, 0.4 * h), 6, 12), "body") for sx in (-1, 1)]


def _suitcase(w, d, h):
    return [_b("body", (0, 0, 0.03), (w, d, h - 0.06)), _b("accent", (0, 0, 0.03), (w + 0.006, d + 0.006, 0.03))] + \
        [Piece(cylinder((sx * (w / 2 - 0.04), 0, -h / 2 + 0.03), 0.03, 0.03, n=8, axis="y"), "dark") for sx in (-1, 1)]


def _toy_car(w, d, h):
    return [_b("body", (0, 0, -0.1 * h), (w, 0.9 * d, 0.45 * h)), _b("body", (-0.05 * w, 0, 0.25 * h), (0.5 * w, 0.8 * d, 0.35 * h)),
            _b("dark", (0.2 * w + 0.002, 0, 0.25 * h), (0.005, 0.7 * d, 0.25 * h))]


def _guitar(w, d, h):
    return [Piece(cylinder((0, 0, -0.3 * h), 0.5 * w, d, n=18, axis="y"), "body"),
            Piece(cylinder((0, 0, -0.08 * h), 0.38 * w, d, n=16, axis="y"), "body"),
            Piece(cylinder((0, d / 2 + 0.002, -0.2 * h), 0.12 * w, 0.004, n=12, axis="y"), "dark")]


def _headphones(w, d, h):
    return [Piece(arc_tube((0, 0, -0.1 * h), 0.42 * w, 0.03, 0.05, math.pi - 0.05, "xz", 12, 6), "body")]


def _keyboard(w, d, h):
    return _body_box(w, d, h)


def _monitor(w, d, h):
    return [_b("body", (0, 0, 0.08 * h), (w, 0.2 * d, 0.84 * h)), _b("dark", (0, 0.1 * d + 0.003, 0.1 * h), (0.92 * w, 0.006, 0.74 * h))]


def _slab_with_screen(w, d, h):
    return _body_box(w, d, h) + [_b("dark", (0, 0, h / 2 + 0.001), (0.88 * w, 0.88 * d, 0.002))]


def _laptop(w, d, h):
    return _body_box(w, d, h) + [_b("dark", (0, 0.1 * d, h / 2 + 0.001), (0.85 * w, 0.45 * d, 0.002))]


def _book(w, d, h):
    return [_b("light", (0.02 * w, 0, 0), (0.94 * w, 0.96 * d, 0.86 * h)), _b("body", (0, 0, h / 2 - 0.06 * h), (w, d, 0.12 * h)),
            _b("body", (0, 0, -h / 2 + 0.06 * h), (w, d, 0.12 * h)), _b("body", (-w / 2 + 0.03 * w, 0, 0), (0.06 * w, d, h))]


def _table_lamp(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0), (0.45 * r, 0), (0.55 * r, 0.12 * h), (0.35 * r, 0.35 * h), (0.1 * r, 0.45 * h), (0, 0.45 * h)], n=14), "body"),
            Piece(cylinder((0, 0, 0.0), 0.04 * r + 0.006, 0.25 * h, n=6), "metal")]


def _plant(w, d, h):
    out = [Piece(ellipsoid((0, 0, 0.1 * h), (0.4 * w, 0.4 * d, 0.3 * h), 6, 10), "body")]
    for k in range(7):
        a = k * 2 * math.pi / 7
        out.append(Piece(ellipsoid((0.28 * w * math.cos(a), 0.28 * d * math.sin(a), 0.05 * h + 0.05 * h * (k % 2)),
                                   (0.2 * w, 0.2 * d, 0.08 * h), 4, 8), "body"))
    return out


def _toaster(w, d, h):
    return [_b("body", (0, 0, -0.1 * h), (w, d, 0.8 * h)), Piece(cylinder((0, 0, 0.3 * h), 0.2 * h, w, n=12, axis="x", sx=2.2 * d / h), "body"),
            _b("dark", (0, -0.18 * d, 0.45 * h + 0.01), (0.7 * w, 0.08 * d, 0.02)), _b("dark", (0, 0.18 * d, 0.45 * h + 0.01), (0.7 * w, 0.08 * d, 0.02))]


def _hair_dryer(w, d, h):
    return [Piece(cylinder((0, 0, 0.25 * h), 0.45 * d, 0.9 * w, n=12, axis="x"), "body"),
            _b("body", (-0.15 * w, 0, -0.2 * h), (0.22 * w, 0.6 * d, 0.6 * h))]


def _alarm_clock(w, d, h):
    r = min(w, h) / 2 * 0.8
    return [Piece(cylinder((0, 0, -0.05 * h), r, d, n=18, axis="y"), "body"),
            Piece(cylinder((0, d / 2 + 0.002, -0.05 * h), 0.8 * r, 0.004, n=18, axis="y"), "light")]


def _wall_clock(w, d, h):
    r = min(w, h) / 2
    return [Piece(cylinder((0, 0, 0), r, d, n=24, axis="y"), "body"),
            Piece(cylinder((0, d / 2 + 0.002, 0), 0.85 * r, 0.004, n=24, axis="y"), "light")]


def _picture(w, d, h):
    return [_b("body", (0, 0, 0), (w, d, h))]


def _umbrella(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, 0, -h / 2), [(0, 0.0), (0.02, 0.0), (r, 0.2 * h), (0.9 * r, 0.75 * h), (0.01, 0.95 * h), (0, 0.95 * h)], n=12), "body")]


def _jacket(w, d, h):
    return [_b("body", (0, 0, 0), (0.6 * w, d, h)), _b("body", (-0.35 * w, 0.1 * d, 0), (0.3 * w, 0.4 * d, 0.8 * h)),
            _b("body", (0.35 * w, 0.1 * d, 0), (0.3 * w, 0.4 * d, 0.8 * h)), _b("accent", (0, 0.4 * d, h / 2 - 0.003), (0.2 * w, 0.25 * d, 0.006))]


def _hat(w, d, h):
    r = min(w, d) / 2
    return [Piece(cylinder((0, 0, -h / 2 + 0.01), r, 0.02, n=20), "body"),
            Piece(lathe((0, 0, -h / 2), [(0.55 * r, 0), (0.52 * r, 0.9 * h), (0.3 * r, h), (0, h)], n=16), "body")]


def _scarf(w, d, h):
    return _folded(w, d, h)


def _speaker(w, d, h):
    return _body_box(w, d, h) + [Piece(cylinder((0, d / 2 + 0.003, -0.15 * h), 0.35 * w, 0.006, n=16, axis="y"), "dark"),
                                 Piece(cylinder((0, d / 2 + 0.003, 0.28 * h), 0.15 * w, 0.006, n=12, axis="y"), "dark")]


def _camera(w, d, h):
    return [_b("body", (0, -0.1 * d, 0), (w, 0.8 * d, h)), _b("body", (0.3 * w, -0.1 * d, h / 2 + 0.01), (0.25 * w, 0.5 * d, 0.02))]


def _controller(w, d, h):
    return [_b("body", (0, 0.1 * d, 0), (0.6 * w, 0.7 * d, h)),
            Piece(ellipsoid((-0.32 * w, -0.1 * d, 0), (0.18 * w, 0.35 * d, 0.5 * h), 5, 10), "body"),
            Piece(ellipsoid((0.32 * w, -0.1 * d, 0), (0.18 * w, 0.35 * d, 0.5 * h), 5, 10), "body")]


def _glasses_case(w, d, h):
    return [Piece(cylinder((0, 0, 0), 0.5 * d, 0.94 * w, n=12, axis="x", sy=1.0), "body"),
            Piece(ellipsoid((-0.47 * w, 0, 0), (0.05 * w, 0.5 * d, 0.5 * h), 4, 8), "body"),
            Piece(ellipsoid((0.47 * w, 0, 0), (0.05 * w, 0.5 * d, 0.5 * h), 4, 8), "body")]


def _laundry_basket(w, d, h):
    t = 0.02
    out = [_b("body", (0, 0, -h / 2 + t / 2), (w, d, t))]
    for sx in (-1, 1):
        out.append(_b("body", (sx * (w / 2 - t / 2), 0, 0), (t, d, h)))
    for sy in (-1, 1):
        out.append(_b("body", (0, sy * (d / 2 - t / 2), 0), (w, t, h)))
    out.append(_b("light", (0, 0, 0.1 * h), (w - 2 * t, d - 2 * t, 0.6 * h)))  # laundry inside
    return out


def _coffee_maker(w, d, h):
    return [_b("body", (0, -0.25 * d, 0), (w, 0.5 * d, h)), _b("body", (0, 0.1 * d, h / 2 - 0.12 * h), (w, 0.7 * d, 0.24 * h)),
            _b("body", (0, 0.1 * d, -h / 2 + 0.03), (w, 0.7 * d, 0.06))]


def _pan(w, d, h):
    r = min(w, d) / 2
    return [Piece(lathe((0, -0.2 * d, -h / 2), [(0, 0), (0.9 * r, 0), (r, h), (0.95 * r, h), (0.85 * r, 0.15 * h), (0, 0.15 * h)], n=20), "body")]


def _cutting_board(w, d, h):
    return _body_box(w, d, h)


def _box_with_lid(w, d, h):
    return [_b("body", (0, 0, -0.05 * h), (w, d, 0.9 * h))]


def _sewing_kit(w, d, h):
    return [_b("body", (0, 0, -0.1 * h), (w, d, 0.8 * h))]


BODY_RECIPES: dict[str, Recipe] = {
    "cabinet": _cabinet, "sideboard": _sideboard, "wardrobe": _wardrobe, "dresser": _dresser, "nightstand": _nightstand,
    "refrigerator": _fridge, "oven": _oven, "washing machine": _washer, "kitchen counter": _counter, "bookshelf": _bookshelf,
    "sofa": _sofa, "armchair": _armchair, "bed": _bed, "crib": _crib, "chair": _chair, "office chair": _office_chair,
    "bathtub": _bathtub, "toilet": _toilet, "sink cabinet": _sink, "ottoman": _round, "laundry hamper": _hamper,
    "floor lamp": _floor_lamp, "tv stand": _tv_stand, "toy chest": _toy_chest, "piano": _piano, "shoe rack": _shoe_rack,
    "desk": _body_box, "dining table": _body_box, "coffee table": _body_box, "side table": _round,
    "mug": _mug, "water bottle": _bottle, "toothbrush cup": _cup, "vase": _vase, "bowl": _bowl, "fruit bowl": _bowl,
    "kettle": _kettle, "trash can": _trash, "candle": _candle, "ball": _ball, "teddy bear": _teddy, "plush rabbit": _rabbit,
    "doll": _doll, "pillow": _pillow, "cushion": _cushion, "blanket": _folded, "towel": _folded, "scarf": _scarf,
    "backpack": _backpack, "school bag": _backpack, "handbag": _handbag, "pair of shoes": _shoes, "slippers": _slippers,
    "suitcase": _suitcase, "toy car": _toy_car, "guitar": _guitar, "headphones": _headphones, "keyboard": _keyboard,
    "monitor": _monitor, "tablet": _slab_with_screen, "phone": _slab_with_screen, "laptop": _laptop, "book": _book,
    "table lamp": _table_lamp, "potted plant": _plant, "toaster": _toaster, "hair dryer": _hair_dryer,
    "alarm clock": _alarm_clock, "wall clock": _wall_clock, "picture frame": _picture, "umbrella": _umbrella,
    "jacket": _jacket, "hat": _hat, "speaker": _speaker, "camera": _camera, "game controller": _controller,
    "board game": _box_with_lid, "glasses case": _glasses_case, "wallet": _body_box, "laundry basket": _laundry_basket,
    "coffee maker": _coffee_maker, "frying pan": _pan, "cutting board": _cutting_board, "lunch box": _box_with_lid,
    "jewelry box": _box_with_lid, "sewing kit": _sewing_kit,
}


def body_pieces(category: str, size) -> list[Piece]:
    """The object's pieces in its own frame (size = local width, depth, height)."""
    w, d, h = (float(s) for s in size)
    return BODY_RECIPES.get(category, _body_box)(w, d, h)


# -- parts -------------------------------------------------------------------------------------
# A part recipe gets the part's local size and where it sits relative to the object centre
# (local frame, metres), and returns geometry in the part's local frame.
PartRecipe = Callable[[float, float, float, np.ndarray, np.ndarray], Geom]


def _part_box(w, d, h, rel, obj):
    return box((0, 0, 0), (w, d, h))


def _side_handle(w, d, h, rel, obj):
    """A ring handle on the side the part sits on (mug), its ends on the body."""
    side = 1.0 if rel[0] >= 0 else -1.0
    R = min(0.45 * h, 0.9 * w)
    t0, t1 = (-math.pi / 2, math.pi / 2) if side > 0 else (math.pi / 2, 3 * math.pi / 2)
    return arc_tube((-side * w / 2, 0, 0), R, max(0.25 * w, 0.006), t0, t1, "xz", 10, 6)


def _top_arch(w, d, h, rel, obj):
    """A carrying handle arching over the top (kettle, handbag, suitcase, backpack, basket)."""
    R = 0.5 * w
    g = arc_tube((0, 0, -h / 2), R, max(0.35 * min(d, h), 0.01), 0, math.pi, "xz", 10, 6)
    g.verts[:, 2] = -h / 2 + (g.verts[:, 2] + h / 2) * (h / max(R, 1e-3))  # squash to the part height
    return g


def _straps(w, d, h, rel, obj):
    return Geom.concat([box((sx * 0.3 * w, 0, 0), (0.22 * w, d, h)) for sx in (-1, 1)])


def _shade(w, d, h, rel, obj):
    r = min(w, d) / 2
    return lathe((0, 0, -h / 2), [(r, 0), (0.65 * r, h)], n=18)


def _flowers(w, d, h, rel, obj):
    r = min(w, d) / 2
    return Geom.concat([ellipsoid((0.5 * r * math.cos(a), 0.5 * r * math.sin(a), 0.2 * h), (0.3 * r, 0.3 * r, 0.3 * h), 4, 8)
                        for a in np.linspace(0, 2 * math.pi, 6)[:-1]] + [ellipsoid((0, 0, 0.3 * h), (0.3 * r, 0.3 * r, 0.35 * h), 4, 8)])


def _pot(w, d, h, rel, obj):
    r = min(w, d) / 2
    return frustum((0, 0, 0), 0.75 * r, r, h, n=16)


def _wheels(w, d, h, rel, obj):
    return Geom.concat([cylinder((sx * 0.32 * w, sy * 0.45 * d, 0), 0.5 * h, 0.12 * d, n=10, axis="y") for sx in (-1, 1) for sy in (-1, 1)])


def _wheel_base(w, d, h, rel, obj):
    arms = []
    for k in range(5):
        a = k * 2 * math.pi / 5
        g = box((0.25 * w, 0, 0), (0.5 * w, 0.06, 0.4 * h))
        c, s = math.cos(a), math.sin(a)
        v = g.verts.copy()
        g.verts[:, 0], g.verts[:, 1] = c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1]
        arms.append(g)
        arms.append(cylinder((0.47 * w * c, 0.47 * d * s, -0.2 * h), 0.3 * h, 0.04, n=8, axis="x"))
    return Geom.concat(arms)


def _leg(w, d, h, rel, obj):
    return cylinder((0, 0, 0), min(w, d) / 2, h, n=8)


def _band(w, d, h, rel, obj):
    """A ring around the part's thin axis (a ball's stripe, a bowl's rim)."""
    dims = (w, d, h)
    thin = int(np.argmin(dims))
    r = 0.5 * max(v for i, v in enumerate(dims) if i != thin)
    return cylinder((0, 0, 0), r, dims[thin], n=20, axis="xyz"[thin], top=False, bottom=False)


def _hair(w, d, h, rel, obj):
    return ellipsoid((0, 0, -0.1 * h), (w / 2, d / 2, h * 0.7), 5, 10)


def _ears(w, d, h, rel, obj):
    return Geom.concat([ellipsoid((sx * 0.3 * w, 0, 0), (0.15 * w, 0.4 * d, 0.5 * h), 4, 8) for sx in (-1, 1)])


def _fruit(w, d, h, rel, obj):
    r = min(w, d) / 2
    return Geom.concat([ellipsoid((0.45 * r * math.cos(a), 0.45 * r * math.sin(a), 0), (0.35 * r, 0.35 * r, 0.45 * h), 5, 8)
                        for a in np.linspace(0, 2 * math.pi, 5)[:-1]])


def _cups(w, d, h, rel, obj):
    return Geom.concat([cylinder((sx * 0.42 * w, 0, 0), 0.45 * h, 0.15 * w, n=12, axis="x") for sx in (-1, 1)])


def _bells(w, d, h, rel, obj):
    return Geom.concat([ellipsoid((sx * 0.3 * w, 0, 0), (0.22 * w, 0.4 * d, 0.5 * h), 5, 8) for sx in (-1, 1)])


def _cap(w, d, h, rel, obj):
    return cylinder((0, 0, 0), min(w, d) / 2, h, n=14)


def _round_lid(w, d, h, rel, obj):
    return cylinder((0, 0, 0), min(w, d) / 2, h, n=18)


def _disc_front(w, d, h, rel, obj):
    return cylinder((0, 0, 0), min(w, h) / 2, d, n=20, axis="y")


def _lens(w, d, h, rel, obj):
    return cylinder((0, 0, 0), min(w, h) / 2, d, n=14, axis="y")


def _pillow_part(w, d, h, rel, obj):
    return Geom.concat([ellipsoid((0, 0, 0), (w / 2, d / 2, h / 2), 5, 12), box((0, 0, 0), (0.85 * w, 0.6 * d, 0.6 * h))])


def _spools(w, d, h, rel, obj):
    return Geom.concat([cylinder((x, 0, 0), 0.18 * d, h, n=10) for x in np.linspace(-0.35 * w, 0.35 * w, 4)])


def _toothbrushes(w, d, h, rel, obj):
    return Geom.concat([box((sx * 0.2 * w, 0, 0), (0.25 * w, 0.25 * d, h)) for sx in (-1, 1)])


def _keycaps(w, d, h, rel, obj):
    keys = []
    for i in range(12):
        for j in range(4):
            keys.append(box((-w / 2 + (i + 0.5) * w / 12, -d / 2 + (j + 0.5) * d / 4, 0), (w / 12 * 0.8, d / 4 * 0.75, h)))
    return Geom.concat(keys)


def _piano_keys(w, d, h, rel, obj):
    keys = [box((0, 0, 0), (w, d, h))]
    for i in range(36):
        if i % 7 in (2, 6):
            continue
        keys.append(box((-w / 2 + (i + 1) * w / 37, -0.15 * d, h / 2 + 0.006), (w / 74, 0.6 * d, 0.012)))
    return Geom.concat(keys)


PART_RECIPES: dict[tuple[str, str] | str, PartRecipe] = {
    ("mug", "handle"): _side_handle, ("kettle", "handle"): _top_arch, ("handbag", "handle"): _top_arch,
    ("suitcase", "handle"): _top_arch, ("laundry basket", "handles"): _part_box,
    ("washing machine", "door"): _disc_front, ("trash can", "lid"): _round_lid, ("toy chest", "lid"): _part_box,
    ("toilet", "lid"): _part_box, ("lunch box", "lid"): _part_box, ("camera", "lens"): _lens,
    ("umbrella", "handle"): _cap, ("frying pan", "handle"): _part_box, ("cutting board", "handle"): _part_box,
    "strap": _straps, "shade": _shade, "flowers": _flowers, "pot": _pot, "wheels": _wheels, "wheel base": _wheel_base,
    "leg": _leg, "stripe": _band, "hair": _hair, "ears": _ears, "fruit": _fruit, "ear cushions": _cups, "bells": _bells,
    "cap": _cap, "holder": _round_lid, "pillow": _pillow_part, "thread spools": _spools, "toothbrush": _toothbrushes,
    "keycaps": _keycaps, "keys": _piano_keys, "basin": _round_lid, "rim": _band,
}


def part_geom(category: str, part: str, size, rel, obj_size=None) -> Geom:
    """Geometry of a catalog part in its own frame (size = local part size, rel = part centre
    minus object centre in the object's frame)."""
    fn = PART_RECIPES.get((category, part)) or PART_RECIPES.get(part) or _part_box
    w, d, h = (float(s) for s in size)
    return fn(w, d, h, np.asarray(rel, float), None if obj_size is None else np.asarray(obj_size, float))
