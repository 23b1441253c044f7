"""Policy serving: the ``infer(observation) -> {"actions": (H, 7)}`` boundary and its backends.

- ``scripted.OracleScriptedPolicy``: built-in preference-aware skill policy (reads the oracle layout).
- ``openpi_ws.OpenpiWebsocketPolicy``: client of an openpi websocket policy server.
- ``http_act.HttpActPolicy``: client of an OpenVLA-style HTTP ``/act`` server.
- ``server.PolicyServer``: serves any of them over the openpi websocket protocol.
"""
from __future__ import annotations

from personal.manipulation.policies.base import ObservationError, Policy, make_policy

__all__ = ["ObservationError", "Policy", "make_policy"]
