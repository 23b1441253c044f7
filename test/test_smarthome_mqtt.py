"""MQTT mirror against a real Mosquitto broker started on loopback with a password file."""
import json
import queue
import time
from pathlib import Path

import pytest

from personal.smarthome.broker import LocalBroker
from personal.smarthome.household import load_household
from personal.smarthome.mqtt import HomeAssistantBridge, MqttError, connect_client
from personal.smarthome.tools import PersonalHomeTools, ToolExecutor

DATA = Path(__file__).parent / "data" / "smarthome_household.json"


@pytest.fixture(scope="module")
def broker():
    with LocalBroker() as b:
        yield b


@pytest.fixture
def bridge(broker):
    h = load_household(DATA)
    br = HomeAssistantBridge(ToolExecutor(PersonalHomeTools(h)), broker.host, broker.port, broker.username, broker.password,
                             base_topic="test/home").start()
    yield br
    br.stop()


class Listener:
    """A test client whose subscribe() returns only after the broker's SUBACK (so nothing published
    right after it is missed)."""

    def __init__(self, broker):
        self.client = connect_client(broker.host, broker.port, broker.username, broker.password)
        self.msgs: queue.Queue = queue.Queue()
        self.acked: queue.Queue = queue.Queue()
        self.client.on_message = lambda cl, u, m: self.msgs.put((m.topic, m.payload.decode(), m.retain))
        self.client.on_subscribe = lambda cl, u, mid, rcs, props: self.acked.put(mid)

    def subscribe(self, topic):
        _, mid = self.client.subscribe(topic, qos=1)
        deadline = time.monotonic() + 15
        while self.acked.get(timeout=max(0.01, deadline - time.monotonic())) != mid:
            pass

    def publish(self, *args, **kwargs):
        return self.client.publish(*args, **kwargs)


@pytest.fixture
def listener(broker):
    lis = Listener(broker)
    yield lis, lis.msgs
    lis.client.disconnect()
    lis.client.loop_stop()


def wait_for(msgs, pred, timeout=15.0):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            item = msgs.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if pred(*item):
            return item
        seen.append(item[:2])
    raise AssertionError(f"expected MQTT message did not arrive within {timeout} s; got {seen[-5:]}")


def test_anonymous_and_wrong_password_are_refused(broker):
    with pytest.raises(MqttError, match="Not authorized"):
        connect_client(broker.host, broker.port)
    with pytest.raises(MqttError, match="Not authorized"):
        connect_client(broker.host, broker.port, broker.username, "not-the-password")
    c = connect_client(broker.host, broker.port, broker.username, broker.password)
    c.disconnect()
    c.loop_stop()


def _collect_configs(listener, n):
    listener.subscribe("homeassistant/#")
    configs, retained = {}, set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(configs) < n:
        topic, payload, retain = listener.msgs.get(timeout=10)
        assert topic.endswith("/config"), topic
        configs[topic] = json.loads(payload)
        if retain:
            retained.add(topic)
    return configs, retained


def test_discovery_configs_follow_home_assistant_conventions(bridge, listener, broker):
    n = len(bridge.discovery_messages())
    # the first subscriber may catch the bridge's publications live (retain flag off on delivery)
    configs, _ = _collect_configs(listener[0], n)
    assert len(configs) == n
    # a client that subscribes afterwards (Home Assistant restarting) gets every config retained
    late = Listener(broker)
    try:
        late_configs, retained = _collect_configs(late, n)
    finally:
        late.client.disconnect()
        late.client.loop_stop()
    assert late_configs == configs and retained == set(configs)
    sw = configs["homeassistant/switch/hand01/tv_power/config"]
    assert sw["command_topic"] == "test/home/hand01/tv/power/set" and sw["state_topic"] == "test/home/hand01/tv/state"
    assert sw["unique_id"] == "personal_hand01_tv_power" and sw["device"]["suggested_area"] == "Living Room"
    assert sw["availability_topic"] == "test/home/hand01/availability"
    assert "homeassistant/lock/hand01/door_lock_lock/config" in configs
    assert configs["homeassistant/cover/hand01/garage_door_opener_door/config"]["device_class"] == "garage"
    climate = configs["homeassistant/climate/hand01/thermostat_climate/config"]
    assert climate["temperature_command_topic"] == "test/home/hand01/thermostat/target_temperature/set"
    assert sum(t.startswith("homeassistant/sensor/") for t in configs) == 9


