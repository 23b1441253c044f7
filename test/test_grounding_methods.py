"""POG grounding methods: RPG (Algorithm 1) on hand-built maps, QS vs RPG, numpy vs torch."""
import numpy as np
import pytest

from personal.grounding.methods import (
    GroundingFailure,
    GroundingInputs,
    dilate_numpy,
    make_method,
    nms_topk_numpy,
    parse_method_list,
    rpg_numpy,
    rpg_torch,
)

E = 4
BED = np.array([1.0, 0.0, 0.0, 0.0])
WHITE_BED = np.array([1.0, 0.0, 0.5, 0.0])  # Clara's bed (caption: white bed)
RED_BED = np.array([1.0, 0.1, 0.0, 0.0])  # Tom's bed (caption: red bed) — closer to a bare "bed" query
WALL = np.array([0.0, 0.0, 0.0, 1.0])


def two_bed_map():
    """7×7 map, 1 m cells, origin (-1, -2): white bed at cell (1, 1), red bed at (5, 5), walls elsewhere."""
    f = np.tile(WALL, (7, 7, 1)).astype(np.float32)
    f[1, 1] = WHITE_BED
    f[5, 5] = RED_BED
    valid = np.ones((7, 7), bool)
    valid[0, :] = False  # unobserved row
    return f, valid


def inputs(features, valid, phrases=None, people=(), query=BED, owner=None, seed=0):
    return GroundingInputs(
        features=features, valid=valid, origin=(-1.0, -2.0), resolution=1.0,
        phrases=None if phrases is None else np.asarray(phrases, np.float32),
        phrase_people=list(people), query=np.asarray(query, np.float32), owner=owner, seed=seed,
    )


def test_rpg_known_answer_and_qs_difference():
    f, valid = two_bed_map()
    # "Clara owns a white bed": only Clara's phrase is given, so only her bed's region is open
    clara = WHITE_BED + np.array([0, 0, 0.2, 0])
    inp = inputs(f, valid, phrases=[clara], people=["Clara"], owner="Clara")
    qs = make_method("qs").ground(inp)
    rpg = make_method("rpg", top_k=1, nhood=1, nms_r=1).ground(inp)
    assert qs.cells[0] == (5, 5)  # QS ignores the summary: the red bed matches "bed" best
    assert rpg.cells[0] == (1, 1)  # RPG gates to the phrase peak's 3×3 block
    assert rpg.points[0] == pytest.approx((-1 + 1.5, -2 + 1.5))  # cell centre in the map frame
    assert rpg.info["gate_cells"] == 6  # 3×3 block minus the unobserved row 0
    assert rpg.scores[0] == pytest.approx(float(WHITE_BED @ BED / np.linalg.norm(WHITE_BED)), rel=1e-5)
    # every other prediction stays inside the gate
    assert all(abs(r - 1) <= 1 and abs(c - 1) <= 1 for r, c in rpg.cells)


def test_rpg_owner_gates_only_the_queried_person():
    f, valid = two_bed_map()
    clara, tom = WHITE_BED + [0, 0, 0.2, 0], RED_BED + [0, 0.2, 0, 0]
    inp = inputs(f, valid, phrases=[clara, tom], people=["Clara", "Tom"], owner="Clara")
    rpg = make_method("rpg", top_k=1, nhood=1).ground(inp)
    owner = make_method("rpg-owner", top_k=1, nhood=1).ground(inp)
    assert rpg.cells[0] == (5, 5)  # both beds are gated; the query cannot tell them apart
    assert owner.cells[0] == (1, 1)  # only Clara's region is open
    inp.owner = "clara "  # names are matched case/space-insensitively
    assert make_method("rpg-owner", top_k=1, nhood=1).ground(inp).cells[0] == (1, 1)


def test_nms_topk_radius():
    s = np.array([[9, 8, 1, 7], [8, 0, 0, 0], [0, 0, 6, 0]], float)
    idx0, val0 = nms_topk_numpy(s, 3, 0)
    assert [tuple(i) for i in idx0] == [(0, 0), (0, 1), (1, 0)] and list(val0) == [9, 8, 8]
    idx1, val1 = nms_topk_numpy(s, 3, 1)
    assert [tuple(i) for i in idx1] == [(0, 0), (0, 3), (2, 2)] and list(val1) == [9, 7, 6]
    idx2, val2 = nms_topk_numpy(s, 3, 3)  # one window covers everything reachable
    assert tuple(idx2[0]) == (0, 0) and np.isneginf(val2[1:]).all() and (idx2[1:] == -1).all()


