"""Agents for PersonalHomeBench.

- ``ToolAgent``: an agent loop over any OpenAI-compatible ``/chat/completions`` endpoint with
  tool calling (temperature 0, top_p 1, at most 15 turns as in the seed). Tool calls go
  through the ``ToolExecutor``; errors come back to the model as explicit typed errors.
  Every message is kept in the transcript.
- ``SoleReasoningAgent``: the seed's Sole-Reasoning setting — the full household JSON in
  the prompt, no tools, one call.
- ``ScriptedReferenceAgent``: no model. IG/MC execute the task's answer program through the
  tools; CF applies the task's structured counterfactual edit, then runs the program. These
  check tools, programs and metrics end to end. For FR and PG it is an *oracle*: FR ranks by
  the labelling rule over the household ground truth (``oracle_fr_ranking``, an upper bound by
  construction) and PG reads who is home from the ground truth (``oracle_reference_plan``).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import requests

from personal.llm_reply import json_in_reply, strip_fences

from personal.smarthome.appliances import CATALOGUE
from personal.smarthome.household import Household
from personal.smarthome.memory import MemoryIndex
from personal.smarthome.programs import ProgramError, run_program
from personal.smarthome.tasks import Task, apply_edits, feature_scores
from personal.smarthome.tools import VIDEO_TOOLS, ErrorType, PersonalHomeTools, ToolExecutor

MAX_TURNS = 15


@dataclass
class TaskEnv:
    """What an agent gets for one task: a fresh household copy and a tool executor over it."""

    household: Household
    executor: ToolExecutor
    memory: MemoryIndex


@dataclass
class AgentOutput:
    answer: Any
    transcript: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # tool-error types met on the way
    turns: int = 0
    tool_calls: int = 0


class Agent(Protocol):
    name: str

    def run(self, task: Task, env: TaskEnv) -> AgentOutput: ...


# ---------------------------------------------------------------- prompts (seed Appendix I.3, condensed)
TOOLS_PROMPT = (
    "You are a smart-home assistant answering questions about one household using PersonalHomeTools. "
    "After each tool call you receive TOOL_RESPONSE; call another tool until you have enough information.\n"
    "Planning rules: use the fewest tool calls possible. If you know names, use get_appliances and other information "
    "directly. If you only know a location, use *_by_location first. If you need behavioural/historical info, use "
    "(member/household) memories with 1-2 well-written queries. Tool usage must be step-by-step. Never fabricate tool outputs."
)
SOLE_PROMPT = "You are an inference-only assistant. Answer using only the household information below; do not invent facts."


def task_prompt(task: Task) -> str:
    if task.family in ("IG", "CF"):
        cf = f"\nCounterfactual: {task.counterfactual['change']} Apply only this change; all other facts stay the same." \
            if task.family == "CF" else ""
        return (f"Question: {task.question}{cf}\nThe answer must be exact and short, not a sentence. "
                'Reply with JSON only: {"answer": "<answer>"}')
    if task.family == "MC":
        opts = "\n".join(f"{k}. {v}" for k, v in task.choices.items())
        return f"Question: {task.question}\nChoices:\n{opts}\nReply with JSON only: " + '{"answer": "<letter>"}'
    if task.family == "FR":
        return (f"Situation: {task.situation}\nRank every one of these feature ids from most to least relevant for this "
                f"household: {json.dumps(task.candidates)}\nReply with JSON only: " + '{"ranked_features": [...]}')
    return (f"Situation: {task.situation}\nGenerate up to 3 programs, each with 1-5 steps, that help the household now. "
            'Reply with a JSON list only: [{"program_id": "...", "steps": [{"step_id": "1", "appliance": "<appliance name>", '
            '"feature": "<feature method>", "category": ["ROUTINE"], "args": {...}, "rationale": "..."}]}]. '
            "Categories: ACCIDENT_RESPONSE, ROUTINE, ANOMALY, WELL_BEING. Use get_owned_appliances and "
            "get_appliance_features to find valid appliance names, feature methods and arguments.")


def parse_final(task: Task, text: str) -> Any:
    """The answer field of the model's final message (raw text when it is not the asked JSON)."""
    data = json_in_reply(text)
    if task.family == "PG":
        return data if data is not None else text
    if task.family == "FR":
        return data.get("ranked_features", []) if isinstance(data, dict) else (data if isinstance(data, list) else [])
    if isinstance(data, dict) and "answer" in data:
        ans = data["answer"]
        return ", ".join(map(str, ans)) if isinstance(ans, list) else str(ans)
    return strip_fences(text)


