"""PersONAL-style personalized episodes on a generated household.

An episode names some people, gives them objects (the ownership matrix A,
people x objects), states every ownership relation in a natural-language scene
summary, and asks for one owner's object ("Find Lisa's backpack." or, when the
owner has several instances of the category, "Find one of Julia's beds.").

Split constraints (PersONAL, with r_i = sum_j A_ij objects of person i and
c_j = sum_i A_ij owners of object j, M people, N objects):
  easy:   for all i r_i = 1; for all j c_j = 1; M = N
  medium: for all i r_i >= 1; for all j c_j = 1; exists i r_i > 1
  hard:   for all i r_i >= 1; for all j c_j >= 1; exists i r_i > 1; exists j c_j > 1
"""
from __future__ import annotations

import dataclasses
import math
import random
import re

import numpy as np
from scipy import ndimage

from personal.world import catalog
from personal.world import summary_style as styles
from personal.world.generator import AGENT_RADIUS, is_navigable, occupancy_grid
from personal.world.model import SPLITS, Episode, Scene, SceneObject

CAMERA_HEIGHT = 0.88
START_CLEARANCE = 0.4
VIEWPOINT_MAX_DIST = 1.0  # PersONAL keeps view points within 1 m of the object

NAMES = (
    "Lisa", "James", "Julia", "Tom", "Anna", "Marco", "Sofia", "Leo", "Emma", "Noah", "Clara", "Lucas",
    "Mia", "Oliver", "Linda", "David", "Sara", "Paul", "Nina", "Victor", "Elena", "Hugo", "Grace", "Ivan",
    "Chloe", "Omar", "Maya", "Felix", "Ruth", "Diego", "Hannah", "Samuel", "Irene", "Theo", "Alice", "Ben",
    "Zoe", "Kai", "Lily", "Adam", "Rosa", "Ethan", "Vera", "Jonas", "Amara", "Pietro", "Yuki", "Filippo",
)

SINGLE_TEMPLATES = (
    "{p} owns the {o} in the {r}.",
    "The {o} in the {r} belongs to {p}.",
    "The {o} in the {r} is {p}'s.",
    "In the {r}, the {o} belongs to {p}.",
    "{p} is the owner of the {o} in the {r}.",
    "The {o} in the {r} is owned by {p}.",
)
PAIR_TEMPLATES = (  # one person, two objects
    "{p} owns the {o1} in the {r1} and the {o2} in the {r2}.",
    "Both the {o1} in the {r1} and the {o2} in the {r2} belong to {p}.",
)
SHARED_TEMPLATES = (  # several owners, one object
    "{ps} share the {o} in the {r}.",
    "The {o} in the {r} is shared by {ps}.",
    "{ps} both own the {o} in the {r}.",  # only used for two owners
    "The {o} in the {r} belongs to both {ps}.",  # only used for two owners
)
PREAMBLES = (
    "{n} people live in this home: {ps}.",
    "The people in this house are {ps}.",
    "",
)


# ---------------------------------------------------------------- constraints
def ownership_matrix(ownership: dict[str, list[str]]) -> tuple[list[str], list[str], np.ndarray]:
    """(people, objects, A) with A[i, j] = 1 when person i owns object j."""
    people = list(ownership)
    objects = sorted({o for objs in ownership.values() for o in objs})
    a = np.zeros((len(people), len(objects)), dtype=int)
    for i, p in enumerate(people):
        for o in ownership[p]:
            a[i, objects.index(o)] = 1
    return people, objects, a


