"""The grounding node's configuration and request checks without ROS (nodes/grounding_node.py is
its rclpy shell): its parameter table, the methods those parameters configure, and why a query is
refused before grounding (the GroundingResult failure code and reason)."""
from __future__ import annotations

import numpy as np

# the grounding node's parameters: {name: (default, description)}
PARAMETERS = {
    "methods": ("random,centre,qs,rpg,rpg-owner", "comma-separated registry names"),
    "encoder": ("oracle", "text encoder (must match the map's encoder)"),
    "model_path": ("", "local model directory for encoder clip | siglip | blip2"),
    "extractor": ("builtin", "ownership-phrase extractor: builtin | episode (the query's extracted_summary) | llm"),
    "map_dir": ("", "folder with <scene_id>/features.yaml; empty = maps from the topics only"),
    "top_k": (3, "RPG: peaks per phrase"),
    "nhood": (1, "RPG: dilation radius (cells)"),
    "nms_r": (1, "RPG: NMS suppression radius (cells)"),
    "backend": ("numpy", "numpy | torch"),
    "n_predictions": (3, "ranked predictions per method"),
    "pred_sep_m": (1.0, "min separation of ranked predictions (m)"),
    "llm_base_url": ("", "OpenAI-compatible endpoint (llm extractor)"),
    "llm_model": ("", "chat model (llm extractor)"),
}
RPG_OPTIONS = ("top_k", "nhood", "nms_r", "backend")


def method_options(name: str, p: dict) -> dict:
    """Keyword arguments of method ``name`` from the parameters: RPG takes all its options, QS the backend."""
    common = {"n_predictions": p["n_predictions"], "pred_sep_m": p["pred_sep_m"]}
    if name in ("rpg", "rpg-owner"):
        return {**common, **{k: p[k] for k in RPG_OPTIONS}}
    return {**common, "backend": p["backend"]} if name == "qs" else common


def llm_options(p: dict) -> dict:
    """The llm extractor's endpoint and model, only those given."""
    return {k: v for k, v in (("base_url", p["llm_base_url"]), ("model", p["llm_model"])) if v}


def refusal(names: list[str], unknown: list[str], configured: list[str], view, no_map: str,
            encoder: str) -> tuple[str, str] | None:
    """(failure code, reason) of a query that cannot be grounded, None if it can: methods not configured,
    no map (``no_map`` says why), or a map built with another encoder than the node's text encoder."""
    if unknown:
        return "method_not_configured", f"methods {unknown} are not configured on this node ({configured})"
    if view is None:
        return "no_map", no_map
    if view.encoder and encoder not in view.encoder:
        return "encoder_mismatch", f"map built with encoder {view.encoder!r}, node encodes text with {encoder!r}"
    return None


def similarity_cells(sim: np.ndarray) -> np.ndarray:
    """Cosine similarity as OccupancyGrid cells: 0..100 = cosine -1..1, -1 unobserved (NaN)."""
    return np.where(np.isnan(sim), -1, np.clip(np.rint((np.nan_to_num(sim) + 1.0) * 50.0), 0, 100)).astype(np.int8)
