"""LearnedChunkPolicy: the behaviour-cloned, preference-conditioned policy (``personal perm train``).

Not an oracle: it reads ``observation/state``, ``observation/environment_state`` (object poses, sizes
and colours) and ``prompt``; it never reads ``oracle/layout`` or ``oracle/objects``, and ignores the
images. Each call returns a chunk of H actions (``action_horizon`` in the metadata); clients execute
the first ``replan`` of them and ask again, as openpi's LIBERO client does.

Prompts: ``Task: X. Preference: Y.``; without ``Preference:`` the text after the task sentence is the
preference, and a bare ``Task: X.`` means no preference (see ``features.split_prompt``). An empty
prompt is rejected (ObservationError): the policy cannot know the task.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

from personal.manipulation.learned.features import check_environment_state, input_features
from personal.manipulation.learned.model import load_checkpoint
from personal.manipulation.learned.text import PromptEncoder
from personal.manipulation.policies.base import ObservationError, Policy, validate_observation

DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "perm_bc" / "perm_bc.safetensors"


class LearnedChunkPolicy(Policy):
    name = "learned_bc"

    def __init__(self, checkpoint: str | Path | None = None, encoder: PromptEncoder | None = None,
                 threads: int = 1, **_ignored) -> None:
        self.checkpoint = Path(checkpoint or DEFAULT_CHECKPOINT)
        self.net, self.train_meta = load_checkpoint(self.checkpoint)
        self.horizon = self.net.config["horizon"]
        self.encoder = encoder or PromptEncoder()
        self.threads = threads
        self._digest = hashlib.sha256(self.checkpoint.read_bytes()).hexdigest()[:12]
        self._language("Task: warm up. Preference: load the model.")  # load MiniLM now, not on the first request

    @property
    def metadata(self) -> dict:
        return {**super().metadata, "action_horizon": self.horizon, "oracle": False,
                "checkpoint": self.checkpoint.name, "checkpoint_sha256": self._digest,
                "inputs": ["observation/state", "observation/environment_state", "prompt"]}

    @property
    def train_seed_range(self) -> tuple[int, int] | None:
        r = self.train_meta.get("train_seed_range")
        return (int(r[0]), int(r[1])) if r else None

    def infer(self, obs: dict) -> dict:
        validate_observation(obs)
        env = check_environment_state(obs)
        prompt = obs.get("prompt", "")
        if not prompt.strip():
            raise ObservationError("'prompt' is empty: the learned policy needs 'Task: … [Preference: ….]'")
        feats = input_features(np.asarray(obs["observation/state"], np.float32), env)
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        with torch.inference_mode():
            chunk = self.net(torch.from_numpy(feats[None]), *self._language(prompt))[0].numpy()
        chunk = np.clip(chunk, -1.0, 1.0)
        chunk[:, 6] = np.where(chunk[:, 6] > 0, 1.0, -1.0)  # the gripper is binary on the robot
        return {"actions": chunk.astype(np.float32)}

    def _language(self, prompt: str) -> tuple:
        """The network's language arguments for ``prompt`` (embeddings cached per prompt by the encoder)."""
        if self.net.uses_tokens:
            task_emb, tokens, mask = self.encoder.prompt_tokens(prompt)
            return (torch.from_numpy(task_emb[None]), torch.from_numpy(tokens[None]), None,
                    torch.from_numpy(mask[None]))
        task_emb, pref_emb, _, _ = self.encoder.prompt(prompt)
        return torch.from_numpy(task_emb[None]), torch.from_numpy(pref_emb[None])
