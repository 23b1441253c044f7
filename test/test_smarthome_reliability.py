"""Issue 28 (smart-home part) and issue 27 item 7, re-run as tests against a real Mosquitto broker
and the paho client: the safety layer on every path, MQTT the way Home Assistant expects it
(retained commands, reconnects, birth message, spoofed state, payload limits), bounded logs,
a supervised local broker, household-scoped entity ids."""
import json
import time
from pathlib import Path

import pytest

from personal.smarthome.broker import LocalBroker
from personal.smarthome.generator import generate_household
from personal.smarthome.household import load_household
from personal.smarthome.mqtt import HomeAssistantBridge
from personal.smarthome.plans import PlanExecutor
from personal.smarthome.tools import PersonalHomeTools, ToolExecutor
from test_smarthome_mqtt import Listener, wait_for as mqtt_wait

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).parent / "data" / "smarthome_household.json"
NOBODY_HOME = 7  # generate_household(7): nobody is home, and it owns a door lock and an oven


@pytest.fixture(scope="module")
def broker():
    with LocalBroker() as b:
        yield b


def _bridge(broker, household, **kwargs) -> HomeAssistantBridge:
    return HomeAssistantBridge(ToolExecutor(PersonalHomeTools(household)), broker.host, broker.port, broker.username,
                               broker.password, base_topic=kwargs.pop("base_topic", "rel/home"), **kwargs)


@pytest.fixture
def listener(broker):
    lis = Listener(broker)
    yield lis
    lis.client.disconnect()
    lis.client.loop_stop()


def _lock_name(h):
    return next(p.appliance.name for p in h.appliances if p.appliance.type == "door_lock")


# ---------------------------------------------------------------- item 5: safety on every path
def test_safety_refuses_unlock_through_the_tool_executor():
    h = generate_household(NOBODY_HOME)
    lock = _lock_name(h)
    ex = ToolExecutor(PersonalHomeTools(h, require_discovery=False))
    r = ex.call("run_appliance_feature", {"appliance_name": lock, "feature_method": "unlock", "feature_kwargs": {"user": "x"}})
    assert not r.ok and r.error_type == "EXECUTION_ERROR" and "refused" in r.message and "nobody_home" in r.message
    r = ex.call("update_appliance", {"appliance_name": lock, "state": {"locked": False}})  # a raw state write is no way round
    assert not r.ok and "refused" in r.message
    assert h.appliance(lock).appliance.state["locked"] is True
    assert ex.call("run_appliance_feature", {"appliance_name": lock, "feature_method": "lock", "feature_kwargs": {}}).ok
    oven = next(p.appliance.name for p in h.appliances if p.appliance.type == "oven")
    r = ex.call("run_appliance_feature", {"appliance_name": oven, "feature_method": "remote_preheat", "feature_kwargs": {}})
    assert not r.ok and "heat" in r.message


def test_safety_refuses_raw_state_writes_in_plans():
    h = generate_household(NOBODY_HOME)
    placed = h.appliance(_lock_name(h))
    plan = [{"program_id": "p", "steps": [
        {"step_id": "1", "appliance": "toolbox", "feature": "update_appliance_status", "category": ["ROUTINE"],
         "args": {"appliance_name": placed.appliance.name, "appliance_location": placed.location, "status": {"locked": False}}},
        {"step_id": "2", "appliance": placed.appliance.name, "feature": "unlock", "category": ["ROUTINE"], "args": {"user": "x"}}]}]
    report = PlanExecutor(h).execute(plan, in_place=True)
    assert [s.status for s in report.steps] == ["refused", "refused"]
    assert placed.appliance.state["locked"] is True


def test_safety_refuses_unlock_by_mqtt_command(broker, listener):
    h = generate_household(NOBODY_HOME)
    bridge = _bridge(broker, h).start()
    try:
        obj = bridge.state_topic(_lock_name(h)).split("/")[-2]
        listener.subscribe(f"{bridge.base}/{obj}/feature/result")
        listener.publish(f"{bridge.base}/{obj}/lock/set", "UNLOCK", qos=1)
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: True)
        res = json.loads(res)
        assert not res["ok"] and "refused" in res["message"] and "nobody_home" in res["message"]
        assert h.appliance(_lock_name(h)).appliance.state["locked"] is True
    finally:
        bridge.stop()