def check_split_constraints(ownership: dict[str, list[str]], split: str) -> None:
    """Raise ValueError naming the violated PersONAL constraint (see module doc)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    for p, objs in ownership.items():
        if len(set(objs)) != len(objs):
            raise ValueError(f"{split}: person {p!r} lists an object twice: {objs}")
    people, objects, a = ownership_matrix(ownership)
    if not people or not objects:
        raise ValueError(f"{split}: empty ownership matrix")
    r, c = a.sum(axis=1), a.sum(axis=0)
    m, n = len(people), len(objects)

    def fail(what):
        raise ValueError(f"{split} split violated: {what} (r={dict(zip(people, r.tolist()))}, c={dict(zip(objects, c.tolist()))})")

    if split == "easy":
        if not (r == 1).all():
            fail("every person must own exactly one object (r_i = 1)")
        if not (c == 1).all():
            fail("every object must have exactly one owner (c_j = 1)")
        if m != n:
            fail(f"M = N required, got M={m} people, N={n} objects")
    elif split == "medium":
        if not (r >= 1).all():
            fail("every person must own at least one object (r_i >= 1)")
        if not (c == 1).all():
            fail("every object must have exactly one owner (c_j = 1)")
        if not (r > 1).any():
            fail("some person must own several objects (exists r_i > 1)")
    else:
        if not (r >= 1).all():
            fail("every person must own at least one object (r_i >= 1)")
        if not (c >= 1).all():
            fail("every object must have an owner (c_j >= 1)")
        if not (r > 1).any():
            fail("some person must own several objects (exists r_i > 1)")
        if not (c > 1).any():
            fail("some object must be shared (exists c_j > 1)")


def _sample_graph(rng: random.Random, split: str, n_people: int, n_objects: int) -> list[tuple[int, int]]:
    """Edges (person, object) of an ownership graph meeting the split constraints."""
    if split == "easy":
        perm = list(range(n_objects))
        rng.shuffle(perm)
        return [(i, perm[i]) for i in range(n_people)]
    edges = set()
    objs = list(range(n_objects))
    rng.shuffle(objs)
    for i in range(n_people):  # everyone owns something
        edges.add((i, objs[i % n_objects]))
    for j in objs[n_people:]:  # every object gets an owner
        edges.add((rng.randrange(n_people), j))
    if split == "hard":
        target = max(len(edges) + 2, round(0.42 * n_people * n_objects))
        while len(edges) < target:
            edges.add((rng.randrange(n_people), rng.randrange(n_objects)))
        owners = lambda j: sum(1 for e in edges if e[1] == j)  # noqa: E731
        if not any(owners(j) > 1 for j in range(n_objects)):
            j = rng.randrange(n_objects)
            edges.add((next(i for i in range(n_people) if (i, j) not in edges), j))
    counts = [sum(1 for e in edges if e[0] == i) for i in range(n_people)]
    if max(counts) < 2:  # someone must own several objects
        i = rng.randrange(n_people)
        j = next(j for j in range(n_objects) if (i, j) not in edges and (split == "hard" or not any(e[1] == j for e in edges)))
        edges.add((i, j))
    return sorted(edges)


# ---------------------------------------------------------------- language
def join_names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def object_phrase(obj: SceneObject) -> str:
    """Caption without the leading article: "red backpack under the desk"."""
    return re.sub(r"^(the|a|an) ", "", obj.caption)


def room_name(scene: Scene, obj: SceneObject) -> str:
    return scene.room(obj.room_id).name


def substitute_names(template: str, people: list[str]) -> str:
    """Replace <person1>, <person2>... by names (PersONAL writes placeholders first)."""
    def repl(m):
        k = int(m.group(1))
        if not 1 <= k <= len(people):
            raise ValueError(f"placeholder <person{k}> has no name (only {len(people)} people)")
        return people[k - 1]
    return re.sub(r"<person(\d+)>", repl, template)


def summary_template(rng: random.Random, scene: Scene, people: list[str], ownership: dict[str, list[str]],
                     describe=None) -> str:
    """Scene summary with <personK> placeholders stating every ownership relation once; objects
    are named by ``describe(obj)`` (default: the caption without its article)."""
    describe = describe or object_phrase
    ph = {p: f"<person{k + 1}>" for k, p in enumerate(people)}
    owners: dict[str, list[str]] = {}
    for p in people:
        for o in ownership[p]:
            owners.setdefault(o, []).append(p)
    sentences, single_left = [], {}
    for oid, ps in owners.items():
        obj = scene.object(oid)
        o, r = describe(obj), room_name(scene, obj)
        if len(ps) > 1:
            choices = SHARED_TEMPLATES if len(ps) == 2 else SHARED_TEMPLATES[:2]
            sentences.append(rng.choice(choices).format(ps=join_names([ph[p] for p in ps]), o=o, r=r))
        else:
            single_left.setdefault(ps[0], []).append((o, r))
    for p, items in single_left.items():
        rng.shuffle(items)
        while items:
            if len(items) >= 2 and rng.random() < 0.5:
                (o1, r1), (o2, r2) = items.pop(), items.pop()
                sentences.append(rng.choice(PAIR_TEMPLATES).format(p=ph[p], o1=o1, r1=r1, o2=o2, r2=r2))
            else:
                o, r = items.pop()
                sentences.append(rng.choice(SINGLE_TEMPLATES).format(p=ph[p], o=o, r=r))
    rng.shuffle(sentences)
    pre = rng.choice(PREAMBLES).format(n=len(people), ps=join_names([ph[p] for p in people]))
    text = " ".join(s[0].upper() + s[1:] for s in sentences)
    return f"{pre} {text}".strip()


def extracted_phrases(scene: Scene, ownership: dict[str, list[str]]) -> list[str]:
    """One "<name> owns the <object> in the <room>" phrase per ownership relation."""
    return [
        f"{p} owns the {object_phrase(scene.object(o))} in the {room_name(scene, scene.object(o))}"
        for p, objs in ownership.items() for o in objs
    ]


def make_query(owner: str, category: str, n_targets: int) -> str:
    if n_targets > 1:
        return f"Find one of {owner}'s {catalog.category(category).plural_name}."
    return f"Find {owner}'s {category}."


# ---------------------------------------------------------------- poses
class FloorNav:
    """Reachable region of one floor (largest free component of the grid inflated by the
    agent radius) plus line-of-sight blockers, with a per-object view-point cache."""

    def __init__(self, scene: Scene, floor: int):
        self.scene, self.floor = scene, floor
        self.z = next(f.z for f in scene.floors if f.index == floor)
        self.blocked, self.origin = occupancy_grid(scene, floor, inflate=AGENT_RADIUS)
        labels, _ = ndimage.label(~self.blocked)
        sizes = np.bincount(labels.ravel())
        sizes[0] = 0
        self.main = labels == sizes.argmax()
        walls = [w.box for w in scene.walls if w.box.min[2] < self.z + scene.floors[0].height and w.box.max[2] > self.z]
        furn = [o for o in scene.objects if o.floor == floor and o.is_furniture]
        boxes = walls + [o.box for o in furn]
        self.block_lo = np.array([b.min for b in boxes], dtype=float)
        self.block_hi = np.array([b.max for b in boxes], dtype=float)
        self.block_iid = np.array([0] * len(walls) + [o.instance_id for o in furn], dtype=int)
        self._views: dict[str, list[dict]] = {}

    def reachable(self, x: float, y: float) -> bool:
        i, j = int((x - self.origin[0]) / 0.05), int((y - self.origin[1]) / 0.05)
        return 0 <= i < self.main.shape[0] and 0 <= j < self.main.shape[1] and bool(self.main[i, j])

    def view_points(self, obj: SceneObject) -> list[dict]:
        if obj.object_id not in self._views:
            self._views[obj.object_id] = goal_view_points(self.scene, obj, self)
        return self._views[obj.object_id]


_FloorNav = FloorNav  # backward-compatible private name


def _segments_blocked(eye: np.ndarray, pts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each segment eye->pts[k], whether it passes through any box (slab test, vectorised).
    Touching a box only at the far end does not count (the target may rest on it)."""
    d = pts[:, None, :] - eye[None, None, :]  # (P, 1, 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t_a = (lo[None] - eye) * inv
        t_b = (hi[None] - eye) * inv
    t_near = np.where(np.isnan(t_a), -np.inf, np.minimum(t_a, t_b))
    t_far = np.where(np.isnan(t_b), np.inf, np.maximum(t_a, t_b))
    # parallel axes: inside the slab -> (-inf, inf), outside -> empty
    parallel = np.abs(d) < 1e-12
    inside = (eye >= lo[None]) & (eye <= hi[None])
    t_near = np.where(parallel, np.where(inside, -np.inf, np.inf), t_near)
    t_far = np.where(parallel, np.where(inside, np.inf, -np.inf), t_far)
    t0 = np.maximum(t_near.max(axis=2), 0.0)
    t1 = np.minimum(t_far.min(axis=2), 1.0)
    return ((t0 <= t1) & (t0 < 0.999)).any(axis=1)


