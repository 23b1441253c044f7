"""Result records in the public PInVerify layout (github.com/Avalon-S/PInVerify,
``scripts/evaluate.py``), so its metrics code and tools read our results files.

One builder for every producer (offline agent, ROS session, broken episodes).
Public fields: ``episode_id``, ``scene_id``, ``object_id`` (the *query* object, as the
public evaluator writes it), ``target_object_id``, ``target_object_category``,
``query_object_category``, ``prediction``, ``label``, ``pair_type``,
``query_descriptions``, ``target_descriptions``, ``steps``, ``is_correct``,
``transcript``, ``nav_failures``, ``nav_fail_unreachable``, ``nav_fail_trap``,
``effective_views``, ``first_view_prediction``, ``prediction_flips``, ``flip_direction``.
Ours besides: ``episode_key``, ``index``, ``query_object_id``, ``moves``, ``mode``, ``nbv``,
``stop_reason``, ``interim_predictions``, ``start_sector``, ``attributes``, ``error``.

Transcript steps keep our fields (``status`` says how the agent reached the view:
start | ok | unreachable | trap) and add the public sub-objects: ``observation.rgb_path``,
``action`` (``decision``, ``_step_prediction``, ``nav_rel``: the move requested after
this view) and ``info`` (``decision``, plus ``navigation_failed`` / ``trap_view`` for the
result of that move, as the public environment reports it).
"""
from __future__ import annotations

from personal.verification.schema import PairEpisode


def count_flips(interim: list[str]) -> int:
    """Changes between consecutive committed (Yes/No) interim predictions."""
    committed = [d for d in interim if d in ("Yes", "No")]
    return sum(1 for a, b in zip(committed, committed[1:]) if a != b)


def public_transcript(steps: list[dict], capture_root: str = "") -> list[dict]:
    """Our per-view transcript entries with the public ``observation`` / ``action`` / ``info``."""
    out = []
    for k, entry in enumerate(steps):
        nxt = steps[k + 1] if k + 1 < len(steps) else None
        info = {"decision": entry.get("decision")}
        if nxt is not None:
            if nxt.get("status") == "unreachable":
                info["navigation_failed"] = True
            elif nxt.get("status") == "trap":
                info["trap_view"] = True
        info["tracker_state"] = {a["name"]: a.get("accumulated_status") for a in entry.get("attributes", []) if "name" in a}
        rgb = entry.get("rgb")
        out.append({
            **entry,
            "observation": {"rgb_path": f"{capture_root}/{rgb}" if rgb and capture_root else rgb},
            "action": {"decision": entry.get("decision"), "_step_prediction": entry.get("decision"),
                       "nav_rel": nxt.get("direction") if nxt is not None else None},
            "info": info,
        })
    return out


def result_record(pair: PairEpisode, *, prediction: str, statuses: list[str], first_view: str,
                  interim: list[str], transcript: list[dict], attributes: list, mode: str, nbv: str,
                  stop_reason: str, query_category: str = "", start_sector: int | None = None,
                  error: str | None = None) -> dict:
    """The record of one finished episode; ``statuses`` holds one entry per step (view)."""
    decision = prediction if prediction in ("Yes", "No") else "No"  # an undecided episode counts as No
    correct = (decision == "Yes") == (pair.label == 1)
    unreach, trap = statuses.count("unreachable"), statuses.count("trap")
    flips = count_flips(interim)
    root = str(pair.capture.root) if pair.capture is not None else ""
    if pair.capture is not None:  # views that came over ROS carry their tag only: name the capture's image file
        images = {vp.tag: vp.rgb for vp in pair.capture.viewpoints if vp.rgb}
        transcript = [{**e, "rgb": e.get("rgb") or images.get(e.get("tag"))} if e.get("tag") else e for e in transcript]
    return {
        "episode_id": pair.episode_id, "scene_id": pair.scene_key,
        "object_id": pair.query_object_id, "target_object_id": pair.object_id,
        "target_object_category": pair.object_category,
        "query_object_category": pair.query_object_category or query_category or "",
        "prediction": decision, "label": pair.label, "pair_type": pair.pair_type,
        "query_descriptions": list(pair.query_descriptions), "target_descriptions": list(pair.target_descriptions),
        "steps": len(statuses), "is_correct": correct,
        "transcript": public_transcript(transcript, root),
        "nav_failures": unreach + trap, "nav_fail_unreachable": unreach, "nav_fail_trap": trap,
        "effective_views": len(statuses) - unreach - trap,
        "first_view_prediction": first_view, "prediction_flips": flips,
        "flip_direction": f"{'stable' if flips == 0 else 'flipped'}_{'correct' if correct else 'wrong'}",
        # ours
        "episode_key": pair.key, "index": pair.index, "query_object_id": pair.query_object_id,
        "query_category": query_category, "moves": max(len(statuses) - 1, 0), "mode": mode, "nbv": nbv,
        "stop_reason": stop_reason, "interim_predictions": list(interim), "start_sector": start_sector,
        "attributes": attributes, "error": error,
    }
