"""Value-map detection thresholds are chosen per encoder, on validation households."""
import pytest

from personal.navigation.thresholds import BY_ENCODER, ORACLE_THRESHOLDS, thresholds_for
from personal.world.model import Box


def _components(name):
    from pan_fakes import BagOfWordsModel

    from personal.navigation.eval.pan_run import PanComponents
    from personal.grounding.extract import make_extractor
    from personal.grounding.pipeline import TextEmbedder
    from personal.models.oracle import OracleCaptionEncoder

    class Named(OracleCaptionEncoder):  # only the name matters for the thresholds
        pass

    enc = Named({1: "a red mug"}, model=BagOfWordsModel())
    if name is not None:
        Named.name = name
    return PanComponents(enc, TextEmbedder(enc), make_extractor("builtin"))


@pytest.mark.parametrize("policy", ["value-map-qs", "value-map-rpg-owner"])
def test_each_encoder_gets_its_own_detection_thresholds(policy):
    from personal.navigation.eval.pan_run import build_loop

    lit = thresholds_for("lit:lit-minilm-household")
    assert lit.calibrated and "20000" in lit.source
    assert (lit.threshold, lit.phrase_floor) != (ORACLE_THRESHOLDS.threshold, ORACLE_THRESHOLDS.phrase_floor)
    method = policy[len("value-map-"):]
    assert lit.rule(method) != ORACLE_THRESHOLDS.rule(method)
    for name, want in ((None, ORACLE_THRESHOLDS), ("lit:lit-minilm-household", lit)):
        loop = build_loop(policy, _components(name))
        rule = want.rule(method)
        assert loop.policy.vcfg.threshold == rule.threshold
        assert loop.policy.scorer.phrase_floor == rule.phrase_floor
        assert loop.policy.scorer.relative_margin == rule.relative_margin
        assert loop.policy.thresholds is want


def test_an_uncalibrated_encoder_falls_back_to_the_oracle_pair_and_says_so():
    th = thresholds_for("clip:my-clip")
    assert not th.calibrated and "not calibrated" in th.source
    assert (th.threshold, th.phrase_floor) == (ORACLE_THRESHOLDS.threshold, ORACLE_THRESHOLDS.phrase_floor)
    assert thresholds_for("oracle-captions-minilm") is ORACLE_THRESHOLDS is BY_ENCODER["oracle-captions-minilm"]


def test_the_sweep_keeps_the_pair_whose_first_detection_is_the_target():
    from personal.navigation.eval.pan_calibrate import proxy_success, sweep

    target = [Box((5.0, 5.0, 0.5), (0.4, 0.4, 0.4))]
    # step, scorer, phrase floor, best confident score, x, y — in step order
    rows = [[5, "qs", -1.0, 0.20, 1.0, 1.0], [12, "qs", -1.0, 0.30, 5.1, 5.0],
            [5, "rpg", -1.0, 0.22, 1.0, 1.0], [5, "rpg", 0.4, 0.10, 5.0, 5.0], [9, "rpg", 0.4, 0.28, 5.0, 5.2],
            [5, "rpg-owner", -1.0, 0.22, 1.0, 1.0], [9, "rpg-owner", 0.4, 0.28, 5.0, 5.2]]
    rec = {"episode_id": "e", "rows": rows}
    assert proxy_success(rec, target, "qs", 0.15, -1.0) == (False, 5)  # fires early, on the wrong object
    assert proxy_success(rec, target, "qs", 0.25, -1.0) == (True, 12)
    assert proxy_success(rec, target, "rpg", 0.25, 0.4) == (True, 9)
    assert proxy_success(rec, target, "rpg", 0.35, 0.4) == (False, None)  # never detects: no STOP
    res = sweep([rec], {"e": target}, thresholds=(0.15, 0.25, 0.35), floors=(-1.0, 0.4))
    assert res["chosen"]["threshold"] == 0.25 and res["chosen"]["phrase_floor"] == 0.4
    assert res["chosen"]["mean"] == 100.0


def test_calibration_refuses_evaluation_households(tmp_path):
    from personal.navigation.eval.pan_calibrate import calibrate

    with pytest.raises(ValueError, match="evaluation households"):
        calibrate("lit", [100, 20000], 1, 10, tmp_path)