def visible_fraction(scene: Scene, obj: SceneObject, x: float, y: float, nav: FloorNav | None = None) -> float:
    """Share of 5 points on the object (centre + 4 points near its top) seen unobstructed
    by walls or other furniture from a camera at (x, y, floor + 0.88). A cheap visibility
    proxy, not a mask IoU."""
    nav = nav or FloorNav(scene, obj.floor)
    eye = np.array([x, y, nav.z + CAMERA_HEIGHT])
    b = obj.box
    pts = np.array([b.center] + [
        [b.center[0] + sx * b.size[0] * 0.4, b.center[1] + sy * b.size[1] * 0.4, b.max[2] - 0.01]
        for sx in (-1, 1) for sy in (-1, 1)
    ])
    keep = nav.block_iid != obj.instance_id
    blocked = _segments_blocked(eye, pts, nav.block_lo[keep], nav.block_hi[keep])
    return float((~blocked).mean())


def goal_view_points(scene: Scene, obj: SceneObject, nav: FloorNav | None = None, max_points: int = 8) -> list[dict]:
    """Reachable points within 1 m of the object's footprint that see it; each
    {"position": (x, y, z_floor), "yaw": facing the object, "visible_fraction": f}.
    Candidates lie on a 10 cm lattice; per 22.5° sector the one nearest 0.6 m is tried first."""
    nav = nav or FloorNav(scene, obj.floor)
    cx, cy = obj.box.center[0], obj.box.center[1]
    lo, hi = obj.box.min, obj.box.max
    xs = np.round(np.arange(math.floor((lo[0] - 1.0) * 10), math.ceil((hi[0] + 1.0) * 10) + 1) / 10, 3)
    ys = np.round(np.arange(math.floor((lo[1] - 1.0) * 10), math.ceil((hi[1] + 1.0) * 10) + 1) / 10, 3)
    buckets: dict[int, list[tuple[float, float, float]]] = {}
    for x in xs:
        for y in ys:
            d = obj.box.distance_2d(float(x), float(y))
            if 0.05 < d <= VIEWPOINT_MAX_DIST and nav.reachable(float(x), float(y)):
                sector = int((math.atan2(y - cy, x - cx) + math.pi) / (math.pi / 8)) % 16
                buckets.setdefault(sector, []).append((abs(d - 0.6), float(x), float(y)))
    for bucket in buckets.values():
        bucket.sort()
    candidates = [bucket[k][1:] for k in range(3) for _, bucket in sorted(buckets.items()) if k < len(bucket)]
    out = []
    for x, y in candidates:
        vis = visible_fraction(scene, obj, x, y, nav)
        if vis > 0:
            out.append({"position": (x, y, nav.z), "yaw": math.atan2(cy - y, cx - x), "visible_fraction": vis})
    out.sort(key=lambda v: -v["visible_fraction"])
    return out[:max_points]


