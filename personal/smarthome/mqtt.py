"""Mirror a household's appliances to an MQTT broker with Home Assistant's MQTT discovery
conventions, so a real Home Assistant (or real devices) can take part.

Per appliance ``obj`` of household ``hid`` (``base`` = ``personal/home`` by default):

- discovery configs, retained, under ``<discovery_prefix>/<component>/<hid>/<obj>_<what>/config``:
  a ``sensor`` with the full state as JSON attributes for every appliance; a ``switch`` for
  appliances with a power feature; a ``lock`` for door locks; a ``cover`` for garage doors;
  a ``climate`` entity for thermostats. All share one ``device`` per appliance.
- state: ``<base>/<hid>/<obj>/state`` (retained JSON of the appliance state, location, type).
- commands: ``<base>/<hid>/<obj>/power/set`` (ON/OFF), ``.../lock/set`` (LOCK/UNLOCK),
  ``.../cover/set`` (OPEN/CLOSE), ``.../target_temperature/set`` (number, F),
  ``.../mode/set`` (heat/cool/auto/off) and the generic ``.../feature/set`` taking
  ``{"feature": <method>, "args": {...}, "request_id": "..."}``; every command's outcome is
  published on ``.../feature/result``.
- availability: ``<base>/<hid>/availability`` (online/offline, retained, with a last will).

Entity ids carry the household: ``unique_id`` ``personal_<hid>_<obj>_<what>``,
``default_entity_id`` ``<component>.<hid>_<obj>_<what>`` (Home Assistant 2025.10+, core PR
#151775) and the same ``object_id`` for older versions (newer ones ignore it when
``default_entity_id`` is present), so a second household never gets ``_2`` entity names.

Every command is turned into a ``run_appliance_feature`` call through the same
``ToolExecutor`` the agents use, so it gets the same validation, safety rules and typed errors;
a bad payload is answered on the result topic and logged, never raised. The way Home Assistant
users expect MQTT devices to behave (docs: integrations/mqtt, "MQTT discovery", "Birth and last will"):

- a command that arrives retained (stored on the broker, or published with the retain flag) is
  never executed: it is answered with an error and cleared from the broker; commands are never
  published retained (configs say ``retain: false``);
- on every (re)connect, and whenever Home Assistant's birth message ``online`` arrives on
  ``<discovery_prefix>/status``, the bridge republishes every discovery config, ``online`` and
  every state (retained); the last will says ``offline``;
- another client's message on one of the bridge's state or availability topics (a spoofed
  retained state) is answered by republishing the true one, retained;
- a command payload over ``MAX_COMMAND_BYTES`` is refused unread, and the result topic never
  carries more than a short preview of what was sent.

The bridge speaks MQTT 5 so it can subscribe with *no local* (its own publications never come
back to it, so any message on its state topics is someone else's) and *retain as published*
(a live command published retained is recognisable as such).
"""
from __future__ import annotations

import json
import math
import logging
import socket
import threading
import uuid
from typing import Any, Callable

import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from personal.smarthome import jsonin
from personal.smarthome.tools import ToolExecutor, ToolResult

log = logging.getLogger(__name__)

MAX_COMMAND_BYTES = 64 * 1024  # a command payload beyond this is refused without being decoded
MAX_RESULT_TEXT = 1000  # characters of any text field of a result (messages quote arguments)
MAX_QUEUED = 1000  # messages paho keeps for a broker that is away (it keeps every one by default)
RECONNECT_DELAY_S = (1, 5)  # paho's reconnect back-off, min and max (its default max is 120 s)


class MqttError(RuntimeError):
    pass


