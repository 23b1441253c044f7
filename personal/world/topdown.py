"""Top-down PNG of a household: rooms (named), walls, objects (labelled), owners, agent start."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrow, Rectangle  # noqa: E402

from personal.world.model import Episode, Scene  # noqa: E402

_LABEL_OFFSETS = [(0.3, 0.3), (0.3, -0.7), (-0.3, 0.3), (-0.3, -0.7), (0.3, 0.9), (-0.3, 0.9), (0.3, -1.3), (-0.3, -1.3),
                  (0.8, -0.2), (-0.8, -0.2), (0.3, 1.5), (-0.3, 1.5), (0.3, -1.9), (-0.3, -1.9)]
_ROOM_FILL = ("#f4efe6", "#e9f1f7", "#eef6ea", "#f8ecef", "#f3f0fa", "#fdf6e3", "#eaf4f4", "#f6f1e9")


def _owners_by_object(ownership: dict[str, list[str]] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for person, objs in (ownership or {}).items():
        for o in objs:
            out.setdefault(o, []).append(person)
    return out


def render_topdown(
    scene: Scene,
    out_path: str | Path,
    floor: int = 0,
    episode: Episode | None = None,
    ownership: dict[str, list[str]] | None = None,
    label_all: bool = False,
    start: tuple[float, float, float] | None = None,
    dpi: int = 110,
) -> Path:
    """Draw one floor. Owned objects (from ``episode`` or ``ownership``) are labelled with
    their owners; targets of ``episode`` are outlined in red; the start pose is an arrow.
    Other objects are labelled by category when ``label_all`` or when nothing is owned."""
    ownership = ownership if ownership is not None else (episode.ownership if episode else None)
    owners = _owners_by_object(ownership)
    targets = set(episode.target_object_ids) if episode else set()
    x0, y0, x1, y1 = scene.bounds()
    w, h = x1 - x0, y1 - y0
    fig, ax = plt.subplots(figsize=(min(16, 3 + 1.25 * w), min(18, 2 + 1.25 * h)))
    for k, r in enumerate(r for r in scene.rooms if r.floor == floor):
        rx0, ry0, rx1, ry1 = r.bounds
        ax.add_patch(Rectangle((rx0, ry0), rx1 - rx0, ry1 - ry0, color=_ROOM_FILL[k % len(_ROOM_FILL)], zorder=0))
        ax.text((rx0 + rx1) / 2, (ry0 + ry1) / 2, r.name.upper(), ha="center", va="center", fontsize=11, weight="bold",
                color="#8a7f70", alpha=0.8, zorder=1)
    z = next(f.z for f in scene.floors if f.index == floor)
    for wall in scene.walls:
        b = wall.box
        if b.min[2] < z + 1.0 and b.max[2] > z:
            ax.add_patch(Rectangle((b.min[0], b.min[1]), b.size[0], b.size[1], color="#333", zorder=2))
    objs = [o for o in scene.objects if o.floor == floor]
    owned = []
    for o in sorted(objs, key=lambda o: (not o.is_furniture, o.box.min[2])):
        b = o.box
        edge = "red" if o.object_id in targets else ("#1a1a1a" if o.object_id in owners else "#777")
        lw = 2.5 if o.object_id in targets else (1.4 if o.object_id in owners else 0.6)
        ax.add_patch(Rectangle((b.min[0], b.min[1]), b.size[0], b.size[1], facecolor=[c / 255 for c in o.rgb],
                               edgecolor=edge, linewidth=lw, alpha=0.9 if o.is_furniture else 1.0, zorder=3 if o.is_furniture else 4))
        cx, cy = b.center[0], b.center[1]
        if o.object_id in owners:
            owned.append(o)
        elif label_all or not owners or o.is_furniture:
            ax.text(cx, cy, o.category, fontsize=5.5 if not o.is_furniture else 6.5, ha="center", va="center",
                    color="#222" if (label_all or not owners) else "#666", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.6))
    start = start or (episode.start_position if episode else None)
    if start is not None:
        yaw = episode.start_yaw if episode else 0.0
        ax.plot([start[0]], [start[1]], "o", color="#0060df", markersize=9, zorder=9)
        ax.add_patch(FancyArrow(start[0], start[1], 0.45 * math.cos(yaw), 0.45 * math.sin(yaw), width=0.12, color="#0060df", zorder=8))
        ax.text(start[0] - 0.45 * math.cos(yaw), start[1] - 0.45 * math.sin(yaw), "start", color="#0060df", fontsize=9,
                weight="bold", ha="center", va="center", zorder=8)
    placed: list[tuple[float, float, float, float]] = []
    if start is not None:  # keep owner labels off the start marker
        placed.append((start[0] - 0.7, start[1] - 0.7, start[0] + 0.7, start[1] + 0.7))
    for o in owned:  # owner labels: greedy placement that avoids earlier labels
        cx, cy = o.box.center[0], o.box.center[1]
        label = f"{o.category}\n({', '.join(owners[o.object_id])})"
        lw_m = 0.085 * max(len(line) for line in label.split("\n")) + 0.1
        lh_m = 0.42
        edge = "red" if o.object_id in targets else "#1a1a1a"
        for dx, dy in _LABEL_OFFSETS:
            tx = cx + (dx if dx >= 0 else dx - lw_m)
            ty = cy + dy
            bb = (tx, ty, tx + lw_m, ty + lh_m)
            inside = x0 - 0.2 <= bb[0] and bb[2] <= x1 + 0.2 and y0 - 0.2 <= bb[1] and bb[3] <= y1 + 0.2
            if inside and not any(bb[0] < q[2] and q[0] < bb[2] and bb[1] < q[3] and q[1] < bb[3] for q in placed):
                break
        placed.append(bb)
        ax.annotate(label, (cx, cy), xytext=(bb[0] + 0.05, bb[1] + 0.05), fontsize=8, weight="bold", zorder=7, va="bottom",
                    bbox=dict(boxstyle="round,pad=0.2", fc="#fffbe6", ec=edge, lw=0.8),
                    arrowprops=dict(arrowstyle="-", color=edge, lw=0.8))
    title = f"{scene.scene_id} · floor {floor}"
    if episode:
        title += f"\n{episode.split}: {episode.query}"
    ax.set_title(title, fontsize=11)
    ax.set_xlim(x0 - 0.3, x1 + 0.3)
    ax.set_ylim(y0 - 0.3, y1 + 0.3)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m] (map frame)")
    ax.set_ylabel("y [m]")
    fig.tight_layout()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=dpi)
    plt.close(fig)
    return out_path