def _start_pose(rng: random.Random, scene: Scene, nav: FloorNav, targets: list[SceneObject]):
    floor = targets[0].floor
    rooms = [r for r in scene.rooms if r.floor == floor]
    target_rooms = {t.room_id for t in targets}
    others = [r for r in rooms if r.room_id not in target_rooms] or rooms
    for attempt in range(400):
        room = rng.choice(others if attempt < 300 else rooms)
        x0, y0, x1, y1 = room.bounds
        x, y = round(rng.uniform(x0, x1), 3), round(rng.uniform(y0, y1), 3)  # round before checking
        if not is_navigable(scene, floor, x, y, START_CLEARANCE) or not nav.reachable(x, y):
            continue
        if min(t.box.distance_2d(x, y) for t in targets) < 1.5:
            continue
        z = next(f.z for f in scene.floors if f.index == floor)
        yaw = round(rng.uniform(-math.pi, math.pi), 4)
        return (x, y, z), yaw
    raise RuntimeError(f"scene {scene.scene_id}: no navigable start pose found on floor {floor}")


# ---------------------------------------------------------------- episodes
def _people_and_objects(split: str, rng: random.Random) -> tuple[int, int]:
    if split == "easy":
        m = rng.randint(3, 6)
        return m, m
    # sizes close to PersONAL Table III (people / objects: easy 4.5/4.5, medium 4.4/6.1, hard 6.3/6.4)
    if split == "medium":
        m = rng.randint(3, 6)
        return m, rng.randint(m + 1, m + 3)
    return rng.randint(4, 8), rng.randint(5, 8)