def _appliance_node_io(ros_context, seed: int, name: str):
    """An appliance node (household ``seed``) and a client node: (node, tool results and plan results
    by request id, tool-call publisher, plan publisher), once the node subscribes to both."""
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from conftest import wait_for
    from nodes.appliance_node import ApplianceNode
    from personal.msg import HomePlan, PlanResult, ToolCall, ToolResult

    node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=[
        Parameter("seed", value=seed)]))
    io = ros_context.make_node(name)
    reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    results, plans = {}, {}
    io.create_subscription(ToolResult, "home/tool_result", lambda m: results.__setitem__(m.request_id, m), reliable)
    io.create_subscription(PlanResult, "home/plan_result", lambda m: plans.__setitem__(m.request_id, m), reliable)
    calls = io.create_publisher(ToolCall, "home/tool_call", reliable)
    plan_pub = io.create_publisher(HomePlan, "home/plan", reliable)
    wait_for(lambda: calls.get_subscription_count() and plan_pub.get_subscription_count(), 20)
    return node, results, plans, calls, plan_pub


def test_safety_refuses_unlock_by_ros_tool_call_and_plan(ros_context):
    from conftest import wait_for
    from personal.msg import HomePlan, ToolCall

    node, results, plans, calls, plan_pub = _appliance_node_io(ros_context, NOBODY_HOME, "safety_io")
    lock = _lock_name(node.household)
    calls.publish(ToolCall(request_id="u", tool="run_appliance_feature", arguments_json=json.dumps(
        {"appliance_name": lock, "feature_method": "unlock", "feature_kwargs": {"user": "intruder"}})))
    plan_pub.publish(HomePlan(request_id="p", apply=True, plan_json=json.dumps([{"program_id": "p", "steps": [
        {"step_id": "1", "appliance": lock, "feature": "unlock", "category": ["ROUTINE"], "args": {"user": "x"}}]}])))
    wait_for(lambda: "u" in results and "p" in plans, 20)
    assert not results["u"].ok and "refused" in results["u"].message
    assert plans["p"].refused_steps == 1
    assert node.household.appliance(lock).appliance.state["locked"] is True


# ---------------------------------------------------------------- item 4: MQTT as Home Assistant expects it
def _retained(broker, topic_filter, quiet=1.0):
    """What the broker holds retained on ``topic_filter`` ({topic: payload}), as a fresh subscriber sees it:
    the stored messages, then any publication still in flight (on these topics all are retained ones)."""
    lis = Listener(broker)
    try:
        lis.subscribe(topic_filter)
        got, deadline = {}, time.monotonic() + quiet
        while time.monotonic() < deadline:
            try:
                topic, payload, retain = lis.msgs.get(timeout=0.1)
            except Exception:
                continue
            if payload:
                got[topic] = payload
            else:  # an empty retained publication deletes the stored message
                got.pop(topic, None)
            deadline = time.monotonic() + quiet
        return got
    finally:
        lis.client.disconnect()
        lis.client.loop_stop()


def test_retained_commands_are_never_executed(broker, listener):
    h = load_household(DATA)
    pub = Listener(broker)
    pub.publish("ret/home/hand01/tv/power/set", "ON", qos=1, retain=True).wait_for_publish(5)  # stored before the node starts
    listener.subscribe("ret/home/hand01/+/feature/result")
    bridge = _bridge(broker, h, base_topic="ret/home").start()
    try:
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: t.endswith("tv/feature/result"))
        assert not json.loads(res)["ok"] and "retained" in json.loads(res)["message"]
        assert h.appliance("tv").appliance.state["power"] == "off"
        assert "ret/home/hand01/tv/power/set" not in _retained(broker, "ret/home/hand01/+/+/set")  # cleared from the broker
        # a live command published with the retain flag is refused too (it would run again at the next start)
        speaker = dict(h.appliance("speaker").appliance.state)
        pub.publish("ret/home/hand01/speaker/power/set", "OFF" if speaker["power"] == "on" else "ON", qos=1,
                    retain=True).wait_for_publish(5)
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: t.endswith("speaker/feature/result"))
        assert "retained" in json.loads(res)["message"] and h.appliance("speaker").appliance.state == speaker
        pub.publish("ret/home/hand01/tv/power/set", "ON", qos=1)  # an ordinary command still works
        mqtt_wait(listener.msgs, lambda t, p, r: t.endswith("tv/feature/result") and json.loads(p)["ok"])
        assert all(cfg.get("retain") is False for _, cfg in bridge.discovery_messages()
                   if "command_topic" in cfg or "mode_command_topic" in cfg)  # HA publishes our commands unretained
    finally:
        bridge.stop()
        pub.client.disconnect()
        pub.client.loop_stop()


