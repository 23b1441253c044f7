"""Foxglove layouts, one per graph (``viz/layouts/<graph>.json``), built with foxglove-sdk's
``foxglove.layouts``. Regenerate after changing a panel: ``python -m personal.viz.layouts``
(a test checks the shipped files match). In the Foxglove app: Layouts -> Import from file.
"""
from __future__ import annotations

import sys
from pathlib import Path

import foxglove.layouts as fl

LAYOUT_DIR = Path(__file__).resolve().parents[2] / "viz" / "layouts"

# what each graph shows: 3D scene topics, image topics, log topics (Foxglove topic names of nodes/viz_node.py)
MAPPING_3D = ["/map", "/map/cloud", "/map/frontiers", "/agent/path", "/agent/pose", "/tf"]
GROUNDING_3D = ["/grounding/similarity", "/grounding/predictions"]
CAMERA = ["/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw"]
PANELS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "pog_eval": (MAPPING_3D + GROUNDING_3D, CAMERA, ["/grounding/log"]),
    "pog_replay": (MAPPING_3D + GROUNDING_3D, CAMERA, ["/grounding/log"]),
    "locobot": (MAPPING_3D + GROUNDING_3D + ["/nav/occupancy"], CAMERA, ["/grounding/log"]),
    "pan_eval": (["/nav/occupancy", "/agent/path", "/agent/pose", "/tf"], CAMERA, []),
    "explore": (MAPPING_3D, CAMERA, []),
    "bag_map": (MAPPING_3D, CAMERA, []),
    "sim": (["/agent/path", "/agent/pose", "/tf"], CAMERA, []),
    "aiv_eval": ([], ["/aiv/capture/rgb"], ["/aiv/verdicts"]),
    "perm_eval": ([], ["/perm/agentview_image"], []),
    "home_eval": ([], [], ["/home/log"]),
    "assistant": (MAPPING_3D + GROUNDING_3D + ["/nav/occupancy", "/memory/objects"], CAMERA, ["/grounding/log", "/home/log"]),
}


def _topic_settings(topic: str):
    if topic == "/grounding/similarity":  # the query heat map: turbo colour map over cosine -1..1
        return fl.BaseRendererGridTopicSettings(visible=True, color_mode="colormap", color_map="turbo", color_field="similarity",
                                                min_value=-1.0, max_value=1.0, explicit_alpha=0.8, frame_locked=True)
    if topic in ("/map", "/nav/occupancy"):
        return fl.BaseRendererGridTopicSettings(visible=True, color_mode="gradient", color_field="occupancy",
                                                gradient=("#f2f2f2ff", "#202020ff"), min_value=0.0, max_value=100.0,
                                                draw_behind=True)
    return fl.BaseRendererBaseSettings(visible=True)


def layout_for(graph: str) -> fl.Layout:
    scene, images, logs = PANELS[graph]
    columns = []
    if scene:
        columns.append(fl.SplitItem(proportion=2, content=fl.ThreeDeePanel(
            title="map, predictions, heat map", config=fl.ThreeDeeConfig(
                follow_tf="map", topics={t: _topic_settings(t) for t in scene}))))
    side = [fl.SplitItem(content=fl.ImagePanel(title=t, config=fl.ImageConfig(image_mode=fl.ImageModeConfig(image_topic=t))))
            for t in images]
    side += [fl.SplitItem(content=fl.LogPanel(title=t, config=fl.LogConfig(topic_to_render=t))) for t in logs]
    if side:
        columns.append(fl.SplitItem(proportion=1, content=fl.SplitContainer(direction="column", items=side)))
    return fl.Layout(content=fl.SplitContainer(direction="row", items=columns))


def write_layouts(out_dir: Path = LAYOUT_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for graph in sorted(PANELS):
        path = out_dir / f"{graph}.json"
        path.write_text(layout_for(graph).to_json() + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_layouts(Path(sys.argv[1]) if len(sys.argv) > 1 else LAYOUT_DIR):
        print(p)
