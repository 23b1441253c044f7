"""Appliance-control node: one household's appliances behind PersonalHomeTools.

Topics (typed ``personal/msg`` interfaces):
- ``home/tool_call`` (ToolCall) -> ``home/tool_result`` (ToolResult), matched by request_id.
- ``home/plan`` (HomePlan) -> ``home/plan_result`` (PlanResult): validity, refusals,
  per-step report; ``apply: true`` runs the plan on the live household (safety layer included).
- ``home/appliance_states`` (ApplianceStates, transient local): every appliance's state, republished on change.

With ``mqtt_host`` set (or ``mqtt_local_broker: true``, which starts a password-protected
Mosquitto on loopback), every appliance is mirrored to MQTT with Home Assistant discovery;
MQTT commands go through the same ToolExecutor validation and safety rules. The local broker is
supervised: its death is logged as an error and it is restarted on the same port (at most
``BROKER_RESTARTS`` times; then the node exits with status 1, so the graph fails visibly). Malformed requests (arguments that
are not a JSON object, an empty tool name) are logged and answered with an UPSTREAM_FORMAT_ERROR
result, never raised.
"""
from __future__ import annotations

import json
import threading

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.msg import ApplianceState, ApplianceStates, HomePlan, PlanResult, ToolCall, ToolResult
from personal.smarthome import jsonin
from personal.smarthome.generator import generate_household
from personal.smarthome.household import load_household
from personal.smarthome.plans import PlanExecutor
from personal.smarthome.tools import PersonalHomeTools, ToolExecutor
from nodes.lifecycle import run_node, subscribe

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
BROKER_RESTARTS = 5  # restarts of a local broker that died, before the node gives up
TOOL_LOG_SIZE = 100  # tool calls kept (clipped) in ToolExecutor.log; counts cover every call


class ApplianceNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("appliance_node", **kwargs)
        d = self.declare_parameter
        path = d("household_file", "").value
        self.household = load_household(path) if path else generate_household(int(d("seed", 0).value))
        tools = PersonalHomeTools(self.household, require_discovery=bool(d("require_discovery", False).value))
        if not tools.require_discovery:
            tools.discovered.update(self.household.appliance_names())
        self.tool_executor = ToolExecutor(tools, log_limit=TOOL_LOG_SIZE)  # a long-lived node: bounded log
        self.lock = threading.Lock()
        self.pub_result = self.create_publisher(ToolResult, "home/tool_result", RELIABLE)
        self.pub_plan = self.create_publisher(PlanResult, "home/plan_result", RELIABLE)
        self.pub_states = self.create_publisher(ApplianceStates, "home/appliance_states", LATCHED)
        subscribe(self, ToolCall, "home/tool_call", self._on_tool_call, RELIABLE)
        subscribe(self, HomePlan, "home/plan", self._on_plan, RELIABLE)
        self._last_states = ""
        self.bridge = None
        self.broker = None
        self.broker_supervisor = None
        self._start_mqtt(d)
        self.create_timer(float(d("state_period", 0.5).value), self._publish_states)
        self._publish_states()
        self.get_logger().info(f"household {self.household.household_id}: {len(self.household.appliances)} appliances "
                               f"({', '.join(self.household.appliance_names())})")

    def _start_mqtt(self, d) -> None:
        host = d("mqtt_host", "").value
        port = int(d("mqtt_port", 1883).value)
        user, password = d("mqtt_username", "").value or None, d("mqtt_password", "").value or None
        if bool(d("mqtt_local_broker", False).value):
            from personal.smarthome.broker import LocalBroker

            from personal.smarthome.broker import BrokerSupervisor

            self.broker = LocalBroker().start()
            host, port, user, password = self.broker.host, self.broker.port, self.broker.username, self.broker.password
            self.get_logger().info(f"started local Mosquitto on {host}:{port} (user {user!r}, anonymous refused)")
            self.broker_supervisor = BrokerSupervisor(self.broker, BROKER_RESTARTS, lambda m: self.get_logger().error(m))
            self.create_timer(1.0, self._supervise_broker)
        if not host:
            return
        from personal.smarthome.mqtt import HomeAssistantBridge

        self.bridge = HomeAssistantBridge(self.tool_executor, host, port, user, password,
                                          discovery_prefix=d("discovery_prefix", "homeassistant").value,
                                          base_topic=d("base_topic", "personal/home").value,
                                          on_event=lambda m: self.get_logger().warning(m)).start()
        self.get_logger().info(f"mirroring to MQTT {host}:{port} under {self.bridge.base} (HA discovery prefix "
                               f"{self.bridge.discovery_prefix})")

    def _supervise_broker(self) -> None:
        if self.broker_supervisor.check() == "failed":
            # not a message to drop: the mirror this node was asked for is gone for good (timers are unguarded)
            raise SystemExit(f"appliance_node: the local MQTT broker is down and was not restarted "
                             f"({self.broker_supervisor.restarts} restarts)")

    # -- states -----------------------------------------------------------------------------
    def _publish_states(self) -> None:
        with self.lock:
            states = {p.appliance.name: {"type": p.appliance.type, "location": p.location, "state": p.appliance.state}
                      for p in self.household.appliances}
            text = json.dumps({"household_id": self.household.household_id, "appliances": states}, sort_keys=True, default=str)
        if text != self._last_states:
            self.pub_states.publish(ApplianceStates(household_id=str(self.household.household_id), appliances=[
                ApplianceState(name=name, type=str(a["type"]), location=str(a["location"] or ""),
                               state_json=json.dumps(a["state"], sort_keys=True, default=str))
                for name, a in sorted(states.items())]))
            self._last_states = text
        if self.bridge is not None:
            self.bridge.publish_states()

    # -- requests ----------------------------------------------------------------------------
    def _on_tool_call(self, msg: ToolCall) -> None:
        try:
            args = jsonin.loads(msg.arguments_json or "{}")  # ValueError also for 100k-deep nesting
            if not isinstance(args, dict):
                raise ValueError(f"arguments_json must hold a JSON object, got {type(args).__name__}")
            if not msg.tool:
                raise ValueError("empty tool name")
        except ValueError as exc:
            self.get_logger().error(f"home/tool_call {msg.request_id!r}: malformed ({exc}); answered with UPSTREAM_FORMAT_ERROR")
            self.pub_result.publish(ToolResult(request_id=msg.request_id, tool=msg.tool, ok=False, output_json="null",
                                               error_type="UPSTREAM_FORMAT_ERROR", message=str(exc)))
            return
        with self.lock:
            result = self.tool_executor.call(msg.tool, args)
        self.pub_result.publish(ToolResult(
            request_id=msg.request_id, tool=msg.tool, ok=bool(result.ok),
            output_json=json.dumps(result.output, default=str), error_type=result.error_type or "",
            message=str(result.message)))
        if not result.ok:
            self.get_logger().info(f"tool call {msg.request_id} {msg.tool}: {result.error_type}: {result.message}")
        self._publish_states()

    def _on_plan(self, msg: HomePlan) -> None:
        # a plan that is not valid JSON is a recorded format error of the report, not a crash
        with self.lock:
            report = PlanExecutor(self.household).execute(msg.plan_json, in_place=bool(msg.apply))
        self.pub_plan.publish(PlanResult(
            request_id=msg.request_id, validity=float(report.validity), total_steps=int(report.total),
            refused_steps=len(report.refusals), report_json=json.dumps(report.to_dict(), default=str)))
        self.get_logger().info(f"plan {msg.request_id}: validity {report.validity:.2f}, {len(report.refusals)} refused"
                               + (f", format error: {report.format_error}" if report.format_error else ""))
        self._publish_states()

    def destroy_node(self) -> None:
        if self.bridge is not None:
            self.bridge.stop()
        if self.broker is not None:
            self.broker.stop()
        super().destroy_node()


def main(args=None) -> None:
    run_node(ApplianceNode, args)


if __name__ == "__main__":
    main()
