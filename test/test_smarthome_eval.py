"""Metrics, task generation, agents (scripted reference, LLM over a fake OpenAI-compatible
server) and home_eval end to end."""
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from personal.smarthome.agent import (
    MAX_TURNS, ChatClient, LLMJudge, ScriptedReferenceAgent, SoleReasoningAgent, TaskEnv, ToolAgent,
)
from personal.smarthome.evaluate import EvalConfig, run_home_eval
from personal.smarthome.generator import generate_household
from personal.smarthome.household import load_household
from personal.smarthome.memory import MemoryIndex
from personal.smarthome.metrics import (
    average_precision_at_k, cf_macro, exact_match, map_at_k, mc_correct, normalize, qa_correct, relevant_rank_sum,
)
from personal.smarthome.programs import difficulty
from personal.smarthome.tasks import Task, apply_edits, household_tasks
from personal.smarthome.tools import TOOL_SPECS, PersonalHomeTools, ToolExecutor

DATA = Path(__file__).parent / "data" / "smarthome_household.json"


# ---------------------------------------------------------------- metrics
def test_exact_match_normalisation_and_judge():
    assert normalize("  The Living-Room. ") == "livingroom"
    assert exact_match("the kitchen", ["Kitchen"]) and not exact_match("kitchens", ["Kitchen"])
    assert qa_correct("an engineer", ["engineer"])
    calls = []

    def judge(pred, gt):
        calls.append((pred, gt))
        return -1 if "maybe" in pred else (1 if "nurse" in pred else 0)

    assert qa_correct("She works as a nurse", ["nurse"], judge)
    assert not qa_correct("maybe a nurse?", ["doctor"], judge)  # -1 (uncertain) counts as wrong
    assert not qa_correct("teacher", ["nurse"], judge)
    assert len(calls) == 3 and not qa_correct("x", ["y"])  # no judge: exact match only


def test_mc_cf_map_rrs():
    assert mc_correct("B", "B", "Kitchen") and mc_correct("(b).", "B", "Kitchen") and mc_correct("kitchen", "B", "Kitchen")
    assert not mc_correct("C", "B", "Kitchen")
    assert cf_macro([True, True, False, False], [True]) == pytest.approx(0.75)
    rel = {"a", "b", "c"}
    assert average_precision_at_k(["a", "x", "b", "c"], rel, 1) == 1.0
    assert average_precision_at_k(["x", "a"], rel, 1) == 0.0
    assert average_precision_at_k(["a", "x", "b", "c"], rel, 4) == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert map_at_k([["a"], ["x"]], [rel, rel], 1) == 0.5
    assert relevant_rank_sum(["a", "b", "c", "x"], ["a", "b", "c"]) == 0
    assert relevant_rank_sum(["x", "c", "b", "a"], ["a", "b", "c"]) == 3 + 1 + 1
    assert relevant_rank_sum(["a", "b"], ["a", "b", "c"]) == 0 + 0 + 0 + (3 - 3)  # missing -> rank n+1 = 3


# ---------------------------------------------------------------- tasks + reference agent
@pytest.fixture(scope="module")
def memory():
    return MemoryIndex()


def _env(h, memory):
    hh = copy.deepcopy(h)
    return TaskEnv(hh, ToolExecutor(PersonalHomeTools(hh, memory)), memory)


def test_task_generation_families_variants_and_difficulty(memory):
    h = generate_household(4)
    tasks = household_tasks(h)
    fams = {t.family for t in tasks}
    assert {"IG", "MC", "CF", "PG"} <= fams
    ig = [t for t in tasks if t.family == "IG"]
    assert {t.variant for t in ig} == {"id", "name"} and {t.difficulty for t in ig} == {"simple", "medium", "hard"}
    for t in ig:
        assert t.difficulty == difficulty(t.program)
    mc = [t for t in tasks if t.family == "MC"]
    for t in mc:
        assert len(t.choices) == 5 and len(set(t.choices.values())) == 5
        assert t.choices[t.answer_letter] == t.answer_variants[1]
    cf = [t for t in tasks if t.family == "CF"]
    kinds = {t.counterfactual["expected"] for t in cf}
    assert kinds == {"changed", "unchanged"}
    for t in cf:  # the recorded effect is recomputed, not asserted
        changed = t.answer_variants[0] != t.counterfactual["original_answer"]
        assert changed == (t.counterfactual["expected"] == "changed") == t.counterfactual["answer_changed"]
        assert len(t.counterfactual["edit"]) == 1  # single-factor edit


