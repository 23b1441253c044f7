"""The shipped crop tower in float32 against bf16 autocast, on the proposals of rendered frames.

Why it exists: the tower ran under ``torch.autocast("cpu", bfloat16)`` until 2026-12-06. A CPU without
native bf16 (AVX2 only; AVX512-BF16 / AMX have it) emulates it, and the tower is most of a mapping
step. Prints the CPU's bf16 flags, then per view (household 5, 160x120, the views of
test_models_registry) the proposals, the milliseconds of each precision (median of --repeats) and
the smallest cosine between the two embeddings of a proposal, and the ratio over all views; then one
training step (forward + backward, a batch of 128 random crops) each way, as ``personal perception
train`` still runs under bf16 autocast (its budget is CPU minutes, so the precision sets how many
steps a tower gets).
Usage: .venv/bin/python bench/bench_tower_precision.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def cpu_flags() -> str:
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    have = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return ", ".join(have) or "none of avx2 / avx512f / avx512_bf16 / amx_bf16"


def views():
    """(crops, masks) of the proposals of three rendered views."""
    from personal.models.base import make_encoder
    from personal.perception.crops import segment_crops
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh

    enc = make_encoder("lit")
    scene = generate_scene(5)
    cam = CameraSpec(width=160, height=120)
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    for o in (scene.objects[i] for i in (2, 7, 13)):
        T = camera_pose(AgentState(o.box.center[0] - 1.8, o.box.center[1], 0.0, 0.0, -0.3), cam)
        rgb, depth, _ = r.render(T)
        seg = enc.segments(depth, cam.intrinsics(), T)  # the proposals the map would embed
        crops, masks = segment_crops(rgb, seg, seg.objects(), size=int(enc.config.image_size))
        yield enc.model, crops, masks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import torch

    from personal.models.imaging import crop_tensor

    print(f"CPU flags: {cpu_flags()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| view | proposals | bf16 autocast ms | float32 ms | speed-up | min cosine |")
    print("|---:|---:|---:|---:|---:|---:|")
    tot = {"bf16": 0.0, "fp32": 0.0}
    for k, (model, crops, masks) in enumerate(views()):
        x = torch.from_numpy(crop_tensor(crops, masks))
        out, ms = {}, {}
        for mode in ("bf16", "fp32"):
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
                model.embed_crops(x)  # warm-up
                times = []
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    f, _ = model.embed_crops(x)
                    times.append(1000 * (time.perf_counter() - t))
            out[mode] = torch.nn.functional.normalize(f.float(), dim=-1).numpy()
            ms[mode] = statistics.median(times)
            tot[mode] += ms[mode]
        cos = float(np.min(np.sum(out["bf16"] * out["fp32"], axis=1))) if len(x) else float("nan")
        print(f"| {k} | {len(x)} | {ms['bf16']:.1f} | {ms['fp32']:.1f} | {ms['bf16'] / ms['fp32']:.1f}x | {cos:.6f} |")
    print(f"all views: bf16 {tot['bf16']:.0f} ms, float32 {tot['fp32']:.0f} ms: float32 {tot['bf16'] / tot['fp32']:.1f}x faster")
    train_step(model, args.repeats)


def train_step(model, repeats: int) -> None:
    import torch

    from personal.models.imaging import crop_tensor

    rng = np.random.default_rng(0)
    size = int(model.config.image_size)
    x = torch.from_numpy(crop_tensor(rng.integers(0, 255, (128, size, size, 3), dtype=np.uint8),
                                     rng.random((128, size, size)) > 0.3))
    model.train()
    ms = {}
    for mode in ("bf16", "fp32"):
        times = []
        for k in range(repeats + 1):
            t = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
                feats, obj = model.embed_crops(x)
            (feats.float().square().mean() + obj.float().mean()).backward()
            model.zero_grad(set_to_none=True)
            if k:  # the first is a warm-up
                times.append(1000 * (time.perf_counter() - t))
        ms[mode] = statistics.median(times)
    model.eval()
    print(f"training step, batch 128: bf16 autocast {ms['bf16']:.0f} ms, float32 {ms['fp32']:.0f} ms "
          f"({ms['bf16'] / ms['fp32']:.1f}x)")


if __name__ == "__main__":
    main()