def _pick_objects(rng, candidates: list[SceneObject], n: int, want_pair: bool, viewable) -> tuple[list[SceneObject], tuple | None]:
    """n distinct objects; with want_pair, two viewable ones share a category (for "one of" queries)."""
    by_cat: dict[str, list[SceneObject]] = {}
    for o in candidates:
        by_cat.setdefault(o.category, []).append(o)
    pair = None
    chosen: list[SceneObject] = []
    if want_pair and n >= 2:
        multi = [c for c, objs in sorted(by_cat.items()) if len(objs) >= 2]
        rng.shuffle(multi)
        for c in multi:
            ok = [o for o in by_cat[c] if viewable(o)]
            if len(ok) >= 2:
                pair = tuple(rng.sample(ok, 2))
                chosen.extend(pair)
                break
    rest = [o for o in candidates if o not in chosen]
    chosen.extend(rng.sample(rest, n - len(chosen)))
    rng.shuffle(chosen)
    return chosen, pair


LOOKALIKE_SCENE_PREFIX = "hm3dsize_"  # HM3D-sized households (generator preset "hm3d")
LOOKALIKE_RATE = 0.5


def _with_lookalike(rng, objects: list[SceneObject], candidates: list[SceneObject], pair) -> list[SceneObject]:
    """Swap one listed object for another instance of a listed object's category, so the
    summary names two same-category objects (owned by different people unless the ownership
    draw gives both to one): personal grounding's hard case, common in large homes."""
    fixed = {o.object_id for o in pair or ()}
    chosen = {o.object_id for o in objects}
    options = [(o, c) for o in objects for c in candidates
               if c.category == o.category and c.object_id not in chosen]
    if not options:
        return objects
    keep, extra = options[rng.randrange(len(options))]
    out_options = [o for o in objects if o is not keep and o.object_id not in fixed]
    if not out_options:
        return objects
    drop = out_options[rng.randrange(len(out_options))]
    return [extra if o is drop else o for o in objects]


def _ownership(rng, split, people, objects, pair):
    """Ownership dict meeting the split; with a pair, one person owns both (returns that person)."""
    m, n = len(people), len(objects)
    edges = _sample_graph(rng, split, m, n)
    pair_owner = None
    if pair is not None:  # resample until one person owns both instances of the pair
        ja, jb = objects.index(pair[0]), objects.index(pair[1])
        for _ in range(500):
            common = {i for i, j in edges if j == ja} & {i for i, j in edges if j == jb}
            if common:
                pair_owner = people[rng.choice(sorted(common))]
                break
            edges = _sample_graph(rng, split, m, n)
    ownership = {p: [objects[j].object_id for (i, j) in edges if i == k] for k, p in enumerate(people)}
    return ownership, pair_owner