def test_fr_labels_follow_household_evidence():
    from personal.smarthome.tasks import feature_scores, fr_task

    tasks = [fr_task(generate_household(s)) for s in range(6)]
    tasks = [t for t in tasks if t]
    assert tasks
    for t in tasks:
        scores = feature_scores(generate_household(int(t.household_id[2:])))
        labels = t.labels
        assert sorted(labels.values()).count("HIGHLY_RELEVANT") == 3 and list(labels.values()).count("LESS_RELEVANT") == 4
        hi = min(scores[f] for f, l in labels.items() if l == "HIGHLY_RELEVANT")
        assert all(0 < scores[f] < hi for f, l in labels.items() if l == "RELEVANT")
        assert all(scores[f] == 0 for f, l in labels.items() if l == "LESS_RELEVANT")


def test_reference_agent_solves_ig_mc_cf_on_generated_households(memory):
    agent = ScriptedReferenceAgent()
    for seed in (11, 12):
        h = generate_household(seed)
        for t in household_tasks(h, max_items=8):
            if t.family not in ("IG", "MC", "CF"):
                continue
            out = agent.run(t, _env(h, memory))
            if t.family == "MC":
                assert mc_correct(out.answer, t.answer_letter, t.choices[t.answer_letter]), t.task_id
            else:
                assert qa_correct(out.answer, t.answer_variants), (t.task_id, out.answer, t.answer_variants)
            assert out.tool_calls >= 1 and out.errors == []


def test_reference_agent_fails_when_the_tools_lie(memory):
    """The 100% above is earned: corrupt one tool and the program's answer changes."""
    h = generate_household(11)
    t = next(t for t in household_tasks(h) if t.family == "IG" and t.template == "member_occupation")
    env = _env(h, memory)
    real = env.executor.tools.get_household_member_info
    env.executor.tools.get_household_member_info = lambda member_ids: [{**m, "occupation": "astronaut"} for m in real(member_ids)]
    assert not qa_correct(ScriptedReferenceAgent().run(t, env).answer, t.answer_variants)


# ---------------------------------------------------------------- fake OpenAI-compatible endpoint
class FakeLLM:
    """A tiny OpenAI-compatible /v1/chat/completions server; replies come from ``policy(body)``."""

    def __init__(self, policy):
        self.policy = policy
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.end_headers()
                    return
                msg = outer.policy(body)
                data = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", **msg}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def tool_call(name, args, i=0):
    return {"content": None, "tool_calls": [{"id": f"call_{i}", "type": "function",
                                             "function": {"name": name, "arguments": args}}]}


def _ig_task():
    return Task("t1", "hand01", "IG", "member_age", "What is the age of member hand01_2?", ["9"])


def test_tool_agent_loop_with_typed_errors_and_transcript(memory):
    script = [tool_call("get_profile", "{}", 0),
              tool_call("get_household_member_info", '{"member_ids": ["hand01_2"]}', 1),
              {"content": '```json\n{"answer": "9"}\n```'}]

    def policy(body):
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return script[n]

    h = load_household(DATA)
    with FakeLLM(policy) as llm:
        out = ToolAgent(ChatClient(llm.url, "fake-model")).run(_ig_task(), _env(h, memory))
    assert out.answer == "9" and out.turns == 3 and out.tool_calls == 2
    assert out.errors == ["INVALID_TOOL_NAME"]
    first = llm.requests[0]
    assert first["temperature"] == 0.0 and first["top_p"] == 1.0 and first["model"] == "fake-model"
    assert len(first["tools"]) == len(TOOL_SPECS)
    tool_msgs = [m for m in out.transcript if m["role"] == "tool"]
    assert json.loads(tool_msgs[0]["content"])["error"]["type"] == "INVALID_TOOL_NAME"
    assert json.loads(tool_msgs[1]["content"])[0]["age"] == 9
    assert llm.requests[2]["messages"][-1]["role"] == "tool"  # the error was fed back before the next turn


def test_tool_agent_stops_after_15_turns_and_flags_text_tool_calls(memory):
    h = load_household(DATA)
    with FakeLLM(lambda body: tool_call("get_household_profile", "{}")) as llm:
        out = ToolAgent(ChatClient(llm.url, "m")).run(_ig_task(), _env(h, memory))
    assert out.answer is None and out.turns == MAX_TURNS == 15 and len(llm.requests) == 15
    replies = iter([{"content": 'I will call {"name": "get_household_profile", "arguments": {}}'}, {"content": ""},
                    {"content": '{"answer": "nine"}'}])
    with FakeLLM(lambda body: next(replies)) as llm:
        out = ToolAgent(ChatClient(llm.url, "m")).run(_ig_task(), _env(h, memory))
    assert out.errors == ["UPSTREAM_FORMAT_ERROR", "EMPTY_OUTPUT"] and out.answer == "nine"


