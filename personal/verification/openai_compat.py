"""Minimal OpenAI-compatible chat client (``POST {base_url}/chat/completions``).

Configured from arguments or the environment: ``PERSONAL_LLM_BASE_URL`` (e.g.
``http://localhost:8000/v1``), ``PERSONAL_LLM_MODEL``, ``PERSONAL_LLM_API_KEY``;
the vision model may differ: ``PERSONAL_VLM_BASE_URL`` / ``PERSONAL_VLM_MODEL``.
"""
from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass

import numpy as np
import requests

from personal.llm_reply import json_in_reply


class LLMError(RuntimeError):
    pass


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key: str = ""
    timeout_s: float = 60.0
    temperature: float = 0.0

    @classmethod
    def from_env(cls, kind: str = "LLM") -> "ChatClient | None":
        """``kind`` is LLM or VLM; None when no endpoint is configured."""
        base = os.environ.get(f"PERSONAL_{kind}_BASE_URL") or os.environ.get("PERSONAL_LLM_BASE_URL")
        model = os.environ.get(f"PERSONAL_{kind}_MODEL") or os.environ.get("PERSONAL_LLM_MODEL")
        if not base or not model:
            return None
        key = os.environ.get(f"PERSONAL_{kind}_API_KEY") or os.environ.get("PERSONAL_LLM_API_KEY", "")
        return cls(base.rstrip("/"), model, key)

    def chat(self, prompt: str, images: list[np.ndarray] | None = None, max_tokens: int = 512) -> str:
        content: list[dict] | str = prompt
        if images:
            content = [{"type": "text", "text": prompt}] + [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png_base64(im)}} for im in images
            ]
        body = {
            "model": self.model, "temperature": self.temperature, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            resp = requests.post(f"{self.base_url}/chat/completions", json=body, headers=headers, timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise LLMError(f"{self.base_url}: request failed: {exc}") from None
        if resp.status_code != 200:
            raise LLMError(f"{self.base_url}: HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.base_url}: unexpected response {resp.text[:200]!r}") from None


def png_base64(image: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def extract_json(text: str) -> dict:
    """First JSON object in a model reply (tolerates ```json fences and chatter)."""
    obj = json_in_reply(text)
    if isinstance(obj, dict):
        return obj
    raise LLMError(f"no JSON object in model reply: {text[:200]!r}")
