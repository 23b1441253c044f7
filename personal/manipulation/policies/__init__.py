"""Policy serving: the ``infer(observation) -> {"actions": (H, 7)}`` boundary and its backends.

- ``registry.make_policy``: a backend by name (a lazy name -> "module:attr" table).
- ``personal.manipulation.learned.policy.LearnedChunkPolicy``: the default, behaviour-cloned policy.
- ``scripted.OracleScriptedPolicy``: built-in preference-aware skill policy (reads the oracle layout).
- ``openpi_ws.OpenpiWebsocketPolicy``: client of an openpi websocket policy server.
- ``http_act.HttpActPolicy``: client of an OpenVLA-style HTTP ``/act`` server.
- ``server.PolicyServer``: serves any of them over the openpi websocket protocol.
"""
from __future__ import annotations

from personal.manipulation.policies.base import ObservationError, Policy
from personal.manipulation.policies.registry import POLICIES, make_policy

__all__ = ["POLICIES", "ObservationError", "Policy", "make_policy"]