# ---------------------------------------------------------------- OpenAI-compatible client
class ChatClient:
    """Minimal OpenAI-compatible chat client (``requests``; no SDK needed)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout = timeout

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0.0, "top_p": 1.0}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        resp = requests.post(self.url, json=body, headers=headers, timeout=self.timeout)
        if resp.status_code != 200:
            raise RuntimeError(f"{self.url}: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError) as exc:
            raise RuntimeError(f"{self.url}: malformed chat completion: {resp.text[:300]}") from exc


_TEXT_TOOL_CALL = re.compile(r"<tool_call>|\"(name|function)\"\s*:\s*\"(get_|run_|update_|extract_|inspect_)")


class ToolAgent:
    def __init__(self, client: ChatClient, max_turns: int = MAX_TURNS, include_video_tools: bool = True) -> None:
        self.client = client
        self.max_turns = max_turns
        self.include_video_tools = include_video_tools
        self.name = f"llm-tools:{client.model}"

    def run(self, task: Task, env: TaskEnv) -> AgentOutput:
        tools = [s.openai() for s in env.executor.specs() if self.include_video_tools or s.name not in VIDEO_TOOLS]
        messages: list[dict[str, Any]] = [{"role": "system", "content": TOOLS_PROMPT},
                                          {"role": "user", "content": task_prompt(task)}]
        out = AgentOutput(answer=None, transcript=messages)
        for turn in range(1, self.max_turns + 1):
            out.turns = turn
            msg = self.client.chat(messages, tools)
            calls = msg.get("tool_calls") or []
            messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")} | {"role": "assistant"})
            if calls:
                for call in calls:
                    fn = call.get("function", {})
                    result = env.executor.call(fn.get("name", ""), fn.get("arguments"))
                    out.tool_calls += 1
                    if result.error_type:
                        out.errors.append(result.error_type)
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result.for_agent()})
                continue
            content = msg.get("content") or ""
            if not content.strip():
                out.errors.append(ErrorType.EMPTY_OUTPUT.value)
                messages.append({"role": "user", "content": "Your reply was empty. Call a tool or give the final JSON answer."})
                continue
            if _TEXT_TOOL_CALL.search(content) and task.family != "PG":
                # a tool call written as text instead of the tool-calling interface
                out.errors.append(ErrorType.UPSTREAM_FORMAT_ERROR.value)
                messages.append({"role": "user", "content": json.dumps({"error": {
                    "type": ErrorType.UPSTREAM_FORMAT_ERROR.value,
                    "message": "tool calls must use the tool-calling interface, not text"}})})
                continue
            out.answer = parse_final(task, content)
            return out
        return out


class SoleReasoningAgent:
    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.name = f"llm-sole:{client.model}"

    def run(self, task: Task, env: TaskEnv) -> AgentOutput:
        context = json.dumps(env.household.to_json())
        extra = ""
        if task.family in ("FR", "PG"):
            feats = {p.appliance.name: [f.describe() for f in CATALOGUE[p.appliance.type].features.values()]
                     for p in env.household.appliances}
            extra = f"\nAppliances and their features: {json.dumps(feats)}"
        messages = [{"role": "system", "content": f"{SOLE_PROMPT}\nHousehold information: {context}{extra}"},
                    {"role": "user", "content": task_prompt(task)}]
        msg = self.client.chat(messages)
        messages.append({"role": "assistant", "content": msg.get("content") or ""})
        content = msg.get("content") or ""
        out = AgentOutput(answer=parse_final(task, content) if content.strip() else None, transcript=messages, turns=1)
        if not content.strip():
            out.errors.append(ErrorType.EMPTY_OUTPUT.value)
        return out


class LLMJudge:
    """The seed's strict semantic-equivalence judge (1 / 0 / -1) over an OpenAI-compatible endpoint."""

    PROMPT = ("You are an evaluation judge. Return 1 if PRED is semantically equivalent to GT, else 0. Treat case, articles "
              "and minor punctuation/spacing differences as equivalent. Do NOT give partial credit. If uncertain, return -1. "
              'Output valid JSON only: {"score": 1|0|-1}')

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def __call__(self, pred: str, gt: str) -> int:
        msg = self.client.chat([{"role": "system", "content": self.PROMPT},
                                {"role": "user", "content": json.dumps({"pred": pred, "gt": gt})}])
        try:
            score = json.loads(strip_fences(msg.get("content") or ""))["score"]
            return int(score) if score in (1, 0, -1) else -1
        except (json.JSONDecodeError, KeyError, TypeError):
            return -1


