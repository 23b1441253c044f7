"""Expected SR@1 m of the POG Random method per household size preset (docs/simulator.md):
the share of the mapped floor within 1 m of a target footprint, plus look-alike counts.
Usage: .venv/bin/python scripts/preset_difficulty.py OUT.json"""
import numpy as np, sys, json
from personal.grounding.eval.pog_run import generate_episode_set
from personal.world.model import SPLITS
out = {}
for preset in ("default", "hm3d"):
    scenes, eps = generate_episode_set(10, SPLITS, 10, 0, preset=preset)
    per = {s: [] for s in SPLITS}
    grids = {}
    multi = 0
    for e in eps:
        sc = scenes[e.scene_id]
        key = (e.scene_id, e.floor_id)
        if key not in grids:
            rooms = [r for r in sc.rooms if r.floor == e.floor_id]
            x0 = min(r.bounds[0] for r in rooms); y0 = min(r.bounds[1] for r in rooms)
            x1 = max(r.bounds[2] for r in rooms); y1 = max(r.bounds[3] for r in rooms)
            xs, ys = np.meshgrid(np.arange(x0, x1, 0.05) + 0.025, np.arange(y0, y1, 0.05) + 0.025)
            grids[key] = (xs.ravel(), ys.ravel())
        xs, ys = grids[key]
        near = np.zeros(len(xs), bool)
        for oid in e.target_object_ids:
            b = sc.object(oid).box
            dx = np.maximum(np.maximum(b.min[0] - xs, 0), xs - b.max[0]); dy = np.maximum(np.maximum(b.min[1] - ys, 0), ys - b.max[1])
            near |= dx * dx + dy * dy <= 1.0
        multi += len(e.target_object_ids) > 1
        per[e.split].append(near.mean())
    row = {s: round(100 * float(np.mean(v)), 2) for s, v in per.items()}
    row["total"] = round(100 * float(np.mean([x for v in per.values() for x in v])), 2)
    row["episodes"] = len(eps); row["multi_target_episodes"] = multi
    row["mean_floor_m2"] = round(float(np.mean([len(g[0]) * 0.05**2 for g in grids.values()])), 1)
    # look-alikes: other instances of the query's category in the household, and those owned by someone else in the episode
    la = [sum(o.category == e.object_category for o in scenes[e.scene_id].objects if o.floor == e.floor_id) - len(e.target_object_ids) for e in eps]
    owned = [sum(1 for p, objs in e.ownership.items() if p != e.owner for o in objs if scenes[e.scene_id].object(o).category == e.object_category and o not in e.target_object_ids) for e in eps]
    row["lookalikes_in_household_mean"] = round(float(np.mean(la)), 2)
    row["episodes_with_lookalike_owned_by_another"] = round(100 * float(np.mean([x > 0 for x in owned])), 1)
    out[preset] = row
    print(preset, row, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
