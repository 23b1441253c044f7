"""Navigation node: malformed messages and an unknown policy are logged / answered, never fatal."""
import time

import pytest

from conftest import wait_for

pytestmark = pytest.mark.timeout(120)


def test_navigation_node_survives_bad_input(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nodes.navigation_node import LATCHED, STATE_QOS, NavigationNode
    from personal.navigation.run import image_array
    from personal.interfaces.convert import to_dict
    from personal.msg import AgentState, EpisodeDescriptor, NavigationRun, NavigationStart

    node = ros_context.add_node(NavigationNode(context=ros_context.context, parameter_overrides=[
        Parameter("autostart", value=False)]))
    io = ros_context.make_node("pan_test_io")
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results = []
    io.create_subscription(NavigationRun, "nav/result", lambda m: results.append(to_dict(m)), reliable)
    start = io.create_publisher(NavigationStart, "nav/start", reliable)
    episode = io.create_publisher(EpisodeDescriptor, "episode", LATCHED)
    state = io.create_publisher(AgentState, "agent_state", STATE_QOS)
    wait_for(lambda: start.get_subscription_count() > 0 and io.count_publishers("nav/result") > 0
             and episode.get_subscription_count() > 0 and state.get_subscription_count() > 0, 10)
    start.publish(NavigationStart(episode_id="", policy="random-frontier"))  # no episode id: rejected
    start.publish(NavigationStart(episode_id="e9", max_steps=0))  # no budget: rejected
    episode.publish(EpisodeDescriptor(query="Find Ana's box."))  # no episode / scene id: rejected
    bad_state = AgentState(episode_id="e0")
    bad_state.position.x = float("nan")
    state.publish(bad_state)  # a non-finite pose: rejected
    start.publish(NavigationStart(episode_id="e0", policy="teleport"))
    wait_for(lambda: results, 10)
    assert results[0]["episode_id"] == "e0" and results[0]["steps"] == 0
    assert "unknown policy" in results[0]["failure_reason"]
    assert node.episode is None and node.latest_state is None  # the malformed ones were dropped

    from sensor_msgs.msg import Image

    bad = Image(height=2, width=2, encoding="bgr8", step=6, data=bytes(12))
    with pytest.raises(ValueError, match="unsupported image encoding"):
        image_array(bad)
    node.on_image(bad, "depth", "camera/aligned_depth_to_color/image_raw")  # logged, not raised


def _evaluator(ros_context, tmp_path, methods: str):
    """A PAN evaluator node on the default generated episodes, no upper bound."""
    from rclpy.parameter import Parameter

    import nodes.pan_evaluator_node as pan_evaluator

    evaluator = ros_context.add_node(pan_evaluator.PanEvaluatorNode(context=ros_context.context, parameter_overrides=[
        Parameter("methods", value=methods), Parameter("out_dir", value=str(tmp_path)),
        Parameter("upper_bound", value="none")]))
    assert evaluator.exit_code is None
    return evaluator


def _staying_at_the_start(evaluator):
    """A navigation double's run: the robot stays where the episode starts."""
    from personal.msg import NavigationRun

    by_id = {e.episode_id: e for e in evaluator.episodes}

    def run(start):
        xyz = by_id[start.episode_id].start_position
        return NavigationRun(episode_id=start.episode_id, policy=start.policy, xs=[xyz[0]], ys=[xyz[2]], yaws=[0.0])
    return run


def test_pan_evaluator_sends_nav_start_again_when_the_first_is_lost(ros_context, tmp_path, monkeypatch):
    """A navigation double that drops the first nav/start and answers every other: the evaluator says it
    again after START_RESEND_S without a progress report, and scores the run (a lost start used to wait
    run_timeout, 900 s, and record a failed episode)."""
    import nodes.pan_evaluator_node as pan_evaluator
    from pan_fakes import NavigationLosingFirstStart
    from personal.srv import LoadEpisode

    monkeypatch.setattr(pan_evaluator, "START_RESEND_S", 0.5)
    evaluator = _evaluator(ros_context, tmp_path, "random-frontier")
    io = ros_context.make_node("pan_doubles")

    def load(request, response):  # the bridge double: the episode asked for is loaded
        response.success, response.message = True, f"loaded {request.episode_id}"
        return response

    io.create_service(LoadEpisode, "episode/load", load)

    nav = NavigationLosingFirstStart(io, _staying_at_the_start(evaluator))
    wait_for(lambda: evaluator.exit_code is not None, 40)
    assert evaluator.exit_code == 0 and nav.starts[0] == nav.starts[1]
    assert len(nav.starts) == len(evaluator.results) + 1  # one start said twice, every other once
    # scored from the double's run (no STOP in 0 steps), not a timeout
    assert [r.failure_reason for r in evaluator.results] == ["no STOP within 0 steps"] * len(evaluator.results)


def test_pan_evaluator_says_a_load_again_and_the_bridge_loads_it_once(ros_context, tmp_path, monkeypatch):
    """A bridge double, on its own executor, answers the first episode/load only after 2 s (a reply lost
    or late): the evaluator says it again under the same request id after LOAD_RESEND_S, the double
    answers repeats from its AnsweredRequests (as the bridge does) and loads each run's episode once.
    With episode/next (std_srvs/Trigger) a second call would have skipped an episode, and every
    later run would then have been recorded as "bridge could not load the episode"."""
    import threading

    from rclpy.executors import SingleThreadedExecutor

    import nodes.pan_evaluator_node as pan_evaluator
    from pan_fakes import NavigationLosingFirstStart
    from personal.resend import AnsweredRequests
    from personal.srv import LoadEpisode

    monkeypatch.setattr(pan_evaluator, "LOAD_RESEND_S", 0.3)
    monkeypatch.setattr(pan_evaluator, "START_RESEND_S", 0.5)
    evaluator = _evaluator(ros_context, tmp_path, "random-frontier,oracle")
    bridge = ros_context.rclpy.create_node("bridge_double", context=ros_context.context)
    answered, loads, requests = AnsweredRequests(), [], []

    def load(request, response):
        requests.append(request.request_id)
        answer = answered.get(request.request_id)
        if answer is None:
            loads.append(request.episode_id)
            answer = (True, f"episode {len(loads)}: {request.episode_id}")
            answered.put(request.request_id, answer)
            if len(loads) == 1:
                time.sleep(2.0)  # the first answer comes late; the evaluator meanwhile says it again
        response.success, response.message = answer
        return response

    bridge.create_service(LoadEpisode, "episode/load", load)
    executor = SingleThreadedExecutor(context=ros_context.context)
    executor.add_node(bridge)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        NavigationLosingFirstStart(ros_context.make_node("pan_nav_double"), _staying_at_the_start(evaluator))
        wait_for(lambda: evaluator.exit_code is not None, 60)
    finally:
        executor.shutdown()
        bridge.destroy_node()
    runs = evaluator.schedule.runs
    assert evaluator.exit_code == 0 and len(evaluator.results) == len(runs)
    assert loads == [evaluator.episodes[i].episode_id for i, _ in runs]  # each run's episode, once
    assert len(requests) > len(loads)  # the first load was said again
    assert [r.failure_reason for r in evaluator.results] == ["no STOP within 0 steps"] * len(runs)
