"""Tabletop (LIBERO-PeRM) payloads <-> fields of ``personal/msg/TabletopLayout`` /
``TabletopState`` (ROS-free: plain dicts in, plain dicts out; ``convert.from_dict`` builds the
messages). The dict forms are what ``personal.manipulation`` uses: ``Layout.to_dict()`` and the
per-step oracle record (eef, yaw, gripper, held, objects {name: xyz}, success, done)."""
from __future__ import annotations

from typing import Any

_OBJECT_KEYS = ("name", "shape", "half_size", "rgba", "colour", "role", "pos", "yaw", "category", "grasp_offset")


def layout_fields(layout: dict[str, Any], task_id: str = "") -> dict[str, Any]:
    """``Layout.to_dict()`` -> TabletopLayout fields (a missing handle becomes has_handle=false)."""
    objects = []
    for o in layout["objects"]:
        fields = {k: o[k] for k in _OBJECT_KEYS if k in o}
        for k in ("half_size", "rgba", "pos", "grasp_offset"):
            if k in fields:
                fields[k] = [float(v) for v in fields[k]]
        fields["yaw"] = float(fields.get("yaw", 0.0))
        fields["category"] = str(fields.get("category") or "")
        if o.get("handle_offset") is not None:
            fields["has_handle"], fields["handle_offset"] = True, [float(v) for v in o["handle_offset"]]
        objects.append(fields)
    return {"task_id": task_id, "mission": str(layout["mission"]), "seed": int(layout["seed"]),
            "target": str(layout["target"]), "table_z": float(layout["table_z"]),
            "eef_start": [float(v) for v in layout["eef_start"]], "objects": objects}


def layout_dict(fields: dict[str, Any]) -> dict[str, Any]:
    """TabletopLayout fields (``convert.to_dict``) -> the ``Layout.to_dict()`` form (task_id dropped)."""
    objects = []
    for o in fields["objects"]:
        obj = {k: o[k] for k in _OBJECT_KEYS}
        obj["handle_offset"] = list(o["handle_offset"]) if o["has_handle"] else None
        objects.append(obj)
    return {"mission": fields["mission"], "seed": int(fields["seed"]), "target": fields["target"],
            "table_z": float(fields["table_z"]), "eef_start": list(fields["eef_start"]), "objects": objects}


def state_fields(record: dict[str, Any]) -> dict[str, Any]:
    """Oracle step record -> TabletopState fields."""
    names = list(record["objects"])
    return {"task_id": str(record["task_id"]), "step": int(record["step"]), "eef": [float(v) for v in record["eef"]],
            "yaw": float(record["yaw"]), "gripper": float(record["gripper"]), "held": str(record["held"] or ""),
            "object_names": names,
            "object_positions": [dict(zip("xyz", (float(v) for v in record["objects"][n]))) for n in names],
            "success": bool(record["success"]), "done": bool(record["done"])}


def state_dict(fields: dict[str, Any]) -> dict[str, Any]:
    """TabletopState fields -> the oracle step record."""
    objects = {n: [p["x"], p["y"], p["z"]] for n, p in zip(fields["object_names"], fields["object_positions"])}
    return {"task_id": fields["task_id"], "step": int(fields["step"]), "eef": list(fields["eef"]), "yaw": fields["yaw"],
            "gripper": fields["gripper"], "held": fields["held"], "objects": objects,
            "success": bool(fields["success"]), "done": bool(fields["done"])}