def test_dilate_square_neighbourhood():
    p = np.zeros((5, 5), bool)
    p[2, 2] = True
    assert dilate_numpy(p, 1).sum() == 9 and dilate_numpy(p, 2).sum() == 25 and dilate_numpy(p, 0).sum() == 1


def test_rpg_top_k_peaks_per_phrase():
    f, valid = two_bed_map()
    f[3, 1] = WHITE_BED * 0.9 + WALL * 0.1  # a second, weaker white-bed-like cell
    inp = inputs(f, valid, phrases=[WHITE_BED], people=["Clara"])
    one = make_method("rpg", top_k=1, nhood=0, nms_r=0).ground(inp)
    two = make_method("rpg", top_k=2, nhood=0, nms_r=0).ground(inp)
    assert one.info["gate_cells"] == 1 and two.info["gate_cells"] == 2
    assert set(two.cells) == {(1, 1), (3, 1)}


def random_batch(b=3, h=11, w=9, e=16, k=4, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((b, h, w, e)).astype(np.float32)
    valid = rng.random((b, h, w)) > 0.25
    d = rng.standard_normal((b, k, e)).astype(np.float32)
    pm = rng.random((b, k)) > 0.3
    pm[:, 0] = True
    q = rng.standard_normal((b, e)).astype(np.float32)
    return f, valid, d, pm, q


@pytest.mark.parametrize("params", [dict(top_k=3, nhood=1, nms_r=1), dict(top_k=1, nhood=0, nms_r=0), dict(top_k=5, nhood=2, nms_r=2)])
def test_numpy_and_torch_agree(params):
    f, valid, d, pm, q = random_batch()
    v_np, m_np = rpg_numpy(f, valid, d, pm, q, **params)
    v_t, m_t = rpg_torch(f, valid, d, pm, q, **params)
    assert (m_np == m_t).all()
    assert (np.isneginf(v_np) == np.isneginf(v_t)).all()
    fin = np.isfinite(v_np)
    np.testing.assert_allclose(v_np[fin], v_t[fin], rtol=1e-5, atol=1e-6)
    for name in ("qs", "rpg", "rpg-owner"):
        inp = inputs(f[0], valid[0], phrases=d[0], people=["A"] * d.shape[1], query=q[0], owner="A")
        a = make_method(name, backend="numpy").ground(inp)
        inp.feature_norms = None
        b = make_method(name, backend="torch").ground(inp)
        assert a.cells == b.cells
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-5)


def test_batched_equals_single():
    f, valid, d, pm, q = random_batch(b=4)
    v, m = rpg_numpy(f, valid, d, pm, q)
    for i in range(4):
        vi, mi = rpg_numpy(f[i : i + 1], valid[i : i + 1], d[i : i + 1], pm[i : i + 1], q[i : i + 1])
        assert (mi[0] == m[i]).all()
        np.testing.assert_array_equal(vi[0], v[i])


def test_rpg_gate_respects_phrase_mask():
    f, valid, d, pm, q = random_batch(b=1)
    all_on = np.ones_like(pm)
    _, m_all = rpg_numpy(f, valid, d, all_on, q, top_k=1, nhood=0)
    _, m_one = rpg_numpy(f, valid, d, np.eye(1, d.shape[1], dtype=bool), q, top_k=1, nhood=0)
    assert m_one.sum() == 1 and m_all.sum() >= m_one.sum() and (m_all | m_one == m_all).all()


def test_unobserved_cells_never_predicted():
    f, valid = two_bed_map()
    f[0, 3] = BED  # perfect match, but in the unobserved row
    inp = inputs(f, valid, phrases=[BED], people=["Clara"], owner="Clara")
    for name in ("random", "qs", "rpg", "rpg-owner"):
        g = make_method(name).ground(inp)
        assert all(valid[r, c] for r, c in g.cells), name


