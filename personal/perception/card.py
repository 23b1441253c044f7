"""The model card (``README.md``) of a trained lit checkpoint, from its training log and the
held-out retrieval figures."""
from __future__ import annotations

import json
from pathlib import Path


def write_model_card(checkpoint: str | Path, retrieval: dict, machine_note: str = "") -> Path:
    ck = Path(checkpoint)
    log = json.loads((ck / "training_log.json").read_text())
    cfg, res = log["config"], log["result"]
    size_mb = sum(p.stat().st_size for p in ck.iterdir() if p.is_file()) / 2**20
    seeds = log.get("train_seeds") or []
    vseeds = log.get("val_seeds") or []
    evals = [h for h in log["history"] if "val_top1" in h]
    lines = [
        f"# {ck.name}: a locked-text image tower for household perception",
        "",
        "A small ViT (transformers `CLIPVisionModelWithProjection`, model type `personal_lit_vision`: hidden "
        f"{cfg['hidden']}, {cfg['layers']} layers, patch 8, input 160 x 120) that maps every image patch into the "
        "sentence space of the packaged all-MiniLM-L6-v2 (384-d), which stays frozen as the text tower (LiT), plus a "
        "per-patch objectness head. It reads RGB only. Load it with `make_encoder(\"lit\")` "
        "(`personal.models.hf_vlm`, the same adapter as CLIP / SigLIP checkpoints).",
        "",
        "## Training",
        f"- data: `personal perception dataset`, {len(seeds)} generated households, seeds "
        f"{min(seeds) if seeds else '?'}-{max(seeds) if seeds else '?'} ({log.get('views_per_scene')} views each, 160 x 120, "
        "rendered at 320 x 240 and area-downsampled); validation households seeds "
        f"{min(vseeds) if vseeds else '?'}-{max(vseeds) if vseeds else '?'}. Evaluation households (seeds 0-9999: POG, "
        "PAN, retrieval) never appear in training or validation.",
        "- objective: per-patch InfoNCE with soft targets over the household's captions + structure texts "
        "(\"a wall\", \"the floor\", \"the ceiling\", \"a door frame\"), weighted by each instance's pixels in the patch "
        f"(ground-truth masks are training labels only); auxiliary category-name target (weight {cfg['category_weight']}); "
        f"objectness BCE (weight {cfg['objectness_weight']}); learned temperature.",
        f"- optimiser: AdamW, lr {cfg['lr']}, weight decay {cfg['weight_decay']}, warm-up {cfg['warmup']} steps then "
        f"cosine over the budget; batch {cfg['batch']} frames; bf16 autocast; {cfg['threads']} CPU thread(s); seed {cfg['seed']}.",
        f"- run: **{res['steps']} steps** ({res['frames_seen']} frames seen), budget {cfg['minutes']} min of "
        f"{'process CPU time' if cfg.get('budget_clock') == 'cpu' else 'wall-clock time'}; measured "
        f"{res['cpu_s'] / 60:.1f} CPU-min and {res['wall_s'] / 60:.1f} wall-min on the shared 2-core machine "
        f"({res['steps_per_cpu_s']:.2f} steps per CPU-second: alone on one core the run takes about its CPU time). "
        + machine_note,
        f"- checkpoint size: {size_mb:.1f} MB (fp32 safetensors).",
        "",
        "![training loss and validation retrieval](loss.png)",
        "",
        "Validation (region -> caption retrieval among the household's objects, validation households):",
        "",
        "| step | wall s | train loss | val top-1 | val top-5 |",
        "|---:|---:|---:|---:|---:|",
        *[f"| {h['step']} | {h['wall_s']:.0f} | {h['loss']:.3f} | {h['val_top1']:.3f} | {h['val_top5']:.3f} |" for h in evals],
        "",
        "## Held-out evaluation",
        f"Households seeds {retrieval.get('seeds')} ({retrieval.get('views')} views, {retrieval.get('regions')} regions "
        "of at least 48 pixels at 160 x 120; a region's embedding is the pixel-weighted mean of its patches, the mask used "
        "for scoring only):",
        "",
        "| region -> caption retrieval | value |",
        "|---|---:|",
        f"| top-1 among the household's objects | {retrieval['top1']:.3f} |",
        f"| top-5 | {retrieval['top5']:.3f} |",
        f"| category of the top-1 caption right | {retrieval['category_acc']:.3f} |",
        f"| chance top-1 | {retrieval['chance_top1']:.3f} |",
        f"| patch objectness accuracy | {retrieval['objectness_acc']:.3f} |",
        "",
        "## Limits",
        "- Trained only on this project's procedural households (primitive shapes, procedural textures); it has never "
        "seen a real image. On a robot use a CLIP / SigLIP checkpoint or retrain on real data.",
        "- Patches are 8 x 8 at 160 x 120: objects under about one patch (a phone across a room) are seen poorly.",
        "- Relations in captions (\"on the desk\") are learned only from what is in view.",
    ]
    path = ck / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path
