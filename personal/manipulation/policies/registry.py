"""Policy backends by name (``make_policy``), resolved lazily: this module imports none of them, so
the learned policy (``personal.manipulation.learned.policy``, above this package) and the network
clients load only when named."""
from __future__ import annotations

from personal.manipulation.policies.base import Policy
from personal.plugins import lookup

POLICY_BACKENDS = {
    "learned": "personal.manipulation.learned.policy:LearnedChunkPolicy",
    "scripted": "personal.manipulation.policies.scripted:OracleScriptedPolicy",
    "openpi": "personal.manipulation.policies.openpi_ws:OpenpiWebsocketPolicy",
    "http": "personal.manipulation.policies.http_act:HttpActPolicy",
}
POLICIES = tuple(POLICY_BACKENDS)


def make_policy(name: str, **kwargs) -> Policy:
    """``learned`` (checkpoint) | ``scripted`` (the oracle) | ``openpi`` (host, port) | ``http`` (url)."""
    return lookup(POLICY_BACKENDS, name, "policy backend")(**kwargs)
