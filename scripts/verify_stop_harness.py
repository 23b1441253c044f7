"""Offline harness for verify before stop (issue 31): stop moments on VALIDATION households.

``collect``: runs the RPG-owner explorer (learned ``lit`` encoder) on validation households; every
time it would STOP on a detection, the moment is saved (colour + depth frame, camera, the frames
of a few steps earlier, the detected point, the detected cell's feature vector, and — for scoring
only — the stop pose's distance to the target's footprint), the candidate is rejected and the
search goes on, so one episode yields several moments, right and wrong ones.

``eval``: runs a StopVerifier configuration on the saved moments and prints its yes / no / unsure
counts for right candidates (stop within 1 m of the target) and wrong ones: seconds per try.

    .venv/bin/python scripts/verify_stop_harness.py collect --seeds 20000-20017 --out runs/vs_harness
    .venv/bin/python scripts/verify_stop_harness.py eval runs/vs_harness
    # a looser rule's moments, then replay rules (threshold:phrase floor:relative margin) on them
    .venv/bin/python scripts/verify_stop_harness.py collect --out runs/vs_loose --threshold 0.10 \
        --phrase-floor 0.15 --relative-margin -0.05 --per-episode 8
    .venv/bin/python scripts/verify_stop_harness.py eval runs/vs_loose --replay 0.125:0.2:0,0.125:0.18:0
"""
from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

SUCCESS_RADIUS_M = 1.0


