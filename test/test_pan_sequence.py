"""PAN request sequences: a later request in the same home keeps the map (memory) or starts blind
(scratch); both drive the same requests from the same start poses."""
import numpy as np

from personal.navigation.eval.pan_run import generate_pan_set, make_components
from personal.navigation.eval.pan_sequence import household_sequences, run_sequences, summarize_sequences, write_sequence_report
from personal.world.model import SPLITS


def _homes(n=1, seed=300):
    scenes, eps = generate_pan_set(n, SPLITS, 1, seed)
    return scenes, sorted(eps, key=lambda e: (e.scene_id, SPLITS.index(e.split)))


def test_sequences_take_distinct_targets_on_one_floor():
    scenes, eps = _homes(3)
    seqs = household_sequences(eps, 3)
    assert seqs
    for sid, seq in seqs.items():
        assert 2 <= len(seq) <= 3 and len({e.floor_id for e in seq}) == 1 and all(e.scene_id == sid for e in seq)
        targets = [set(e.target_object_ids) for e in seq]
        assert all(not (a & b) for i, a in enumerate(targets) for b in targets[i + 1:])


def test_memory_keeps_the_map_and_scratch_starts_blind(tmp_path):
    scenes, eps = _homes(1)
    comps = make_components("oracle")  # ORACLE captions: fast and deterministic, enough to test the plumbing
    seen_known = []
    import personal.navigation.loop as loop_mod

    real_reset = loop_mod.NavigationLoop.reset

    def spy(self, spec, keep_map=False):
        real_reset(self, spec, keep_map)
        seen_known.append((keep_map, int(np.count_nonzero(self.mapper.state() != -1))))

    loop_mod.NavigationLoop.reset = spy
    try:
        records = run_sequences(scenes, eps, "value-map-rpg-owner", comps, k=2, max_steps=40)
    finally:
        loop_mod.NavigationLoop.reset = real_reset
    assert [(r["position"], r["condition"]) for r in records] == [(1, "memory"), (1, "scratch"), (2, "memory"), (2, "scratch")]
    assert {k: v for k, v in records[0].items() if k != "condition"} == {k: v for k, v in records[1].items() if k != "condition"}
    # memory: the second request starts on the first one's map; scratch: on an empty one
    assert seen_known[0] == (False, 0) and seen_known[1][0] is True and seen_known[1][1] > 0 and seen_known[2] == (False, 0)
    summary = summarize_sequences(records)
    assert summary["later_requests"] == 1 and set(summary["memory"]) == {"sr", "spl", "steps"}
    report = write_sequence_report(tmp_path, records, {"method": "value-map-rpg-owner", "encoder": "oracle (ORACLE)"}).read_text()
    assert "| memory |" in report and "| scratch |" in report and "SPL memory / scratch" in report


def test_the_first_step_snapshot_does_not_follow_the_live_feature_map():
    """A kept map fuses new views into the same confidence array in place: the diagnosis's
    'start' must keep the values of the first step, not read the request's end."""
    from personal.navigation.eval.pan_sequence import _box_cells, frozen_maps
    from personal.navigation.scoring import ScoreMaps

    live = np.full((4, 4), 10.0, np.float32)
    maps = ScoreMaps(detect=np.zeros((4, 4)), guide=np.zeros((4, 4)), origin=(0.0, 0.0), resolution=1.0, confidence=live)
    start = frozen_maps(maps)
    live *= 50.0  # the request's views fused in place

    class Box:
        min, max = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)

    assert _box_cells(start, [Box()], 0.0)["conf"] == 10.0
    assert _box_cells(maps, [Box()], 0.0)["conf"] == 500.0
    assert frozen_maps(None) is None
