"""PersonalHomeTools throughput and MQTT command-to-state latency on loopback.

Prints: (1) tool calls per second through the ToolExecutor (validation + execution) for a
mix of lookups and feature calls, (2) memory-search calls per second with the packaged
MiniLM model (cached memory embeddings, new query each call), (3) plan steps per second,
(4) MQTT command -> retained state latency (median / p95 / max) against a local Mosquitto
with password auth: a client publishes ``.../tv/power/set`` and times the state message
that reflects it.
Usage: .venv/bin/python bench/bench_home.py [--seconds 2] [--mqtt-rounds 200]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from personal.smarthome.broker import LocalBroker  # noqa: E402
from personal.smarthome.generator import generate_household  # noqa: E402
from personal.smarthome.memory import MemoryIndex  # noqa: E402
from personal.smarthome.mqtt import HomeAssistantBridge, connect_client  # noqa: E402
from personal.smarthome.plans import PlanExecutor  # noqa: E402
from personal.smarthome.tools import PersonalHomeTools, ToolExecutor  # noqa: E402

MIX = [
    ("get_household_profile", {}),
    ("get_household_member_info", {"member_ids": ["hh0001_1"]}),
    ("get_appliances", {"appliance_names": ["tv", "thermostat"]}),
    ("get_appliances_by_location", {"locations": ["Kitchen"]}),
    ("run_appliance_feature", {"appliance_name": "thermostat", "feature_method": "set_target_temperature",
                               "feature_kwargs": {"temperature_f": 70}}),
    ("run_appliance_feature", {"appliance_name": "tv", "feature_method": "set_power", "feature_kwargs": {"state": "on"}}),
    ("get_household_member_info", {"member_ids": ["nobody"]}),  # an EXECUTION_ERROR path
    ("get_contextual_event_descriptions", {}),
]


def rate(fn, seconds: float) -> tuple[float, int]:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn(n)
        n += 1
    return n / (time.perf_counter() - t0), n


def bench_tools(seconds: float) -> None:
    h = generate_household(1)
    ex = ToolExecutor(PersonalHomeTools(h))
    ex.call("get_owned_appliances", {})
    per, _ = rate(lambda i: ex.call(*MIX[i % len(MIX)]), seconds)
    print(f"tool calls (mix of {len(MIX)} tools, incl. feature calls and an error): {per:,.0f} calls/s")
    mem = MemoryIndex()
    ex2 = ToolExecutor(PersonalHomeTools(h, mem))
    ex2.call("get_household_memories", {"search_string": "warm up", "num_memories": 3})  # model load + memory encoding
    per, n = rate(lambda i: ex2.call("get_household_memories", {"search_string": f"who used the oven {i}", "num_memories": 3}),
                  seconds)
    print(f"memory search (MiniLM, new query each call, cached memory embeddings): {per:,.1f} calls/s ({n} calls)")
    plan = [{"program_id": "p", "steps": [
        {"appliance": "tv", "feature": "set_power", "args": {"state": "on"}},
        {"appliance": "tv", "feature": "set_volume", "args": {"volume": 10}},
        {"appliance": "thermostat", "feature": "set_target_temperature", "args": {"temperature_f": 69}},
        {"appliance": "speaker", "feature": "speak", "args": {"message": "hi"}}]}]
    pe = PlanExecutor(h)
    per, _ = rate(lambda i: pe.execute(plan), seconds)
    print(f"plan execution (4-step program, fresh household copy each): {per * 4:,.0f} steps/s")


def bench_mqtt(rounds: int) -> None:
    h = generate_household(1)
    with LocalBroker() as b:
        bridge = HomeAssistantBridge(ToolExecutor(PersonalHomeTools(h)), b.host, b.port, b.username, b.password).start()
        client = connect_client(b.host, b.port, b.username, b.password)
        state_topic = bridge.state_topic("tv")
        cond = threading.Condition()
        latest = {"power": None}

        def on_msg(c, u, m):
            with cond:
                latest["power"] = json.loads(m.payload)["state"]["power"]
                cond.notify_all()

        client.on_message = on_msg
        client.subscribe(state_topic, qos=1)
        time.sleep(0.3)
        lat = []
        for i in range(rounds):
            want = "on" if latest["power"] != "on" else "off"
            t0 = time.perf_counter()
            client.publish(bridge.command_topic("tv", "power"), want.upper(), qos=1)
            with cond:
                ok = cond.wait_for(lambda: latest["power"] == want, timeout=5)
            if not ok:
                raise SystemExit(f"round {i}: no state {want!r} within 5 s")
            lat.append((time.perf_counter() - t0) * 1000)
        client.disconnect()
        client.loop_stop()
        bridge.stop()
    lat.sort()
    print(f"MQTT command->state on loopback (Mosquitto, auth, QoS 1, {rounds} rounds): median {statistics.median(lat):.2f} ms, "
          f"p95 {lat[int(0.95 * (len(lat) - 1))]:.2f} ms, max {lat[-1]:.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--mqtt-rounds", type=int, default=200)
    a = ap.parse_args()
    bench_tools(a.seconds)
    bench_mqtt(a.mqtt_rounds)


if __name__ == "__main__":
    main()