class RolePlayingJudge:
    """The seed's Role Playing Judge, ABS mode: the judge plays every household member and the
    home itself and scores a plan 1-5 (Appendix I.5). Returns None when the reply is unusable."""

    PROMPT = (
        "You are a multi-persona evaluation judge for smart-home assistance plans. Role-play each household member and "
        "the smart home itself. Judge ONLY the provided plan: personal comfort and preferences, safety, convenience, "
        "routines and habits, energy efficiency, emotional well-being, clarity and feasibility with the household's "
        "appliances. Never modify the plan or add actions. Score each persona and overall with an integer 1-5 "
        "(1 very poor/unsafe ... 5 excellent, personalized, safe). Return JSON only: "
        '{"overall_score": <1-5>, "persona_feedback": {"<member_id>": {"feedback": "...", "score": <1-5>}}, '
        '"rationale": "..."}')

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def __call__(self, household: Household, situation: str, plan: Any) -> dict[str, Any] | None:
        members = [m.model_dump() for m in household.members]
        user = json.dumps({"situation": situation, "household_members": members, "generated_plans": plan}, default=str)
        msg = self.client.chat([{"role": "system", "content": self.PROMPT}, {"role": "user", "content": user}])
        try:
            data = json.loads(strip_fences(msg.get("content") or ""))
            data = data[0] if isinstance(data, list) else data
            score = int(data["overall_score"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            return None
        return data if 1 <= score <= 5 else None


# ---------------------------------------------------------------- scripted reference
class ScriptedReferenceAgent:
    name = "scripted-reference"

    def __init__(self, env_factory: Callable[[Household], TaskEnv] | None = None) -> None:
        self.env_factory = env_factory

    def run(self, task: Task, env: TaskEnv) -> AgentOutput:
        out = AgentOutput(answer=None)
        if task.family in ("IG", "MC", "CF"):
            if task.family == "CF":
                edited = apply_edits(env.household, task.counterfactual["edit"])
                env = TaskEnv(edited, ToolExecutor(PersonalHomeTools(edited, env.memory)), env.memory)
            try:
                answer, outputs = run_program(task.program, env.executor)
            except ProgramError as exc:
                out.transcript.append({"error": str(exc)})
                out.errors = [r.error_type for r in env.executor.log if r.error_type]
                return out
            if task.family == "MC":
                answer = next((k for k, v in task.choices.items() if v == answer), answer)
            out.answer = answer
        elif task.family == "FR":
            out.answer = oracle_fr_ranking(task, env.household)
        else:
            out.answer = oracle_reference_plan(env)
        out.transcript = [r.to_dict() for r in env.executor.log]
        out.tool_calls = len(env.executor.log)
        out.errors = [r.error_type for r in env.executor.log if r.error_type]
        return out


def _first(env: TaskEnv, owned: dict[str, str], types: tuple[str, ...]) -> str | None:
    for t in types:
        for name, typ in owned.items():
            if typ == t:
                return name
    return None


def oracle_fr_ranking(task: Task, household: Household) -> list[str]:
    """ORACLE: the FR labelling rule applied to the household ground truth."""
    scores = feature_scores(household)
    return sorted(task.candidates, key=lambda f: (-scores.get(f, 0.0), task.ideal_ranking.index(f)))


def oracle_reference_plan(env: TaskEnv) -> list[dict[str, Any]]:
    """ORACLE (reads who is home from the ground truth): secure the home if nobody is in, then a
    routine; appliance names and states come from the tools."""
    ex = env.executor
    owned = {a["appliance_name"]: a["type"] for a in ex.call("get_owned_appliances").output}
    state = ex.call("get_appliances", {"appliance_names": list(owned)}).output
    programs: list[dict[str, Any]] = []
    sit = env.household.context.situation
    secure: list[dict[str, Any]] = []
    if sit is not None and not sit.members_present:
        for t, feature, args in (("stove", "turn_off_all", {}), ("oven", "turn_off", {}), ("door_lock", "lock", {}),
                                 ("garage_door_opener", "operate_door", {"action": "close"})):
            name = _first(env, owned, (t,))
            if name:
                secure.append({"appliance": name, "feature": feature, "category": ["ANOMALY"], "args": args})
    if secure:
        programs.append({"program_id": "secure_empty_home", "steps": secure})
    notify = _first(env, owned, ("speaker", "tv", "smart_display"))
    routine: list[dict[str, Any]] = []
    if notify:
        if "power" in state[notify]["state"] and state[notify]["state"]["power"] == "off":
            routine.append({"appliance": notify, "feature": "set_power", "category": ["ROUTINE"], "args": {"state": "on"}})
        feature = {"speaker": "speak", "tv": "display_notification", "smart_display": "show_notification"}[owned[notify]]
        routine.append({"appliance": notify, "feature": feature, "category": ["ROUTINE"],
                        "args": {"message": "Good to see you. Here is today's summary."}})
    thermo = _first(env, owned, ("thermostat",))
    if thermo:
        routine.append({"appliance": thermo, "feature": "set_target_temperature", "category": ["WELL_BEING"],
                        "args": {"temperature_f": 70}})
    programs.append({"program_id": "daily_comfort_routine", "steps": routine})
    for prog in programs:
        for i, step in enumerate(prog["steps"], start=1):
            step["step_id"] = str(i)
            step["rationale"] = "reference plan"
    return programs