def test_top3_predictions_are_separated():
    f, valid = two_bed_map()
    inp = inputs(f, valid)
    g = make_method("qs", pred_sep_m=2.0).ground(inp)
    for i, (r, c) in enumerate(g.cells):
        for r2, c2 in g.cells[i + 1 :]:
            assert max(abs(r - r2), abs(c - c2)) >= 2
    assert len(g.cells) == 3 and g.scores == sorted(g.scores, reverse=True)


def test_random_is_seeded_and_inside_observed_cells():
    f, valid = two_bed_map()
    a = make_method("random").ground(inputs(f, valid, seed=5))
    b = make_method("random").ground(inputs(f, valid, seed=5))
    c = make_method("random").ground(inputs(f, valid, seed=6))
    assert a.points == b.points and a.points != c.points
    for (r, col), (x, y) in zip(a.cells, a.points):
        assert valid[r, col]
        assert -1 + col <= x <= -1 + col + 1 and -2 + r <= y <= -2 + r + 1


def test_centre_of_observed_part():
    f, valid = two_bed_map()
    g = make_method("centre").ground(inputs(f, valid))
    # observed rows 1..6, cols 0..6 -> x in [-1, 6], y in [-1, 5]
    assert g.points == [(2.5, 2.0)]
    assert make_method("center", of="grid").ground(inputs(f, valid)).points == [(2.5, 1.5)]


@pytest.mark.parametrize("name", ["random", "centre", "qs", "rpg", "rpg-owner"])
def test_empty_map_is_a_typed_failure(name):
    f, valid = two_bed_map()
    for feats, mask in ((f, np.zeros_like(valid)), (np.zeros((0, 0, E), np.float32), np.zeros((0, 0), bool))):
        with pytest.raises(GroundingFailure) as exc:
            make_method(name).ground(inputs(feats, mask, phrases=[BED], people=["Clara"], owner="Clara"))
        assert exc.value.code == "empty_map" and exc.value.reason


def test_no_phrases_and_bad_vectors_fail_with_reason():
    f, valid = two_bed_map()
    for phrases in (None, np.zeros((0, E))):
        with pytest.raises(GroundingFailure, match="no ownership phrases"):
            make_method("rpg").ground(inputs(f, valid, phrases=phrases))
    with pytest.raises(GroundingFailure) as exc:
        make_method("rpg-owner").ground(inputs(f, valid, phrases=[BED], people=["Tom"], owner="Clara"))
    assert exc.value.code == "unknown_person" and "Clara" in exc.value.reason
    with pytest.raises(GroundingFailure) as exc:
        make_method("qs").ground(inputs(f, valid, query=np.zeros(3)))
    assert exc.value.code == "dim_mismatch"
    with pytest.raises(GroundingFailure) as exc:
        make_method("qs").ground(inputs(f, valid, query=np.zeros(E)))
    assert exc.value.code == "bad_query"
    # QS needs no phrases at all
    assert make_method("qs").ground(inputs(f, valid)).cells


def test_registry_and_params():
    m = make_method("RPG", top_k=2, nhood=0, nms_r=3, backend="torch")
    assert m.params() == {"n_predictions": 3, "pred_sep_m": 1.0, "top_k": 2, "nhood": 0, "nms_r": 3, "backend": "torch"}
    assert parse_method_list("random, centre,qs,rpg,rpg_owner") == ["random", "centre", "qs", "rpg", "rpg-owner"]
    with pytest.raises(ValueError, match="unknown grounding method 'foo'"):
        make_method("foo")
    with pytest.raises(ValueError):
        make_method("rpg", top_k=0)
    with pytest.raises(ValueError):
        make_method("qs", backend="jax")


# -- scene-relative RPG (beyond the paper) ---------------------------------------------------

MUG, LAMP, SOFA, WALL7, NAME_CLARA, NAME_TOM, NOISE = np.eye(7)


def _unit(v):
    return v / np.linalg.norm(v)