def test_command_to_state_round_trip(bridge, listener):
    c, msgs = listener
    c.subscribe("test/home/hand01/#")
    state = wait_for(msgs, lambda t, p, r: t == "test/home/hand01/tv/state")
    assert json.loads(state[1])["state"]["power"] == "off"
    c.publish("test/home/hand01/tv/power/set", "ON", qos=1)
    _, payload, _ = wait_for(msgs, lambda t, p, r: t.endswith("tv/state") and json.loads(p)["state"]["power"] == "on")
    assert bridge.h.appliance("tv").appliance.state["power"] == "on"
    c.publish("test/home/hand01/thermostat/target_temperature/set", "68.4", qos=1)
    wait_for(msgs, lambda t, p, r: t.endswith("thermostat/state") and json.loads(p)["state"]["target_temperature_f"] == 68)
    c.publish("test/home/hand01/tv/feature/set", json.dumps({"feature": "set_volume", "args": {"volume": 35},
                                                              "request_id": "r-1"}), qos=1)
    _, res, _ = wait_for(msgs, lambda t, p, r: t.endswith("tv/feature/result") and json.loads(p)["request_id"] == "r-1")
    assert json.loads(res)["ok"] and json.loads(res)["output"] == {"volume": 35}
    wait_for(msgs, lambda t, p, r: t.endswith("tv/state") and json.loads(p)["state"]["volume"] == 35)
    bridge.h.context.situation.members_present.append("hand01_1")  # an adult home: unlocking is allowed (issue 28 item 5)
    c.publish("test/home/hand01/door_lock/lock/set", "UNLOCK", qos=1)
    wait_for(msgs, lambda t, p, r: t.endswith("door_lock/state") and json.loads(p)["summary"] == "unlocked")


def test_commands_go_through_the_same_validation(bridge, listener):
    c, msgs = listener
    c.subscribe("test/home/hand01/+/feature/result")
    cases = [("tv/power/set", "BANANA", "UPSTREAM_FORMAT_ERROR"),
             ("thermostat/target_temperature/set", "500", "EXECUTION_ERROR"),
             ("tv/feature/set", "{not json", "UPSTREAM_FORMAT_ERROR"),
             ("oven/feature/set", json.dumps({"feature": "remote_preheat", "args": {"temperature_f": 99}}), "EXECUTION_ERROR"),
             ("speaker/feature/set", json.dumps({"feature": "teleport", "args": {}}), "EXECUTION_ERROR")]
    for topic, payload, kind in cases:
        c.publish(f"test/home/hand01/{topic}", payload, qos=1)
        _, res, _ = wait_for(msgs, lambda t, p, r: json.loads(p)["topic"].endswith(topic))
        res = json.loads(res)
        assert not res["ok"] and res["error_type"] == kind, (topic, res)
    assert bridge.h.appliance("thermostat").appliance.state["target_temperature_f"] == 71  # unchanged
    assert bridge.client is not None and bridge.commands_handled == len(cases)  # the bridge survived them all


def test_extreme_numbers_get_an_answer_and_change_nothing(bridge, listener):
    """issue 15, finding 11: `.../set` of 1e400 raised OverflowError (a traceback, no reply on the result topic)."""
    c, msgs = listener
    c.subscribe("test/home/hand01/+/feature/result")
    cases = [("thermostat/target_temperature/set", "1e400"), ("thermostat/target_temperature/set", "-inf"),
             ("thermostat/target_temperature/set", "nan"),
             ("tv/feature/set", '{"feature": "set_volume", "args": {"volume": 1e400}}'),
             ("tv/feature/set", '{"feature": "set_volume", "args": {"volume": NaN}}'),
             ("tv/feature/set", json.dumps({"feature": "set_volume", "args": {"volume": "x" * 100_000}}))]
    for topic, payload in cases:
        c.publish(f"test/home/hand01/{topic}", payload, qos=1)
        _, res, _ = wait_for(msgs, lambda t, p, r: json.loads(p)["topic"].endswith(topic))
        res = json.loads(res)
        assert not res["ok"] and res["error_type"] in ("UPSTREAM_FORMAT_ERROR", "EXECUTION_ERROR"), (topic, payload[:40], res)
    state = bridge.h.appliance("thermostat").appliance.state
    assert state["target_temperature_f"] == 71 and bridge.h.appliance("tv").appliance.state.get("volume") != 1e400
    c.publish("test/home/hand01/tv/power/set", "ON", qos=1)  # set_volume needs the TV on
    c.publish("test/home/hand01/tv/feature/set", json.dumps({"feature": "set_volume", "args": {"volume": 20}, "request_id": "ok"}), qos=1)
    _, res, _ = wait_for(msgs, lambda t, p, r: json.loads(p).get("request_id") == "ok")
    assert json.loads(res)["ok"]  # the bridge still serves good commands


def test_external_state_changes_are_published(bridge, listener):
    c, msgs = listener
    c.subscribe("test/home/hand01/speaker/state")
    wait_for(msgs, lambda t, p, r: True)
    bridge.executor.call("run_appliance_feature", {"appliance_name": "speaker", "feature_method": "set_volume",
                                                   "feature_kwargs": {"volume": 9}})
    assert bridge.publish_states() == 1
    wait_for(msgs, lambda t, p, r: json.loads(p)["state"]["volume"] == 9)
