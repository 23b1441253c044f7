"""personal/resend.py: when a command is said again."""
from personal.resend import Resend


def test_a_command_is_said_again_every_period_until_heard():
    r = Resend(5.0)
    assert not r.due(100.0)  # nothing sent yet
    r.sent(0.0)
    assert not r.due(5.0) and r.due(5.1) and r.repeats == 1
    assert not r.due(9.0) and r.due(10.2) and r.repeats == 2  # each repeat restarts the period
    r.heard = True
    assert not r.due(50.0)
    r.sent(60.0)  # a new command: nothing heard of it yet
    assert r.repeats == 0 and not r.heard and r.due(65.5)


def test_a_request_said_again_is_answered_from_the_first_and_old_ids_are_let_go():
    from personal.resend import AnsweredRequests

    answers = AnsweredRequests(keep=2)
    assert answers.get(1) is None
    answers.put(1, (True, "episode 1/3"))
    answers.put(2, (False, "no"))
    assert answers.get(1) == (True, "episode 1/3") and answers.get(2) == (False, "no")
    answers.put(3, (True, "episode 3/3"))
    assert answers.get(1) is None and answers.get(3) == (True, "episode 3/3")  # the oldest let go
