"""The bag player's topic choice, QoS and timing without ROS (personal/bags/playback.py)."""
from personal.bags.playback import PlaybackClock, SubscriberSettle, absolute, played_topics, replay_qos

S = 1_000_000_000


def test_all_recorded_topics_are_played_except_the_one_landing_on_the_idle_topic():
    recorded = ["/camera/depth", "/map/status", "/episode"]
    assert played_topics([""], recorded, {}, "") == recorded
    assert played_topics([""], recorded, {}, "map/status") == ["/camera/depth", "/episode"]
    assert played_topics(["/episode", ""], recorded, {"/episode": "/status"}, "/status") == []
    assert absolute("map/status") == "/map/status" and absolute("") == ""


def test_replay_qos_keeps_the_recorded_profile_unless_reliable_is_forced():
    assert replay_qos({"reliability": "best_effort", "depth": 5}, False) == (10, False, False)
    assert replay_qos({"reliability": "best_effort", "durability": "transient_local"}, True) == (500, True, True)
    assert replay_qos({}, False) == (10, True, False)


def test_the_clock_keeps_timing_at_its_rate_and_shortens_long_gaps():
    clock = PlaybackClock(2.0, 10.0)
    due = []
    for t in (100 * S, 101 * S, 161 * S, 162 * S):
        gap = clock.advance(t)
        due.append((gap, clock.due_s(t)))
    assert due == [(0.0, 0.0), (0.0, 0.5), (60.0, 5.5), (0.0, 6.0)] and clock.gaps_skipped == 1
    fast = PlaybackClock(0.0, 0.0)
    fast.advance(5 * S)
    assert fast.advance(5000 * S) == 0.0 and fast.due_s(5000 * S) is None  # max_gap_s 0 keeps gaps; rate 0: at once


def test_subscribed_topics_settle_only_when_unchanged_and_not_empty():
    watch = SubscriberSettle(1.5, 0.0)
    assert not watch.settled(frozenset(), 2.0)
    assert not watch.settled(frozenset({"/a"}), 2.5)
    assert not watch.settled(frozenset({"/a", "/b"}), 3.0)
    assert not watch.settled(frozenset({"/a", "/b"}), 4.0) and watch.settled(frozenset({"/a", "/b"}), 4.5)