def test_broker_restart_republishes_discovery_availability_and_every_state():
    with LocalBroker() as b:
        h = load_household(DATA)
        bridge = _bridge(b, h).start()
        try:
            n_configs, n_states = len(bridge.discovery_messages()), len(h.appliances)
            assert len(_retained(b, "homeassistant/#")) == n_configs
            b.stop()  # persistence off: every retained message is gone, as after a real broker restart without it
            b.start()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # paho reconnects by itself within seconds
                configs = _retained(b, "homeassistant/#", quiet=0.5)
                if len(configs) == n_configs:
                    break
            states = _retained(b, "rel/home/hand01/#")
            assert len(configs) == n_configs, f"{len(configs)} of {n_configs} discovery configs after the restart"
            assert states.get("rel/home/hand01/availability") == "online"
            assert sum(t.endswith("/state") for t in states) == n_states
            # commands work again after the reconnect
            pub = Listener(b)
            pub.subscribe("rel/home/hand01/tv/feature/result")
            pub.publish("rel/home/hand01/tv/power/set", "ON", qos=1)
            mqtt_wait(pub.msgs, lambda t, p, r: json.loads(p)["ok"])
            pub.client.disconnect()
            pub.client.loop_stop()
        finally:
            bridge.stop()


def test_lost_connection_gives_offline_then_online_again(broker, listener):
    bridge = _bridge(broker, load_household(DATA), base_topic="lwt/home").start()
    try:
        listener.subscribe("lwt/home/hand01/availability")
        mqtt_wait(listener.msgs, lambda t, p, r: p == "online")
        bridge.client.socket().close()  # the connection drops without DISCONNECT: the broker sends the last will
        mqtt_wait(listener.msgs, lambda t, p, r: p == "offline")
        mqtt_wait(listener.msgs, lambda t, p, r: p == "online")  # reconnected, availability republished
    finally:
        bridge.stop()


def test_home_assistant_birth_message_republishes_discovery(broker, listener):
    bridge = _bridge(broker, load_household(DATA), base_topic="birth/home").start()
    try:
        topic = "homeassistant/switch/hand01/tv_power/config"
        assert topic in _retained(broker, "homeassistant/switch/hand01/+/config")
        listener.publish(topic, "", qos=1, retain=True).wait_for_publish(5)  # Home Assistant lost its entity
        assert topic not in _retained(broker, "homeassistant/switch/hand01/+/config", quiet=0.3)
        listener.publish("homeassistant/status", "online", qos=1).wait_for_publish(5)  # Home Assistant's birth message
        deadline = time.monotonic() + 10
        while topic not in _retained(broker, "homeassistant/switch/hand01/+/config", quiet=0.3):
            assert time.monotonic() < deadline, "discovery not republished after Home Assistant's birth message"
        assert bridge.republished >= 2
    finally:
        bridge.stop()