def scene_map():
    """5×5 map, 1 m cells: Clara's mug seen noisily at (1, 1) (closest to the mug phrase of all
    descriptions, with some wall in it), a blurred cell at (3, 3) (an even mix of every described
    object: closer to the query by cosine than the mug cell, but it prefers no description),
    walls elsewhere."""
    f = np.tile(WALL7, (5, 5, 1)).astype(np.float32)
    f[1, 1] = MUG + 1.5 * NOISE + 0.3 * WALL7
    f[3, 3] = MUG + LAMP + SOFA
    return f, np.ones((5, 5), bool)


def scene_inputs(f, valid, owner="Clara", context=True):
    phrases = np.array([MUG + NAME_CLARA, LAMP + NAME_CLARA, SOFA + NAME_TOM], np.float32)
    return GroundingInputs(
        features=f, valid=valid, origin=(0.0, 0.0), resolution=1.0, phrases=phrases,
        phrase_people=["Clara", "Clara", "Tom"], query=(MUG + NAME_CLARA).astype(np.float32), owner=owner,
        context=np.array([WALL7], np.float32) if context else None,
    )


def test_scene_relative_rpg_prefers_the_cell_that_prefers_the_query_phrase():
    f, valid = scene_map()
    inp = scene_inputs(f, valid)
    # the paper's cosine RPG is drawn to the blurred cell (cos 0.408 vs 0.387 for the mug cell)
    assert make_method("rpg", top_k=3, nhood=0).ground(inp).cells[0] == (3, 3)
    scene = make_method("rpg-scene", top_k=3, nhood=0)
    out = scene.ground(inp)
    assert out.cells[0] == (1, 1)
    # the score is the cell's softmax share (tau 0.2) of the phrases the query is about: a = softmax of
    # cos(query, phrase) / 0.02, which is one-hot on the mug phrase to float precision
    texts = np.array([_unit(MUG + NAME_CLARA), _unit(LAMP + NAME_CLARA), _unit(SOFA + NAME_TOM), WALL7])
    s = texts @ _unit(f[1, 1])
    p = np.exp(s / 0.2) / np.exp(s / 0.2).sum()
    assert out.scores[0] == pytest.approx(p[0], rel=1e-4)
    # the structure texts take their share: without them the mug cell's share is larger
    assert scene.ground(scene_inputs(f, valid, context=False)).scores[0] > out.scores[0] + 0.1


def test_scene_relative_owner_routes_only_to_the_queried_person():
    f, valid = scene_map()
    f[3, 3] = SOFA  # Tom's sofa, clearly seen
    inp = scene_inputs(f, valid, owner="Tom")
    inp.query = (MUG + 0.5 * NAME_TOM).astype(np.float32)  # "Tom's mug": Tom owns only the sofa
    assert make_method("rpg-scene", nhood=0).ground(inp).cells[0] == (1, 1)  # nearest phrase by text: the mug
    assert make_method("rpg-owner-scene", nhood=0).ground(inp).cells[0] == (3, 3)  # only Tom's phrases count
    with pytest.raises(GroundingFailure) as exc:
        make_method("rpg-owner-scene").ground(scene_inputs(f, valid, owner="Ann"))
    assert exc.value.code == "unknown_person"
    with pytest.raises(ValueError):
        make_method("rpg-scene", tau=0)
    assert make_method("rpg_owner_scene").params()["tau"] == 0.2


def test_scene_relative_compares_cells_with_the_object_part_of_each_phrase():
    f, valid = scene_map()
    inp = scene_inputs(f, valid)
    by_phrase = make_method("rpg-scene", nhood=0).ground(inp)
    # the cameras see objects, not owners: with the object parts given, the cell side uses them
    inp.phrase_objects = np.array([MUG, LAMP, SOFA], np.float32)
    out = make_method("rpg-scene", nhood=0).ground(inp)
    assert out.cells[0] == (1, 1)
    s = np.array([MUG, LAMP, SOFA, WALL7]) @ _unit(f[1, 1])
    p = np.exp(s / 0.2) / np.exp(s / 0.2).sum()
    assert out.scores[0] == pytest.approx(p[0], rel=1e-4)
    assert out.scores[0] > by_phrase.scores[0] + 0.05  # the names no longer dilute the mug's share
    inp.phrase_objects = inp.phrase_objects[:2]
    with pytest.raises(GroundingFailure) as exc:
        make_method("rpg-scene").ground(inp)
    assert exc.value.code == "bad_phrases"