def connect_client(host: str, port: int, username: str | None = None, password: str | None = None,
                   client_id: str | None = None, timeout: float = 5.0, will: tuple[str, str] | None = None,
                   protocol: int = mqtt.MQTTv311, max_queued: int = 0) -> mqtt.Client:
    """A connected paho client with its network loop running; raises MqttError (with the broker's reason) otherwise."""
    client = mqtt.Client(callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
                         client_id=client_id or f"personal-{uuid.uuid4().hex[:8]}", protocol=protocol)
    if max_queued:
        client.max_queued_messages_set(max_queued)  # settable only before the connection
    if username is not None:
        client.username_pw_set(username, password)
    if will:
        client.will_set(will[0], will[1], qos=1, retain=True)
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def on_connect(c, userdata, flags, reason_code, properties):
        outcome["rc"] = reason_code
        done.set()

    client.on_connect = on_connect
    try:
        client.connect(host, port, keepalive=30)
    except OSError as exc:
        raise MqttError(f"cannot reach MQTT broker {host}:{port}: {exc}") from None
    sock = client.socket()
    if sock is not None and hasattr(sock, "setsockopt"):
        # paho leaves Nagle on; small command/state messages would wait ~40 ms for delayed ACKs
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.loop_start()
    if not done.wait(timeout):
        client.loop_stop()
        raise MqttError(f"no CONNACK from {host}:{port} within {timeout} s")
    rc = outcome["rc"]
    if rc.is_failure:
        client.loop_stop()
        client.disconnect()
        raise MqttError(f"broker {host}:{port} refused the connection: {rc}")
    client.on_connect = None
    return client


def _obj(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name.lower())


def _clip(text: Any, limit: int = MAX_RESULT_TEXT) -> Any:
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters not shown]"


