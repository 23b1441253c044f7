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


def test_safety_refuses_unlock_by_ros_tool_call_and_plan(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from conftest import wait_for
    from nodes.appliance_node import ApplianceNode
    from personal.msg import HomePlan, PlanResult, ToolCall, ToolResult

    node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=[
        Parameter("seed", value=NOBODY_HOME)]))
    lock = _lock_name(node.household)
    io = ros_context.make_node("safety_io")
    reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    results, plans = {}, {}
    io.create_subscription(ToolResult, "home/tool_result", lambda m: results.__setitem__(m.request_id, m), reliable)
    io.create_subscription(PlanResult, "home/plan_result", lambda m: plans.__setitem__(m.request_id, m), reliable)
    calls = io.create_publisher(ToolCall, "home/tool_call", reliable)
    plan_pub = io.create_publisher(HomePlan, "home/plan", reliable)
    wait_for(lambda: calls.get_subscription_count() and plan_pub.get_subscription_count(), 20)
    calls.publish(ToolCall(request_id="u", tool="run_appliance_feature", arguments_json=json.dumps(
        {"appliance_name": lock, "feature_method": "unlock", "feature_kwargs": {"user": "intruder"}})))
    plan_pub.publish(HomePlan(request_id="p", apply=True, plan_json=json.dumps([{"program_id": "p", "steps": [
        {"step_id": "1", "appliance": lock, "feature": "unlock", "category": ["ROUTINE"], "args": {"user": "x"}}]}])))
    wait_for(lambda: "u" in results and "p" in plans, 20)
    assert not results["u"].ok and "refused" in results["u"].message
    assert plans["p"].refused_steps == 1
    assert node.household.appliance(lock).appliance.state["locked"] is True