def test_sole_reasoning_and_judge(memory):
    h = load_household(DATA)
    with FakeLLM(lambda body: {"content": '{"answer": "9"}'}) as llm:
        out = SoleReasoningAgent(ChatClient(llm.url, "m")).run(_ig_task(), _env(h, memory))
        assert out.answer == "9" and out.tool_calls == 0
        req = llm.requests[0]
        assert "tools" not in req and '"household_id": "hand01"' in req["messages"][0]["content"]
    with FakeLLM(lambda body: {"content": '{"score": 1}'}) as llm:
        assert LLMJudge(ChatClient(llm.url, "m"))("nine", "9") == 1
    with FakeLLM(lambda body: {"content": "equivalent I think"}) as llm:
        assert LLMJudge(ChatClient(llm.url, "m"))("nine", "9") == -1


# ---------------------------------------------------------------- home_eval
def test_home_eval_reference_writes_report(tmp_path):
    s = run_home_eval(EvalConfig(out_dir=str(tmp_path), households=2, seed=30, max_items=6))
    assert s["IG_accuracy"] == 1.0 and s["MC_accuracy"] == 1.0 and s["CF_macro"] == 1.0
    assert s["PG_validity"] == 1.0 and s["safety_probe"]["correct"] == 2
    report = (tmp_path / "report.md").read_text()
    assert "| IG |" in report and "Tool errors per task" in report
    for name in ("summary.json", "results.jsonl", "transcripts.jsonl", "accuracy_by_difficulty.png", "tool_errors.png"):
        assert (tmp_path / name).stat().st_size > 0
    from report_browser import check_report

    check_report(tmp_path, ["Tool errors per task", "Headline"], "home_eval_report", min_images=2)


def test_home_eval_with_llm_agent_counts_errors(tmp_path):
    def policy(body):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return tool_call("get_household_member_info", "{}")  # MISSING_ARGUMENTS
        return {"content": '{"answer": "A"}'}

    with FakeLLM(policy) as llm:
        s = run_home_eval(EvalConfig(out_dir=str(tmp_path), households=1, seed=3, agent="tools", endpoint=llm.url,
                                     model="m", max_items=2, families=("IG", "MC")))
    assert s["tool_error_counts"]["IG"]["MISSING_ARGUMENTS"] >= 1
    assert 0.0 <= s["IG_accuracy"] < 1.0
    lines = (tmp_path / "transcripts.jsonl").read_text().splitlines()
    assert lines and json.loads(lines[0])["agent"] == "llm-tools:m"


def test_home_eval_pg_with_llm_plans_and_role_playing_judge(tmp_path):
    plan = [{"program_id": "comfort", "steps": [
        {"step_id": "1", "appliance": "thermostat", "feature": "set_target_temperature", "category": ["WELL_BEING"],
         "args": {"temperature_f": 70}},
        {"step_id": "2", "appliance": "tv", "feature": "fly", "category": ["ROUTINE"], "args": {}}]}]

    def policy(body):
        system = body["messages"][0]["content"]
        if system.startswith("You are a multi-persona"):
            return {"content": json.dumps([{"program_id": "comfort", "overall_score": 4, "persona_feedback": {},
                                            "rationale": "ok"}])}
        return {"content": json.dumps(plan)}

    with FakeLLM(policy) as llm:
        s = run_home_eval(EvalConfig(out_dir=str(tmp_path), households=2, agent="tools", endpoint=llm.url, model="m",
                                     judge=True, families=("PG",)))
    assert s["PG_validity"] == 0.5 and s["PG_RPJ_ABS"] == 4.0
    judged = [r for r in llm.requests if r["messages"][0]["content"].startswith("You are a multi-persona")]
    assert len(judged) == 2 and "household_members" in judged[0]["messages"][1]["content"]
    assert "role-playing judge" in (tmp_path / "report.md").read_text()


def test_cli_validate_names_the_field_path(tmp_path):
    from typer.testing import CliRunner

    from personal.smarthome.cli import app

    doc = json.loads(DATA.read_text())
    doc["pets"][0]["age"] = -3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["validate", str(bad)])
    assert r.exit_code == 1 and "pets[0].age" in r.output
    r = CliRunner().invoke(app, ["validate", str(DATA)])
    assert r.exit_code == 0 and "9 appliances" in r.output