# ---------------------------------------------------------------- item 9: spoofed state, huge and deep payloads
def test_spoofed_retained_state_is_corrected(broker, listener):
    h = load_household(DATA)
    bridge = _bridge(broker, h, base_topic="spoof/home").start()
    try:
        true_tv = _retained(broker, "spoof/home/hand01/tv/state")["spoof/home/hand01/tv/state"]
        listener.publish("spoof/home/hand01/tv/state", json.dumps({"summary": "on", "state": {"power": "on"}}), qos=1,
                         retain=True).wait_for_publish(5)
        listener.publish("spoof/home/hand01/availability", "offline", qos=1, retain=True).wait_for_publish(5)
        deadline = time.monotonic() + 10
        while True:
            got = _retained(broker, "spoof/home/hand01/#", quiet=0.3)
            if got.get("spoof/home/hand01/tv/state") == true_tv and got.get("spoof/home/hand01/availability") == "online":
                break
            assert time.monotonic() < deadline, f"spoofed state kept: {got.get('spoof/home/hand01/tv/state')}"
        assert bridge.corrections >= 2
    finally:
        bridge.stop()


def test_huge_mqtt_payload_is_not_echoed(broker, listener):
    bridge = _bridge(broker, load_household(DATA), base_topic="big/home").start()
    try:
        listener.subscribe("big/home/hand01/+/feature/result")
        huge = "m" * (20 * 1024 * 1024)
        for topic, payload in [("thermostat/mode/set", huge),  # the feature's error quoted the whole value
                               ("tv/feature/set", json.dumps({"feature": "set_volume", "args": {"volume": huge}}))]:
            listener.publish(f"big/home/hand01/{topic}", payload, qos=1)
            _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: True, timeout=30)
            assert len(res) < 4096, f"{topic}: a {len(payload)}-byte payload got a {len(res)}-byte result"
            assert "limited to" in json.loads(res)["message"]
        # under the limit, a value the feature rejects is quoted only as a preview
        listener.publish("big/home/hand01/tv/feature/set",
                         json.dumps({"feature": "set_volume", "args": {"volume": "v" * 60_000}}), qos=1)
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: True, timeout=30)
        assert len(res) < 4096 and not json.loads(res)["ok"]
        listener.publish("big/home/hand01/thermostat/mode/set", "m" * 60_000, qos=1)
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: True, timeout=30)
        assert len(res) < 4096 and not json.loads(res)["ok"]
    finally:
        bridge.stop()


def test_deeply_nested_mqtt_command_gets_an_answer(broker, listener):
    bridge = _bridge(broker, load_household(DATA), base_topic="deep/home").start()
    try:
        listener.subscribe("deep/home/hand01/+/feature/result")
        deep = '{"feature": "set_volume", "args": ' + "[" * 30_000 + "]" * 30_000 + "}"
        listener.publish("deep/home/hand01/tv/feature/set", deep, qos=1)
        _, res, _ = mqtt_wait(listener.msgs, lambda t, p, r: True)
        assert json.loads(res)["error_type"] == "UPSTREAM_FORMAT_ERROR" and "nested" in json.loads(res)["message"]
    finally:
        bridge.stop()


def test_deeply_nested_ros_arguments_and_plans_get_an_answer(ros_context):
    from conftest import wait_for
    from personal.msg import HomePlan, ToolCall

    _, results, plans, calls, plan_pub = _appliance_node_io(ros_context, 0, "deep_io")
    deep = "[" * 100_000 + "]" * 100_000
    calls.publish(ToolCall(request_id="deep", tool="get_household_profile", arguments_json=deep))
    calls.publish(ToolCall(request_id="digits", tool="get_household_profile", arguments_json='{"x": ' + "9" * 5000 + "}"))
    plan_pub.publish(HomePlan(request_id="deep", plan_json=deep))
    wait_for(lambda: {"deep", "digits"} <= set(results) and "deep" in plans, 20)
    assert results["deep"].error_type == "UPSTREAM_FORMAT_ERROR" and "nested" in results["deep"].message
    assert results["digits"].error_type == "UPSTREAM_FORMAT_ERROR"
    assert "nested" in json.loads(plans["deep"].report_json)["format_error"]


