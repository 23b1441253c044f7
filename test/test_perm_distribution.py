"""A learned manipulation policy evaluated on a simulator it was not trained on is flagged as
out of distribution, in the report's headline and in the run record (run.json)."""
from __future__ import annotations

import json

from personal.manipulation.distribution import checkpoint_simulator, distribution_note, headline
from personal.manipulation.report import write_report, write_run_record


def test_shipped_checkpoint_was_trained_on_robosuite():
    assert checkpoint_simulator() == "robosuite"


def test_learned_policy_on_kinematic_is_out_of_distribution_and_on_robosuite_is_not():
    off = distribution_note("learned", "kinematic")
    assert off["in distribution"] is False and off["trained on"] == "robosuite"
    assert "OUT OF DISTRIBUTION" in off["note"] and "backend:=robosuite" in off["note"]
    on = distribution_note("learned", "robosuite")
    assert on["in distribution"] is True and "OUT OF DISTRIBUTION" not in on["note"]
    assert distribution_note("scripted", "kinematic")["in distribution"] is None  # the ORACLE has no training set
    assert distribution_note("learned", "kinematic", "/no/such.safetensors")["in distribution"] is None


def test_report_and_run_record_carry_the_flag(tmp_path):
    note = distribution_note("learned", "kinematic")
    meta = {"simulator": "kinematic", "policy": "learned", "policy distribution": headline(note)}
    write_run_record(tmp_path, meta, note)
    report = write_report([], tmp_path, meta=meta).read_text()
    assert report.splitlines()[0] == "# LIBERO-PeRM-style evaluation — policy OUT OF DISTRIBUTION (see below)"
    assert "**OUT OF DISTRIBUTION: the learned policy was trained on robosuite" in report
    assert json.loads((tmp_path / "run.json").read_text())["distribution"]["in distribution"] is False
    plain = write_report([], tmp_path / "in", meta={"policy distribution": headline(distribution_note("learned", "robosuite"))})
    assert "OUT OF DISTRIBUTION" not in plain.read_text()
