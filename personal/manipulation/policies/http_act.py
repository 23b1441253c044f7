"""Client of an OpenVLA-style HTTP ``POST /act`` server (OpenVLA ``vla-scripts/deploy.py``).

Request: JSON ``{"image": <HxWx3 uint8>, "instruction": str, "unnorm_key": str}`` with arrays in
json_numpy's encoding (``{"__numpy__": base64, "dtype", "shape"}``). Reply: a 7-D action (json_numpy
array or a JSON list), or a list of them (a chunk).
"""
from __future__ import annotations

import base64
import json

import numpy as np
import requests

from personal.manipulation.policies.base import Policy, check_actions, validate_observation


def encode_array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"__numpy__": base64.b64encode(a.tobytes()).decode("ascii"), "dtype": a.dtype.str, "shape": list(a.shape)}


def decode_json(obj):
    if isinstance(obj, dict) and "__numpy__" in obj:
        return np.frombuffer(base64.b64decode(obj["__numpy__"]), dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
    return obj


class HttpActPolicy(Policy):
    name = "http_act"

    def __init__(self, url: str = "http://127.0.0.1:8000/act", unnorm_key: str = "libero_spatial",
                 timeout_s: float = 30.0, **_ignored) -> None:
        self.url, self.unnorm_key, self.timeout_s = url, unnorm_key, timeout_s
        self.session = requests.Session()

    def infer(self, obs: dict) -> dict:
        validate_observation(obs)
        payload = {"image": encode_array(np.asarray(obs["observation/image"])), "instruction": obs.get("prompt", ""),
                   "unnorm_key": self.unnorm_key}
        try:
            resp = self.session.post(self.url, data=json.dumps(payload), timeout=self.timeout_s,
                                     headers={"Content-Type": "application/json"})
        except requests.RequestException as exc:
            raise ConnectionError(f"OpenVLA /act server at {self.url} is not reachable: {exc}") from None
        if resp.status_code != 200:
            raise RuntimeError(f"OpenVLA /act server at {self.url} answered {resp.status_code}: {resp.text[:200]}")
        try:
            body = json.loads(resp.text, object_hook=decode_json)
        except json.JSONDecodeError as exc:
            raise RuntimeError(f"OpenVLA /act reply is not JSON: {exc}: {resp.text[:200]}") from None
        if isinstance(body, str):  # deploy.py json-encodes the array twice
            body = json.loads(body, object_hook=decode_json)
        if isinstance(body, list) and body and isinstance(body[0], np.ndarray):
            body = np.stack(body)
        return {"actions": check_actions(np.asarray(body, dtype=np.float64))}