# ---------------------------------------------------------------- item 3: bounded per-call stores
def test_appliance_node_tool_log_is_bounded(ros_context):
    import tracemalloc

    from rclpy.parameter import Parameter
    from nodes.appliance_node import ApplianceNode

    node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=[Parameter("seed", value=0)]))
    def args(i):  # a new 200 kB string per call, as every decoded request is
        return {"appliance_names": [f"{i} " + "a" * 200_000]}

    node.tool_executor.call("get_appliances", args(-1))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(300):
        r = node.tool_executor.call("get_appliances", args(i))
        assert len(r.message) < 3000  # the unknown name is quoted, not echoed whole
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 5_000_000, f"300 calls with 200 kB arguments kept {grown / 1e6:.1f} MB"
    assert node.tool_executor.calls == 301 and len(node.tool_executor.log) <= 100
    assert len(node.tool_executor.log[-1].arguments) < 3000  # kept as a preview, not 200 kB
    assert node.tool_executor.error_counts()["EXECUTION_ERROR"] == 301  # counts cover every call, kept or not


def test_memory_query_cache_is_bounded_in_bytes():
    from personal.smarthome.memory import MemoryIndex

    import numpy as np

    h = load_household(DATA)
    idx = MemoryIndex(embedder=lambda texts: np.ones((len(texts), 384), np.float32))
    for i in range(50):
        idx.search(h.memories, f"{i} " + "q" * 200_000, 1)
    idx.search(h.memories, "short query", 1)
    assert all(len(q) <= 1000 for q in idx._queries) and "short query" in idx._queries


# ---------------------------------------------------------------- issue 27 item 7: household-scoped entity ids
def test_two_households_get_distinct_entity_ids():
    a = load_household(DATA)
    b = load_household(DATA)
    b.household_id = "hand02"
    ids = {}
    for h in (a, b):
        bridge = HomeAssistantBridge(ToolExecutor(PersonalHomeTools(h)), "127.0.0.1", 1)
        for topic, cfg in bridge.discovery_messages():
            for field in ("object_id", "unique_id", "default_entity_id"):
                ids.setdefault(field, []).append(cfg.get(field))
            ids.setdefault("topic", []).append(topic)
    for field, values in ids.items():  # Home Assistant appends _2 to a second entity with the same id
        assert len(values) == len(set(values)), f"{field} collides between households"
    assert "switch.hand02_tv_power" in ids["default_entity_id"]  # <component>.<object_id>, Home Assistant 2025.10+
    assert all(d == f"{t.split('/')[1]}.{o}" for d, o, t in zip(ids["default_entity_id"], ids["object_id"], ids["topic"]))


# ---------------------------------------------------------------- item 4: the local broker is supervised
def test_dead_local_broker_is_reported_and_restarted():
    from personal.smarthome.broker import BrokerSupervisor

    events = []
    with LocalBroker() as b:
        bridge = _bridge(b, load_household(DATA)).start()
        try:
            sup = BrokerSupervisor(b, max_restarts=1, on_event=events.append)
            assert sup.check() == "running" and not events
            b._proc.kill()  # the broker this test started
            b._proc.wait(5)
            assert sup.check() == "restarted" and "killed by signal 9" in events[-1] and sup.restarts == 1
            deadline = time.monotonic() + 20
            while bridge.republished < 2:
                assert time.monotonic() < deadline, "the bridge did not come back after the broker restart"
                time.sleep(0.1)
            assert len(_retained(b, "homeassistant/#")) == len(bridge.discovery_messages())
            b._proc.kill()
            b._proc.wait(5)
            assert sup.check() == "failed" and "giving up" in events[-1]  # bounded: one restart allowed here
        finally:
            bridge.stop()


def test_appliance_node_restarts_its_local_broker(ros_context):
    from rclpy.parameter import Parameter
    from conftest import wait_for
    from nodes.appliance_node import ApplianceNode
    from personal.smarthome.mqtt import MqttError, connect_client

    node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=[
        Parameter("seed", value=0), Parameter("mqtt_local_broker", value=True)]))
    broker = node.broker

    def serves_discovery():  # the broker answers again and holds the node's discovery configs
        try:
            return len(_retained(broker, "homeassistant/#", quiet=0.3)) == len(node.bridge.discovery_messages())
        except (MqttError, OSError):
            return False

    try:
        assert serves_discovery()
        broker._proc.kill()  # the node's own broker, started in this process
        broker._proc.wait(5)
        assert not serves_discovery()
        wait_for(serves_discovery, 30)
        assert node.broker_supervisor.restarts == 1
    finally:
        node.bridge.stop()
        node.bridge = None
        node.broker.stop()
