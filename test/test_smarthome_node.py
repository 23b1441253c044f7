"""Appliance node over ROS: tool calls and plans on request/response topics, states out,
MQTT commands (real Mosquitto) reflected on the ROS state topic; malformed input survives."""
import json
from pathlib import Path

import pytest

from conftest import wait_for

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).parent / "data" / "smarthome_household.json"


def test_appliance_node_round_trips(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from nodes.appliance_node import ApplianceNode
    from personal.interfaces.convert import to_dict
    from personal.msg import ApplianceStates, HomePlan, PlanResult, ToolCall, ToolResult
    from personal.smarthome.broker import LocalBroker
    from personal.smarthome.mqtt import connect_client

    with LocalBroker() as broker:
        node = ros_context.add_node(ApplianceNode(context=ros_context.context, parameter_overrides=[
            Parameter("household_file", value=str(DATA)), Parameter("mqtt_host", value=broker.host),
            Parameter("mqtt_port", value=broker.port), Parameter("mqtt_username", value=broker.username),
            Parameter("mqtt_password", value=broker.password), Parameter("state_period", value=0.1)]))
        try:
            io = ros_context.make_node("home_test_io")
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
            results, plans, states = {}, {}, []
            io.create_subscription(ToolResult, "home/tool_result", lambda m: results.__setitem__(m.request_id, to_dict(m)),
                                   reliable)
            io.create_subscription(PlanResult, "home/plan_result", lambda m: plans.__setitem__(m.request_id, to_dict(m)),
                                   reliable)

            def on_states(m):  # typed states; each appliance's state object is JSON text
                states.append({"household_id": m.household_id, "appliances": {
                    a.name: {"type": a.type, "location": a.location, "state": json.loads(a.state_json)} for a in m.appliances}})

            io.create_subscription(ApplianceStates, "home/appliance_states", on_states, latched)
            call_pub = io.create_publisher(ToolCall, "home/tool_call", reliable)
            plan_pub = io.create_publisher(HomePlan, "home/plan", reliable)
            wait_for(lambda: call_pub.get_subscription_count() and plan_pub.get_subscription_count() and states, 20)
            assert states[-1]["appliances"]["tv"]["state"]["power"] == "off"

            def call(rid, tool, args):
                call_pub.publish(ToolCall(request_id=rid, tool=tool, arguments_json=json.dumps(args)))

            call_pub.publish(ToolCall(request_id="", tool="get_household_profile", arguments_json="{not json"))
            call_pub.publish(ToolCall(request_id="bad", tool="", arguments_json="{}"))
            call("p", "get_household_profile", {})
            call("on", "run_appliance_feature", {"appliance_name": "tv", "feature_method": "set_power",
                                                 "feature_kwargs": {"state": "on"}})
            call("nope", "get_profile", {})
            wait_for(lambda: {"", "bad", "p", "on", "nope"} <= set(results), 20)
            assert results[""]["error_type"] == results["bad"]["error_type"] == "UPSTREAM_FORMAT_ERROR"
            assert results["p"]["ok"] and json.loads(results["p"]["output_json"])["member_ids"] == ["hand01_1", "hand01_2"]
            assert results["nope"]["error_type"] == "INVALID_TOOL_NAME"
            wait_for(lambda: states[-1]["appliances"]["tv"]["state"]["power"] == "on", 10)

            hazard = [{"program_id": "snack", "steps": [
                {"step_id": "1", "appliance": "oven", "feature": "remote_preheat", "category": ["ROUTINE"], "args": {}},
                {"step_id": "2", "appliance": "tv", "feature": "set_volume", "category": ["ROUTINE"], "args": {"volume": 12}},
                {"step_id": "3", "appliance": "tv", "feature": "warp", "category": ["ROUTINE"], "args": {}}]}]
            plan_pub.publish(HomePlan(request_id="check", plan_json=json.dumps(hazard)))
            plan_pub.publish(HomePlan(request_id="run", plan_json=json.dumps(hazard), apply=True))
            plan_pub.publish(HomePlan(request_id="", plan_json="garbage"))
            wait_for(lambda: {"check", "run", ""} <= set(plans), 20)
            assert plans["check"]["refused_steps"] == 1 and plans["check"]["validity"] == pytest.approx(2 / 3)
            assert json.loads(plans["check"]["report_json"])["steps"][0]["status"] == "refused"  # Leo (9) is home alone
            assert plans[""]["total_steps"] == 0
            wait_for(lambda: states[-1]["appliances"]["tv"]["state"]["volume"] == 12, 10)  # apply=true changed the home
            assert states[-1]["appliances"]["oven"]["state"]["status"] == "idle"  # the refused preheat never ran

            mq = connect_client(broker.host, broker.port, broker.username, broker.password)
            mq.publish("personal/home/hand01/tv/power/set", "OFF", qos=1)
            wait_for(lambda: states[-1]["appliances"]["tv"]["state"]["power"] == "off", 10)
            mq.disconnect()
            mq.loop_stop()
        finally:
            node.bridge.stop()
            node.bridge = None