class CollectingVerifier:
    """Stands in for StopVerifier: saves each stop moment and rejects it (up to ``per_episode``)."""

    def __init__(self, loop, out: Path, per_episode: int = 6) -> None:
        from personal.navigation.verify_stop import StopVerifier

        self.loop, self.out, self.per_episode = loop, out, per_episode
        self.recent = StopVerifier().recent  # the same frame history the real verifier keeps
        self.checks: list = []
        self.meta: dict = {}
        self.boxes: list = []

    def prepare(self, query, phrases, owner) -> None:
        self.checks, self.n = [], 0
        self.recent.clear()

    def observe(self, frame) -> None:
        self.recent.append(frame)

    def check(self, frame, point, floor_z=None, step: int = 0, cell_feature=None):  # saves its own cell feature
        from personal.navigation.verify_stop import StopCheck

        fm = self.loop.mapper.feature_map
        r, c = fm.geometry.cell(point[0], point[1])
        maps = self.loop.policy.last_maps  # the grounded score the stop was made on (a lower threshold's replay)
        mr, mc = int((point[1] - maps.origin[1]) // maps.resolution), int((point[0] - maps.origin[0]) // maps.resolution)
        score = float(maps.detect[mr, mc])
        gates = [float(a[mr, mc]) if a is not None else np.inf for a in (maps.phrase_sim, maps.relative)]
        x, y, _ = frame.pose
        older = list(self.recent)[:-1]
        np.savez_compressed(
            self.out / f"{self.meta['episode_id']}_{self.n:02d}.npz",
            rgb=frame.rgb, depth=np.asarray(frame.depth, np.float32), K=frame.K, T=frame.T_map_camera,
            pose=np.asarray(frame.pose), point=np.asarray(point), floor_z=floor_z if floor_z is not None else np.nan,
            cell_feature=fm.embeddings[r, c], step=step,
            prev_rgb=np.stack([f.rgb for f in older]) if older else np.zeros((0,)),
            prev_depth=np.stack([np.asarray(f.depth, np.float32) for f in older]) if older else np.zeros((0,)),
            prev_T=np.stack([f.T_map_camera for f in older]) if older else np.zeros((0,)),
            stop_dist=min(b.distance_2d(x, y) for b in self.boxes),
            cand_dist=min(b.distance_2d(point[0], point[1]) for b in self.boxes), score=score, phrase_sim=gates[0], relative=gates[1],
            meta=json.dumps(self.meta))
        self.n += 1
        out = StopCheck("no" if self.n < self.per_episode else "yes", "collected", tuple(point), step)
        self.checks.append(out)
        return out

    def rejects(self, check) -> bool:
        return check.verdict == "no"


def collect(seeds, out: Path, max_steps: int, per_episode: int, threshold: float | None = None,
            phrase_floor: float | None = None, relative_margin: float | None = None) -> None:
    """``threshold`` / ``phrase_floor`` / ``relative_margin``: the explorer's detection rule (default:
    the calibrated one); a looser one records the moments a looser +verify rule would add (each with
    its grounded score, phrase similarity and relative margin, for ``eval --replay``)."""
    from personal.navigation.eval.pan import GoalGeometry
    from personal.navigation.eval.pan_run import build_loop, make_components
    from personal.navigation.loop import run_episode
    from personal.perception.splits import VAL_SEEDS, check_training_seeds
    from personal.sim.backends import make_backend
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene
    from personal.world.model import SPLITS

    check_training_seeds(list(seeds))  # validation households only
    out.mkdir(parents=True, exist_ok=True)
    comps = make_components("lit")
    sim = make_backend("synthetic")
    loop = build_loop("value-map-rpg-owner", comps, max_steps=max_steps)
    if threshold is not None:
        loop.policy.vcfg.threshold = threshold
    if phrase_floor is not None:
        loop.policy.scorer.phrase_floor = phrase_floor
    if relative_margin is not None:
        loop.policy.scorer.relative_margin = relative_margin
    loop.stop_verifier = CollectingVerifier(loop, out, per_episode)
    for seed in seeds:
        scene = generate_scene(seed)
        sim.load_scene(scene)
        for ep in generate_episodes(scene, SPLITS[(seed - VAL_SEEDS.start) % len(SPLITS)], 1, seed):
            loop.stop_verifier.boxes = GoalGeometry(sim, ep).boxes
            loop.stop_verifier.meta = {"episode_id": ep.episode_id, "seed": seed, "split": ep.split, "query": ep.query,
                                       "summary": ep.summary, "owner": ep.owner}
            traj = run_episode(sim, ep, loop)
            print(f"{ep.episode_id}: {loop.stop_verifier.n} moments, {traj.steps} steps", flush=True)


def load_moments(folder: Path):
    from personal.navigation.loop import Frame

    for f in sorted(folder.glob("*.npz")):
        z = np.load(f, allow_pickle=False)
        frame = Frame(tuple(z["pose"]), z["depth"], z["K"], z["T"], rgb=z["rgb"])
        prev = [Frame(tuple(z["pose"]), d, z["K"], T, rgb=rgb)
                for rgb, d, T in zip(z["prev_rgb"], z["prev_depth"], z["prev_T"])] if z["prev_rgb"].ndim == 4 else []
        floor_z = float(z["floor_z"])
        rule = tuple(float(z[k]) if k in z.files else np.inf for k in ("score", "phrase_sim", "relative"))
        yield f.stem, json.loads(str(z["meta"])), frame, prev, tuple(z["point"]), z["cell_feature"], \
            (None if np.isnan(floor_z) else floor_z), float(z["stop_dist"]), rule


def evaluate(folder: Path, min_score: float = -1.0, replay=(), **verifier_kw) -> dict:
    """Verdict counts on the moments whose grounded score is >= ``min_score``. ``replay``: detection
    rules (threshold, phrase floor, relative margin) to replay per episode — the first moment that
    passes the rule and that the verifier does not reject is the stop (an approximation: a tighter
    rule's search would not have approached the other candidates, so its later moments could differ)."""
    from personal.grounding.extract import make_extractor
    from personal.grounding.pipeline import query_owner
    from personal.navigation.eval.pan_run import make_components
    from personal.navigation.verify_stop import StopVerifier

    comps = make_components("lit")
    extractor = make_extractor("builtin")
    counts = {"right": Counter(), "wrong": Counter()}
    rows, episodes = [], {}
    for name, meta, frame, prev, point, cell_feature, floor_z, stop_dist, rule in load_moments(folder):
        episodes.setdefault(meta["episode_id"], [])
        score = rule[0]
        if score < min_score:
            continue
        kw = dict(verifier_kw)
        encoder = None if kw.pop("no_encoder", False) else comps.encoder  # no_encoder: the nearest proposal
        v = StopVerifier(encoder=encoder, **kw)
        v.prepare(meta["query"], extractor.extract(meta["summary"] or ""),
                  (meta["owner"] or "").strip() or query_owner(meta["query"]))
        for f in prev:
            v.observe(f)
        v.observe(frame)
        check = v.check(frame, point, floor_z, cell_feature=cell_feature)
        truth = "right" if stop_dist <= SUCCESS_RADIUS_M else "wrong"
        counts[truth][check.verdict] += 1
        episodes[meta["episode_id"]].append((rule, truth, v.rejects(check)))
        gaps = f"gap {v.last_gap}" if v.last_gap is not None else ""
        if v.last_instance_gap is not None:
            gaps += f" instance {v.last_instance_gap:+.3f}"
        rows.append((name, "score / phrase / relative " + " ".join(f"{x:.3f}" for x in rule), truth, check.verdict,
                     gaps, check.reason))
    for r in rows:
        print(*r, sep="\t")
    summary = {k: dict(c) for k, c in counts.items()}
    for r in replay:  # per episode (with moments): right / wrong stop / no stop
        def passes(rule):
            return all(x >= y for x, y in zip(rule, r))

        for label, verified in (("verified", True), ("plain", False)):
            summary[f"replay {r} ({label})"] = dict(Counter(
                next((truth for rule, truth, rejected in moments if passes(rule) and not (verified and rejected)), "no stop")
                for moments in episodes.values()))
    print(json.dumps(summary))
    return summary


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--seeds", default="20000-20017")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--max-steps", type=int, default=350)
    c.add_argument("--per-episode", type=int, default=6)
    c.add_argument("--threshold", type=float, default=None, help="detection threshold (default: calibrated)")
    c.add_argument("--phrase-floor", type=float, default=None, help="RPG phrase floor (default: calibrated)")
    c.add_argument("--relative-margin", type=float, default=None, help="RPG relative margin (default: calibrated)")
    e = sub.add_parser("eval")
    e.add_argument("folder", type=Path)
    e.add_argument("--kw", default="{}", help="StopVerifier keyword arguments as JSON")
    e.add_argument("--min-score", type=float, default=-1.0, help="only moments whose grounded score is at least this")
    e.add_argument("--replay", default="", help="detection rules to replay per episode: threshold[:floor[:margin]],...")
    a = p.parse_args()
    if a.cmd == "collect":
        collect(_seeds(a.seeds), a.out, a.max_steps, a.per_episode, a.threshold, a.phrase_floor, a.relative_margin)
    else:
        evaluate(a.folder, a.min_score, [tuple(float(x) for x in r.split(":")) for r in a.replay.split(",") if r],
                 **json.loads(a.kw))