def test_the_cell_sweep_finds_the_margin_that_skips_a_generic_cell():
    """Cell records (every confident cell per step): a generic cell scores highest from step 3
    but singles out no described object (margin 0); the target appears at step 8 with margin
    0.1. Without a margin the first detection is the generic cell; a margin of 0.05 waits for
    the target, and the sweep keeps a rule with a margin."""
    import numpy as np

    from personal.navigation.eval.pan_calibrate import CELL_FIELDS, first_detection, sweep_cells

    target = [Box((5.0, 5.0, 0.5), (0.4, 0.4, 0.4))]
    rows = []  # step, x, y, score (all scorers), phrase sim, margin
    for step in range(1, 12):
        rows.append((step, 1.0, 1.0, 0.30, 0.40, 0.0))
        if step >= 8:
            rows.append((step, 5.1, 5.0, 0.25, 0.45, 0.10))
    a = np.array(rows, np.float32)
    arrays = {"step": a[:, 0].astype(np.int16), "x": a[:, 1], "y": a[:, 2]}
    for f in CELL_FIELDS:
        arrays[f] = a[:, 3] if f in ("qs", "v_rpg", "v_rpgo") else a[:, 4] if f.startswith("psim") else a[:, 5]
    assert first_detection(arrays, "rpg", 0.2) == (1, 1.0, 1.0)
    assert first_detection(arrays, "rpg", 0.2, margin=0.05)[0] == 8
    assert first_detection(arrays, "rpg", 0.2, floor=0.5) is None
    res = sweep_cells([{"episode_id": "e", "arrays": arrays}], {"e": target}, thresholds=(0.2, 0.35),
                      floors=(-1.0,), margins=(None, 0.05))
    for m in ("rpg", "rpg-owner"):
        assert res["chosen"][m]["margin"] == 0.05 and res["chosen"][m]["proxy_sr"] == 100.0
    assert res["chosen"]["qs"]["proxy_sr"] == 0.0  # QS has no margin: the generic cell first



def test_cell_calibration_sees_through_the_camera_model_it_is_given(tmp_path):
    """`personal pan calibrate --relative --sensor d435`: the blind runs see through the camera model
    (a rule for the robot's own camera) and every record and the sweep say which one."""
    from personal.navigation.eval.pan_calibrate import calibrate_cells, load_cell_records
    from personal.sim.sensor_model import sensor_spec

    spec = sensor_spec("d435", "", 0)
    res = calibrate_cells("oracle", [20000], 1, 3, tmp_path, sensor=spec)
    recs = load_cell_records(tmp_path)
    assert len(recs) == 1 and recs[0]["sensor"] == spec.describe() != sensor_spec("ideal", "", 0).describe()
    assert res["sensor"] == [spec.describe()]
    assert recs[0]["proposal_depth_tol_m"] == 0.0 and recs[0]["model_path"] == ""  # the map and tower it ran with


def test_cell_calibration_records_the_map_setting_it_ran_with(tmp_path):
    from personal.navigation.eval.pan_calibrate import calibrate_cells, load_cell_records
    from personal.navigation.mapper import NavMapConfig

    calibrate_cells("oracle", [20001], 1, 3, tmp_path, map_config=NavMapConfig(proposal_depth_tol_m=0.15))
    assert load_cell_records(tmp_path)[0]["proposal_depth_tol_m"] == 0.15


def test_calibrate_names_a_missing_checkpoint_and_eval_refuses_a_tolerance_that_is_no_number(tmp_path):
    from typer.testing import CliRunner

    from personal.navigation.cli import app

    res = CliRunner().invoke(app, ["calibrate", "--relative", "--seeds", "20000", "--max-steps", "2",
                                   "--model-path", str(tmp_path / "no_such_ckpt"), "--out", str(tmp_path / "cal")])
    assert res.exit_code == 2 and "no_such_ckpt" in res.output and "does not exist" in res.output
    res = CliRunner().invoke(app, ["eval", "--methods", "oracle", "--proposal-depth-tol", "nan", "--out", str(tmp_path / "ev")])
    assert res.exit_code == 2 and "--proposal-depth-tol" in res.output
    res = CliRunner().invoke(app, ["calibrate", "--sensor", "d435", "--model-path", "x", "--out", str(tmp_path / "cal2")])
    assert res.exit_code == 2 and "--sensor, --model-path only apply with --relative" in " ".join(res.output.split())
    assert not (tmp_path / "cal2").exists(), "refused before any blind run"