class HomeAssistantBridge:
    def __init__(self, executor: ToolExecutor, host: str, port: int, username: str | None = None,
                 password: str | None = None, discovery_prefix: str = "homeassistant", base_topic: str = "personal/home",
                 on_event: Callable[[str], None] | None = None) -> None:
        self.executor = executor
        self.tools = executor.tools
        self.h = executor.tools.household
        self.hid = _obj(self.h.household_id)
        self.discovery_prefix = discovery_prefix.rstrip("/")
        self.base = f"{base_topic.rstrip('/')}/{self.hid}"
        self.conn = (host, port, username, password)
        self.on_event = on_event or (lambda msg: log.info(msg))
        self.client: mqtt.Client | None = None
        self._published: dict[str, str] = {}
        self._lock = threading.Lock()
        self.tools.discovered.update(self.h.appliance_names())  # MQTT commands address appliances by name directly
        self.birth_topic = f"{self.discovery_prefix}/status"  # Home Assistant's default birth / last-will topic
        self.commands_handled = 0
        self.retained_commands_refused = 0
        self.republished = 0  # full republications: connects, reconnects, Home Assistant births
        self.corrections = 0  # foreign state / availability messages answered with the true one
        self._stopping = False

    # -- topics --------------------------------------------------------------------------
    def state_topic(self, name: str) -> str:
        return f"{self.base}/{_obj(name)}/state"

    def command_topic(self, name: str, what: str) -> str:
        return f"{self.base}/{_obj(name)}/{what}/set"

    def result_topic(self, name: str) -> str:
        return f"{self.base}/{_obj(name)}/feature/result"

    @property
    def availability_topic(self) -> str:
        return f"{self.base}/availability"

    # -- lifecycle -------------------------------------------------------------------------
    def subscriptions(self) -> list[tuple[str, SubscribeOptions]]:
        own = SubscribeOptions(qos=1, noLocal=True)  # never our own publications back
        return [(f"{self.base}/+/+/set", SubscribeOptions(qos=1, noLocal=True, retainAsPublished=True)),
                (f"{self.base}/+/state", own), (self.availability_topic, own), (self.birth_topic, own)]

    def start(self) -> "HomeAssistantBridge":
        host, port, user, pw = self.conn
        self.client = connect_client(host, port, user, pw, client_id=f"personal-home-{self.hid}-{uuid.uuid4().hex[:4]}",
                                     will=(self.availability_topic, "offline"), protocol=mqtt.MQTTv5,
                                     max_queued=MAX_QUEUED)
        self.client.reconnect_delay_set(*RECONNECT_DELAY_S)
        self.client.on_message = self._on_message
        acked = threading.Event()
        self.client.on_subscribe = lambda c, u, mid, rcs, p: acked.set()
        self.client.subscribe(self.subscriptions())
        if not acked.wait(10):  # commands sent right after start() must not be lost
            raise MqttError(f"no SUBACK for {self.base}/+/+/set within 10 s")
        self.client.on_connect = self._on_reconnect
        self.client.on_disconnect = self._on_disconnect
        self.publish_all()
        return self

    def _on_reconnect(self, client, userdata, flags, reason_code, properties) -> None:
        """A broker restart loses subscriptions and (without persistence) every retained message."""
        if reason_code.is_failure:
            return
        client.subscribe(self.subscriptions())
        self.publish_all()
        self.on_event(f"MQTT reconnected to {self.conn[0]}:{self.conn[1]}: resubscribed, republished discovery, "
                      "availability and state")

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if not self._stopping:
            self.on_event(f"MQTT connection to {self.conn[0]}:{self.conn[1]} lost ({reason_code}); reconnecting")

    def publish_all(self) -> None:
        """Every discovery config, ``online`` and every state, retained (what Home Assistant needs to rebuild)."""
        if self.client is None:
            return
        for topic, payload in self.discovery_messages():
            self.client.publish(topic, json.dumps(payload), qos=1, retain=True)
        self.client.publish(self.availability_topic, "online", qos=1, retain=True)
        self.publish_states(force=True)
        self.republished += 1

    def stop(self) -> None:
        if self.client is not None:
            self._stopping = True
            info = self.client.publish(self.availability_topic, "offline", qos=1, retain=True)
            try:
                info.wait_for_publish(2)
            except RuntimeError:  # the broker is away: its last will says offline for us
                pass
            self.client.disconnect()
            self.client.loop_stop()
            self.client = None

    # -- discovery ---------------------------------------------------------------------------
    def discovery_messages(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for placed in self.h.appliances:
            a, obj = placed.appliance, _obj(placed.appliance.name)
            device = {"identifiers": [f"personal_{self.hid}_{obj}"], "name": f"{a.name} ({self.h.household_id})",
                      "manufacturer": "personal", "model": a.type, "suggested_area": placed.location}
            common = {"device": device, "availability_topic": self.availability_topic, "state_topic": self.state_topic(a.name)}

            def cfg(component: str, what: str, **fields) -> None:
                entity = f"{self.hid}_{obj}_{what}"  # household first: two households never collide (no "_2" names)
                if "command_topic" in fields or "mode_command_topic" in fields:
                    fields["retain"] = False  # Home Assistant publishes our commands unretained
                out.append((f"{self.discovery_prefix}/{component}/{self.hid}/{obj}_{what}/config",
                            {**common, "unique_id": f"personal_{entity}", "default_entity_id": f"{component}.{entity}",
                             "object_id": entity, **fields}))

            cfg("sensor", "state", name="State", value_template="{{ value_json.summary }}", json_attributes_topic=self.state_topic(a.name))
            features = self._features(a.type)
            if "set_power" in features:
                cfg("switch", "power", name="Power", command_topic=self.command_topic(a.name, "power"), payload_on="ON",
                    payload_off="OFF", state_on="on", state_off="off", value_template="{{ value_json.state.power }}")
            if a.type == "door_lock":
                cfg("lock", "lock", name="Lock", command_topic=self.command_topic(a.name, "lock"), payload_lock="LOCK",
                    payload_unlock="UNLOCK", state_locked="LOCKED", state_unlocked="UNLOCKED",
                    value_template="{{ 'LOCKED' if value_json.state.locked else 'UNLOCKED' }}")
            if a.type == "garage_door_opener":
                cfg("cover", "door", name="Door", device_class="garage", command_topic=self.command_topic(a.name, "cover"),
                    payload_open="OPEN", payload_close="CLOSE", payload_stop=None, state_open="open", state_closed="closed",
                    value_template="{{ value_json.state.door }}")
            if a.type == "thermostat":
                st = self.state_topic(a.name)
                cfg("climate", "climate", name="Thermostat", temperature_unit="F", min_temp=50, max_temp=90, precision=1.0,
                    modes=["heat", "cool", "auto", "off"], mode_command_topic=self.command_topic(a.name, "mode"),
                    mode_state_topic=st, mode_state_template="{{ value_json.state.mode }}",
                    temperature_command_topic=self.command_topic(a.name, "target_temperature"), temperature_state_topic=st,
                    temperature_state_template="{{ value_json.state.target_temperature_f }}", current_temperature_topic=st,
                    current_temperature_template="{{ value_json.state.current_temperature_f }}")
        return out

    @staticmethod
    def _features(type_: str) -> set[str]:
        from personal.smarthome.appliances import CATALOGUE

        return set(CATALOGUE[type_].features)

    # -- state -----------------------------------------------------------------------------------
    def publish_states(self, force: bool = False) -> int:
        """Publish (retained) every appliance whose state changed since the last publish."""
        if self.client is None:
            return 0
        n = 0
        with self._lock:
            for placed in self.h.appliances:
                a = placed.appliance
                summary = a.state.get("power") or a.state.get("status") or a.state.get("door") or "ok"
                if "locked" in a.state:
                    summary = "locked" if a.state["locked"] else "unlocked"
                payload = json.dumps({"name": a.name, "type": a.type, "location": placed.location, "summary": summary,
                                      "state": a.state}, sort_keys=True, default=str)
                topic = self.state_topic(a.name)
                if force or self._published.get(topic) != payload:
                    self.client.publish(topic, payload, qos=1, retain=True)
                    self._published[topic] = payload
                    n += 1
        return n

    # -- commands --------------------------------------------------------------------------------
    def _appliance_for(self, obj: str):
        for placed in self.h.appliances:
            if _obj(placed.appliance.name) == obj:
                return placed
        return None

    def _on_message(self, client, userdata, msg) -> None:
        try:
            if msg.topic == self.birth_topic:
                if msg.payload.strip() == b"online":  # Home Assistant (re)started: it wants everything again
                    self.publish_all()
                return
            if msg.topic == self.availability_topic or msg.topic.endswith("/state"):
                self._correct_foreign(msg.topic, msg.payload)
                return
            if msg.retain:
                self._refuse_retained(msg.topic, msg.payload)
                return
            if not msg.payload:  # an empty message clears a retained one; it is no command
                return
            if len(msg.payload) > MAX_COMMAND_BYTES:
                self._answer(msg.topic, ToolResult("run_appliance_feature", None, False, None, "UPSTREAM_FORMAT_ERROR",
                                                   f"payload of {len(msg.payload)} bytes refused: commands are limited to "
                                                   f"{MAX_COMMAND_BYTES} bytes"))
                return
            self.handle_command(msg.topic, msg.payload.decode("utf-8", errors="replace"))
        except Exception as exc:  # a callback must never kill the network loop
            log.exception("MQTT message on %s failed: %s", msg.topic, exc)

    def _correct_foreign(self, topic: str, payload: bytes) -> None:
        """Someone else wrote one of our state / availability topics (no-local: it is never our own echo)."""
        if self._stopping:
            return
        true = "online" if topic == self.availability_topic else self._published.get(topic)
        if true is None or payload.decode("utf-8", errors="replace") == true:
            return
        self.client.publish(topic, true, qos=1, retain=True)
        self.corrections += 1
        self.on_event(f"MQTT: another client published {len(payload)} bytes on {topic}; republished the true state")

    def _refuse_retained(self, topic: str, payload: bytes) -> None:
        """A retained command would run again at every restart of the node: refuse it and clear it."""
        if not payload:
            return
        self.retained_commands_refused += 1
        self.client.publish(topic, b"", qos=1, retain=True)  # an empty retained message deletes the stored one
        self._answer(topic, ToolResult("run_appliance_feature", None, False, None, "UPSTREAM_FORMAT_ERROR",
                                       "retained command refused (commands must be published with retain false); "
                                       "cleared it from the broker"))

    def _answer(self, topic: str, result: ToolResult, request_id: Any = None) -> None:
        """Publish a command's outcome on its appliance's result topic, every text field clipped."""
        placed = self._appliance_for(topic[len(self.base) + 1:].split("/")[0])
        if not result.ok:
            self.on_event(f"MQTT command {_clip(topic, 200)} rejected: {result.error_type}: {_clip(result.message, 300)}")
        if self.client is None or placed is None:
            return
        out = {"request_id": _clip(request_id if isinstance(request_id, (str, int, float)) else None, 200),
               "topic": _clip(topic, 300), "ok": result.ok, "output": result.output, "error_type": result.error_type,
               "message": _clip(str(result.message))}
        text = json.dumps(out, default=str)
        if len(text) > MAX_COMMAND_BYTES:
            out["output"] = f"output of {len(text)} bytes not shown (results are limited to {MAX_COMMAND_BYTES} bytes)"
            text = json.dumps(out, default=str)
        self.client.publish(self.result_topic(placed.appliance.name), text, qos=1)

    def handle_command(self, topic: str, payload: str) -> ToolResult | None:
        parts = topic[len(self.base) + 1:].split("/")
        if len(parts) != 3 or parts[2] != "set":
            return None
        obj, what = parts[0], parts[1]
        placed = self._appliance_for(obj)
        if placed is None:
            self.on_event(f"MQTT command for unknown appliance {obj!r} on {topic}")
            return None
        name = placed.appliance.name
        request_id, call = None, None
        try:
            request_id, call = self._to_feature_call(placed.appliance.type, what, payload)
            if isinstance(call, str):  # a payload we cannot map: answer with a typed error
                result = ToolResult("run_appliance_feature", {"topic": topic, "payload": payload[:200]}, False, None,
                                    "UPSTREAM_FORMAT_ERROR", call)
            else:
                result = self.executor.call("run_appliance_feature", {"appliance_name": name, "feature_method": call[0],
                                                                      "feature_kwargs": call[1]})
        except Exception as exc:  # whatever the payload, the sender gets an answer on the result topic
            result = ToolResult("run_appliance_feature", {"topic": topic, "payload": payload[:200]}, False, None,
                                "EXECUTION_ERROR", f"{type(exc).__name__}: {exc}")
        self.commands_handled += 1
        self._answer(topic, result, request_id)
        self.publish_states()
        return result

    @staticmethod
    def _to_feature_call(type_: str, what: str, payload: str) -> tuple[str | None, tuple[str, dict] | str]:
        p = payload.strip()
        if what == "feature":
            try:
                body = jsonin.loads(p, parse_float=_finite_float, parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                return None, f"feature command payload is not JSON: {exc.msg}"
            except ValueError as exc:  # NaN, Infinity, 1e400
                return None, f"feature command payload: {exc}"
            if not isinstance(body, dict) or not isinstance(body.get("feature"), str):
                return None, 'feature command must be {"feature": <method>, "args": {...}, "request_id": "..."}'
            args = body.get("args", {})
            if not isinstance(args, dict):
                return body.get("request_id"), "feature command args must be an object"
            return body.get("request_id"), (body["feature"], args)
        if what == "power":
            if p.upper() not in ("ON", "OFF"):
                return None, f"power payload must be ON or OFF, got {p!r}"
            return None, ("set_power", {"state": p.lower()})
        if what == "lock" and type_ == "door_lock":
            if p.upper() == "LOCK":
                return None, ("lock", {})
            if p.upper() == "UNLOCK":
                return None, ("unlock", {"user": "home_assistant"})
            return None, f"lock payload must be LOCK or UNLOCK, got {p!r}"
        if what == "cover" and type_ == "garage_door_opener":
            if p.upper() in ("OPEN", "CLOSE"):
                return None, ("operate_door", {"action": p.lower()})
            return None, f"cover payload must be OPEN or CLOSE, got {p!r}"
        if what == "target_temperature" and type_ == "thermostat":
            try:
                return None, ("set_target_temperature", {"temperature_f": int(round(float(p)))})
            except (ValueError, OverflowError):  # "abc", or 1e400 / inf / nan
                return None, f"target_temperature payload must be a finite number, got {p[:40]!r}"
        if what == "mode" and type_ == "thermostat":
            return None, ("set_mode", {"mode": p.lower()})
        return None, f"no {what!r} command for a {type_}"


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number an appliance accepts")
