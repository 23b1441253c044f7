"""A child graph that made no progress is a failure (issue 28, item 7): the explore node that got no
input exits INCOMPLETE (3), not 0; a shard whose child graph wrote no result is an incomplete shard,
and the merged report says INCOMPLETE RUN with exit code 3."""
from __future__ import annotations

from pathlib import Path

from personal import exit_codes


def test_explore_node_without_input_exits_incomplete(run_node):
    node = run_node("nodes.explore_node", "explore", {"start_timeout": 1.0, "exit_on_finish": True})
    node.proc.wait(60)
    log = node.log()
    assert node.proc.returncode == exit_codes.INCOMPLETE, log
    assert "no progress: 0 steps taken (no input)" in log, log


def test_a_shard_that_wrote_nothing_is_incomplete(tmp_path, monkeypatch):
    """The child graph of a shard exits 0 without a single record (e.g. a blind explore child): the
    shard is failed (3) and the merged report is INCOMPLETE, exit code 3 (before: 0, looked complete)."""
    import personal.runner as runner
    from personal.benchmarks import KINDS
    from personal.runs import shard as sh

    monkeypatch.setattr(runner, "run_child", lambda cmd, env, timeout_s, log=None, keep=None: (0, ["all done"]))
    monkeypatch.setattr(KINDS["home_eval"], "collect", staticmethod(lambda out_dir: None))
    s = sh.Shard("households0-1", (), ("0", "1"))
    result = sh.run_shard(KINDS["home_eval"], {}, s, {"first_household": 0, "households": 2}, tmp_path / "w", 60)
    assert result["code"] == exit_codes.INCOMPLETE and "no progress" in result["errors"], result

    values = {"workers": 2, "cluster": "local", "shard_timeout_s": 60.0, "households": 2, "first_household": 0,
              "out_dir": str(tmp_path / "out"), "agent": "reference", "seed": 0, "max_items": 2, "endpoint": "",
              "model": "", "judge": False, "families": "IG,MC"}
    said = []
    code = sh.ShardedRun(KINDS["home_eval"], {}, values, say=said.append).run()  # the same blind children, merged
    assert code == exit_codes.INCOMPLETE, said
    summary = (Path(values["out_dir"]) / "summary.json").read_text()
    assert "INCOMPLETE RUN" in summary and "no progress" in summary