def generate_episode(scene: Scene, split: str, episode_index: int, rng: random.Random, navs: dict | None = None) -> Episode:
    """One episode. Query targets always have a reachable, visible view point within 1 m
    (otherwise success would be impossible); other owned objects may be anywhere."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    navs = navs if navs is not None else {}
    for _attempt in range(50):
        floor = rng.choice([f.index for f in scene.floors])
        nav = navs.get((scene.scene_id, floor))
        if nav is None:
            nav = navs[(scene.scene_id, floor)] = FloorNav(scene, floor)
        viewable = lambda o: bool(nav.view_points(o))  # noqa: E731
        candidates = [o for o in scene.objects if o.floor == floor and o.attributes.get("caption_unique", True)]
        m, n = _people_and_objects(split, rng)
        n = min(n, len(candidates))
        people = rng.sample(NAMES, m)
        objects, pair = _pick_objects(rng, candidates, n, split != "easy" and rng.random() < 0.4, viewable)
        if scene.scene_id.startswith(LOOKALIKE_SCENE_PREFIX) and rng.random() < LOOKALIKE_RATE:
            objects = _with_lookalike(rng, objects, candidates, pair)
        ownership, pair_owner = _ownership(rng, split, people, objects, pair)
        check_split_constraints(ownership, split)
        # query: an owner and a category; targets = all of the owner's objects of that category
        if pair_owner is not None:
            owner, category = pair_owner, pair[0].category
        else:
            options = sorted({(p, scene.object(o).category) for p in people for o in ownership[p]})
            rng.shuffle(options)
            options = [(p, c) for p, c in options
                       if all(viewable(scene.object(o)) for o in ownership[p] if scene.object(o).category == c)]
            if not options:
                continue
            owner, category = options[0]
        targets = [scene.object(o) for o in ownership[owner] if scene.object(o).category == category]
        start, yaw = _start_pose(rng, scene, nav, targets)
        summary = substitute_names(summary_template(rng, scene, people, ownership), people)
        return Episode(
            episode_id=f"{scene.scene_id}_{split}_{episode_index:03d}",
            scene_id=scene.scene_id, split=split, people=people, ownership=ownership, owner=owner,
            target_object_ids=[t.object_id for t in targets], object_category=category,
            query=make_query(owner, category, len(targets)), summary=summary,
            extracted_summary=extracted_phrases(scene, ownership), description=[t.caption for t in targets],
            start_position=start, start_yaw=yaw, floor_id=floor, geodesic_distance=float("nan"),
        )
    raise RuntimeError(f"scene {scene.scene_id}: could not build a {split} episode with a reachable target")


def generate_episodes(scene: Scene, split: str, n_episodes: int, seed: int, summary_style: str = "verbatim") -> list[Episode]:
    """``n_episodes`` episodes of ``split`` in ``scene`` (deterministic for the seed). With
    ``summary_style="varied"`` the same episodes, their summaries in other words
    (``personal.world.summary_style``)."""
    styles.check_summary_style(summary_style)
    rng = random.Random(f"{scene.scene_id}:{split}:{seed}")
    navs: dict = {}
    episodes = [generate_episode(scene, split, k, rng, navs) for k in range(n_episodes)]
    return [varied_episode(scene, e) for e in episodes] if summary_style == "varied" else episodes


def varied_episode(scene: Scene, episode: Episode) -> Episode:
    """``episode`` with its summary (and its ``extracted_summary`` phrases) in other words: the same
    people, ownership, sentence templates, query and targets; only the object descriptions differ.
    Seeded by the episode id, so the verbatim episode stream is untouched."""
    rng = random.Random(f"{episode.episode_id}:varied")
    owned = sorted({o for objs in episode.ownership.values() for o in objs})
    words = {oid: styles.varied_description(scene, scene.object(oid), rng) for oid in owned}
    template = summary_template(rng, scene, episode.people, episode.ownership, describe=lambda o: words[o.object_id])
    extracted = [f"{p} owns the {words[o]} in the {room_name(scene, scene.object(o))}"
                 for p, objs in episode.ownership.items() for o in objs]
    return dataclasses.replace(episode, summary=substitute_names(template, episode.people), extracted_summary=extracted)


def straight_line_distance(scene: Scene, episode: Episode) -> float:
    """Euclidean distance from the start to the nearest target footprint: a lower bound
    on the geodesic distance (which the simulator computes)."""
    x, y, _ = episode.start_position
    return min(scene.object(o).box.distance_2d(x, y) for o in episode.target_object_ids)
