"""When to say a command again.

Fast DDS can lose a message that is sent as soon as its publisher sees the subscriber: the match is
not yet mutual, and the reader drops what it gets from a writer it has not matched (eProsima/Fast-DDS
issue 2641). A node that starts work in another node with one message (``nav/start``, ``perm/episode``)
therefore says it again every ``period_s`` until it hears from that work. The receiver must take a
repeat as the same command: it carries a request id, or the receiver ignores a repeat of what it is
already doing (``NavRun.repeated_by``).
"""
from __future__ import annotations


class Resend:
    """The clock of one command: ``sent`` when it goes out, ``heard`` once the receiver answered, and
    ``due(now)`` says when to send it again (each repeat restarts the period)."""

    def __init__(self, period_s: float) -> None:
        self.period_s = float(period_s)
        self.sent_at: float | None = None
        self.heard = False
        self.repeats = 0

    def sent(self, now: float) -> None:
        """A new command went out: nothing is heard of it yet."""
        self.sent_at, self.heard, self.repeats = now, False, 0

    def due(self, now: float) -> bool:
        """Whether to send the command again now; if so, it counts as sent at ``now``."""
        if self.heard or self.sent_at is None or now - self.sent_at <= self.period_s:
            return False
        self.sent_at, self.repeats = now, self.repeats + 1
        return True


class AnsweredRequests:
    """The receiver's side: the answers to the last ``keep`` request ids, so a request said again is
    answered as the first was and not carried out twice."""

    def __init__(self, keep: int = 64) -> None:
        self.keep = int(keep)
        self._answers: dict = {}

    def get(self, request_id):
        return self._answers.get(request_id)

    def put(self, request_id, answer) -> None:
        self._answers[request_id] = answer
        while len(self._answers) > self.keep:
            self._answers.pop(next(iter(self._answers)))  # the oldest (dicts keep insertion order)
