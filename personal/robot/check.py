"""``personal robot check``: what the ``locobot`` graph needs from a live robot, and the exact fix
for every problem found (ROS-free; ``nodes/robot_check.py`` collects the observations).

``expected_interfaces(values)`` lists, for the graph's argument values (``ns``, ``base``,
``camera``, ``realsense``), every topic the graph reads or writes with its type, who is at the
other end and the QoS our side uses; ``diagnose(values, obs)`` turns an ``Observation`` (the live
graph: topics, types, type hashes, QoS, rates, first messages' stamps and encodings, TF links)
into ``Finding`` rows. Every fix names the remap, graph argument or launch argument, from
``personal/robot/conventions.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from personal.robot import conventions as C

MIN_RATE_HZ = {"odom": 10.0, "color": 5.0, "depth": 5.0, "info": 5.0, "joint_states": 5.0}
MAX_CLOCK_OFFSET_S = 0.1  # image vs odometry stamps (TF interpolation copes with less)


@dataclass(frozen=True)
class Interface:
    key: str  # odom | joint_states | color | depth | info | cmd_vel | joint_group
    topic: str  # absolute
    type: str  # pkg/msg/Name
    direction: str  # "in": the robot publishes, the graph subscribes; "out": the graph publishes
    our_reliable: bool  # our side's reliability
    peer: str  # who is at the other end on a robot


@dataclass
class Endpoint:
    type: str
    type_hash: str = ""  # RIHS01_... ("" where the peer's ROS publishes none, e.g. Humble)
    reliable: bool = True
    transient_local: bool = False
    node: str = ""


@dataclass
class Observation:
    topics: dict[str, list[str]] = field(default_factory=dict)  # name -> types
    publishers: dict[str, list[Endpoint]] = field(default_factory=dict)
    subscribers: dict[str, list[Endpoint]] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)  # topic -> Hz over the window
    encodings: dict[str, str] = field(default_factory=dict)  # image topic -> encoding of its first message
    stamp_offsets: dict[str, float] = field(default_factory=dict)  # topic -> stamp_offset(): header stamp - receipt, s
    joint_names: list[str] = field(default_factory=list)
    tf_links: dict[tuple[str, str], bool] = field(default_factory=dict)  # (parent, child) -> in TF
    tf_frames: set[str] = field(default_factory=set)  # every frame TF knows
    local_hashes: dict[str, str] = field(default_factory=dict)  # type -> our RIHS01 hash


def stamp_offset(previous: float | None, stamp_s: float, receipt_s: float) -> float:
    """A topic's clock offset estimate after one more message: header stamp minus receipt time, taken from
    the least delayed message so far (the largest difference). Stamp - receipt is the publisher's clock
    offset minus that message's delay; the delay is never negative, so the maximum is the estimate least
    biased by it. One message alone misleads: the first after a subscription often waits on discovery,
    and an image queued behind a loaded CPU adds its wait too (a robot computer is seldom idle)."""
    offset = stamp_s - receipt_s
    return offset if previous is None else max(previous, offset)


@dataclass
class Finding:
    what: str
    ok: bool
    detail: str
    fix: str = ""


def _abs(ns: str, topic: str) -> str:
    return topic if topic.startswith("/") else f"/{ns}/{topic}" if ns else f"/{topic}"


def expected_interfaces(values: dict) -> list[Interface]:
    ns, base = values.get("ns", C.ROBOT_NAME), C.BASES[values.get("base", "create3")]
    layout = C.camera_layout(values.get("camera", "interbotix"), values.get("realsense", "4.55"), ns)
    cam = lambda t: _abs(ns, f"{layout.prefix}/{t}")  # noqa: E731
    return [
        Interface("odom", _abs(ns, base.odom_topic), "nav_msgs/msg/Odometry", "in", False, f"the {base.name} base"),
        Interface("joint_states", _abs(ns, C.JOINT_STATES_TOPIC), "sensor_msgs/msg/JointState", "in", False,
                  "Interbotix joint_state_publisher (xs_sdk)"),
        Interface("color", cam("color/image_raw"), "sensor_msgs/msg/Image", "in", False, "the RealSense driver"),
        Interface("depth", cam("aligned_depth_to_color/image_raw"), "sensor_msgs/msg/Image", "in", False,
                  "the RealSense driver (aligned depth)"),
        Interface("info", cam("color/camera_info"), "sensor_msgs/msg/CameraInfo", "in", False, "the RealSense driver"),
        Interface("cmd_vel", _abs(ns, base.cmd_vel_topic), "geometry_msgs/msg/Twist", "out", True, f"the {base.name} base"),
        Interface("joint_group", _abs(ns, C.JOINT_GROUP_TOPIC), C.JOINT_GROUP_TYPE, "out", True, "the Interbotix xs_sdk"),
    ]


def qos_compatible(pub_reliable: bool, pub_transient: bool, sub_reliable: bool, sub_transient: bool) -> bool:
    """DDS request/offer: a reliable subscriber needs a reliable publisher; transient local likewise."""
    return (pub_reliable or not sub_reliable) and (pub_transient or not sub_transient)


def _camera_fix(values: dict, obs: Observation, suffix: str) -> str:
    """Which camera profile puts ``suffix`` where it is seen, as graph arguments; else how to start one."""
    ns = values.get("ns", C.ROBOT_NAME)
    matches = [(cam, rs) for cam in C.CAMERAS for rs in ("4.55", "4.54")
               if _abs(ns, f"{C.camera_layout(cam, rs, ns).prefix}/{suffix}") in obs.topics
               and (cam, rs) != (values.get("camera", "interbotix"), values.get("realsense", "4.55"))]
    if len(matches) > 1:  # one prefix, two layouts: the camera's own TF root tells them apart
        rs_launch = "camera_link" in obs.tf_frames
        matches = [m for m in matches if (m[0] == "rs_launch") == rs_launch] or matches
    if matches:
        return "the camera publishes under another layout: start the graph with " + " or ".join(
            f"camera:={cam} realsense:={rs}" for cam, rs in matches)
    others = sorted(t for t in obs.topics if t.endswith("/" + suffix))
    if others:
        return f"found {', '.join(others)}: remap the graph's camera/{suffix} there, or start the camera as the profile says"
    layout = C.camera_layout(values.get("camera", "interbotix"), values.get("realsense", "4.55"), ns)
    return f"start the RealSense with aligned depth: {layout.command}"


def _topic_findings(values: dict, obs: Observation) -> list[Finding]:
    out = []
    ns = values.get("ns", C.ROBOT_NAME)
    layout = C.camera_layout(values.get("camera", "interbotix"), values.get("realsense", "4.55"), ns)
    for itf in expected_interfaces(values):
        what = f"{itf.topic} [{itf.type}]"
        ends = obs.publishers.get(itf.topic, []) if itf.direction == "in" else obs.subscribers.get(itf.topic, [])
        if not ends:
            fix = ""
            if itf.key in ("color", "info"):
                fix = _camera_fix(values, obs, itf.topic.split(layout.prefix + "/", 1)[-1])
            elif itf.key == "depth":
                prefix = itf.topic.rsplit("/aligned_depth_to_color/", 1)[0]
                if f"{prefix}/depth/image_rect_raw" in obs.topics:
                    fix = f"aligned depth is off: launch the camera with {layout.align_flag}"
                else:
                    fix = _camera_fix(values, obs, "aligned_depth_to_color/image_raw")
            elif itf.key in ("odom", "cmd_vel"):
                other = [b for b, p in C.BASES.items() if b != values.get("base", "create3")
                         and _abs(ns, p.odom_topic if itf.key == "odom" else p.cmd_vel_topic) in obs.topics]
                fix = (f"this is a {other[0]} base: start the graph with base:={other[0]}" if other else
                       f"start the base: ros2 launch interbotix_xslocobot_control xslocobot_control.launch.py "
                       f"robot_model:={C.ROBOT_MODEL} use_base:=true")
            else:
                fix = (f"start the Interbotix driver: ros2 launch interbotix_xslocobot_control xslocobot_control.launch.py "
                       f"robot_model:={C.ROBOT_MODEL}")
            side = "no publisher" if itf.direction == "in" else "no subscriber"
            out.append(Finding(what, False, f"missing: {side} ({itf.peer})", fix))
            continue
        problems, fixes = [], []
        types = {e.type for e in ends}
        if types != {itf.type}:
            problems.append(f"type {', '.join(sorted(types))}, expected {itf.type}")
            fixes.append(f"remap the graph's topic away from {itf.topic}: it carries another type")
        local = obs.local_hashes.get(itf.type, "")
        hashes = {e.type_hash for e in ends if e.type_hash}
        hash_text = ", ".join(sorted(h[:18] + "…" for h in hashes)) or "not published (Humble peer)"
        if local and hashes and hashes != {local}:
            problems.append(f"type hash {hash_text} differs from ours ({local[:18]}…)")
            fixes.append(f"rebuild {itf.type.split('/')[0]} from the robot's definition (scripts/build_interfaces.sh)")
        for e in ends:
            pub_rel, pub_tl, sub_rel, sub_tl = ((e.reliable, e.transient_local, itf.our_reliable, False) if itf.direction == "in"
                                                else (itf.our_reliable, False, e.reliable, e.transient_local))
            if not qos_compatible(pub_rel, pub_tl, sub_rel, sub_tl):
                problems.append(f"QoS incompatible with {e.node or 'an endpoint'} (publisher "
                                f"{'reliable' if pub_rel else 'best effort'}, subscriber {'reliable' if sub_rel else 'best effort'})")
                fixes.append("subscribe best effort (sensor data QoS)")
        rate = obs.rates.get(itf.topic)
        if itf.direction == "in":
            if not rate:
                problems.append("no message received")
                fixes.append(f"check that {itf.peer} is streaming (and the network / ROS_DOMAIN_ID)")
            elif rate < MIN_RATE_HZ.get(itf.key, 0.0):
                problems.append(f"{rate:.1f} Hz, below {MIN_RATE_HZ[itf.key]:.0f} Hz")
                fixes.append("lower the camera profile / check the CPU and network load")
        if itf.key == "depth" and itf.topic in obs.encodings and obs.encodings[itf.topic] != C.DEPTH_ENCODING:
            problems.append(f"encoding {obs.encodings[itf.topic]}, expected {C.DEPTH_ENCODING} (millimetres)")
            fixes.append("depth as RealSense Z16: depth_module.depth_format:=Z16")
        if itf.key == "color" and itf.topic in obs.encodings and obs.encodings[itf.topic] not in (C.COLOR_ENCODING, "bgr8"):
            problems.append(f"encoding {obs.encodings[itf.topic]}, expected {C.COLOR_ENCODING}")
            fixes.append("colour as RGB8: rgb_camera.color_format:=RGB8")
        if itf.key == "joint_states" and rate and not all(j in obs.joint_names for j in C.CAMERA_GROUP_JOINTS):
            problems.append(f"no {' / '.join(C.CAMERA_GROUP_JOINTS)} joints in {obs.joint_names}")
            fixes.append(f"start the Interbotix driver with robot_model:={C.ROBOT_MODEL}")
        detail = "; ".join(problems) or (f"{'publisher' if itf.direction == 'in' else 'subscriber'} {ends[0].node}, "
                                         f"hash {hash_text}" + (f", {rate:.1f} Hz" if rate else ""))
        out.append(Finding(what, not problems, detail, "; ".join(dict.fromkeys(fixes))))
    return out


def _tf_fix(parent: str, child: str, values: dict, obs: Observation) -> str:
    ns = values.get("ns", C.ROBOT_NAME)
    base = values.get("base", "create3")
    if parent == C.camera_link(ns) and child == C.COLOR_FRAME:
        if values.get("camera", "interbotix") == "rs_launch" or "camera_link" in obs.tf_frames:
            return (f"join the camera's tree to the robot's: ros2 run tf2_ros static_transform_publisher "
                    f"--frame-id {C.camera_link(ns)} --child-frame-id camera_link")
        return "start the RealSense with publish_tf (xslocobot_control.launch.py use_camera:=true)"
    if child == C.COLOR_OPTICAL_FRAME or child == C.COLOR_FRAME:
        return "start the RealSense with publish_tf:=true"
    if parent == C.odom_frame(ns):
        other = [b for b, p in C.BASES.items() if b != base and C.frame(ns, p.root_link) in obs.tf_frames
                 and p.root_link != "base_link"]
        if other:
            return f"TF has {C.frame(ns, C.BASES[other[0]].root_link)}: this is a {other[0]} base, start the graph with base:={other[0]}"
        return ("launch Interbotix with use_base_odom_tf:=true (it rebroadcasts the Create 3's TF with the "
                f"'{ns}/' prefix)" if base == "create3" else "the Kobuki driver publishes it: check kobuki_node's "
                                                             f"odom_frame:={ns}/odom and publish_tf")
    return f"start robot_state_publisher with the {C.ROBOT_MODEL} URDF (xslocobot_control.launch.py)"


def diagnose(values: dict, obs: Observation) -> list[Finding]:
    out = _topic_findings(values, obs)
    ns = values.get("ns", C.ROBOT_NAME)
    chain = C.camera_chain(values.get("base", "create3"), ns)
    missing = [(p, c, who) for p, c, who in chain if not obs.tf_links.get((p, c))]
    what = f"TF {C.odom_frame(ns)} -> {C.COLOR_OPTICAL_FRAME}"
    if missing:
        p, c, who = missing[0]
        out.append(Finding(what, False, f"missing link {p} -> {c} (published by {who})"
                           + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""), _tf_fix(p, c, values, obs)))
    else:
        out.append(Finding(what, True, f"complete ({len(chain)} links)"))
    itfs = {i.key: i.topic for i in expected_interfaces(values)}
    odom, img = obs.stamp_offsets.get(itfs["odom"]), obs.stamp_offsets.get(itfs["depth"], obs.stamp_offsets.get(itfs["color"]))
    if odom is not None and img is not None:
        off = img - odom
        ok = abs(off) <= MAX_CLOCK_OFFSET_S
        out.append(Finding("clock: image vs odometry stamps", ok, f"offset {off * 1000:+.0f} ms",
                           "" if ok else "synchronise the clocks of the base and the robot computer (chrony / NTP)"))
    else:
        out.append(Finding("clock: image vs odometry stamps", False, "not measured: no odometry or no image received",
                           "fix the missing topics above first"))
    return out


def observation_to_json(obs: Observation) -> dict:
    from dataclasses import asdict

    d = asdict(obs)
    d["tf_links"] = [[p, c, ok] for (p, c), ok in obs.tf_links.items()]
    d["tf_frames"] = sorted(obs.tf_frames)
    return d


def observation_from_json(d: dict) -> Observation:
    eps = lambda m: {t: [Endpoint(**e) for e in v] for t, v in m.items()}  # noqa: E731
    return Observation(topics=d["topics"], publishers=eps(d["publishers"]), subscribers=eps(d["subscribers"]),
                       rates=d["rates"], encodings=d["encodings"], stamp_offsets=d["stamp_offsets"],
                       joint_names=d["joint_names"], tf_links={(p, c): ok for p, c, ok in d["tf_links"]},
                       tf_frames=set(d["tf_frames"]), local_hashes=d["local_hashes"])


def format_findings(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"[{'ok' if f.ok else 'FAIL'}] {f.what}: {f.detail}")
        if f.fix:
            lines.append(f"       fix: {f.fix}")
    bad = sum(not f.ok for f in findings)
    lines.append(f"{len(findings) - bad} ok, {bad} problem{'s' if bad != 1 else ''}")
    return "\n".join(lines)
