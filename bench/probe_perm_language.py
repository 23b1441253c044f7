"""Which preference the shipped policy's language features name for each reserved wording (analysis;
prints a table, no assertions, no training).

For every wording of the held-out sets A, B, C (and the validation set V), in each mission's task
sentence, the checkpoint's language features (MiniLM tokens -> learned attention pooling -> language
MLP) are classified two ways: by the auxiliary preference head the checkpoint was trained with (weight
0.05, training only) and by the nearest centroid of the features of the training wordings
(``phrasings.TRAIN``). A wording named as another preference (or as "none") is a recognition error:
the policy then does that preference's motion, whatever its actions could express. This reads the
reserved wordings to explain a benchmark that has already run; it selects and trains nothing.
Usage: python bench/probe_perm_language.py [--checkpoint PATH] [--sets ABCV]
"""
from __future__ import annotations

import argparse
from collections import Counter

import numpy as np


def language_features(net, encoder, task: str, wordings: list[str]):
    """(N, lang_width) language features of ``Task: {task}. Preference: {wording}.``, as the policy builds them
    ("" = no preference)."""
    import torch

    from personal.manipulation import phrasings
    from personal.manipulation.learned.features import split_prompt

    prompts = [phrasings.prompt(task, w) if w else f"Task: {task}." for w in wordings]
    tasks, prefs = zip(*(split_prompt(p) for p in prompts))
    tokens, mask = encoder.tokens(list(prefs))
    with torch.no_grad():
        return net.language(torch.from_numpy(encoder.sentences(list(tasks))), torch.from_numpy(tokens),
                            torch.from_numpy(mask))


def main() -> None:
    from personal.manipulation import phrasings
    from personal.manipulation.learned.model import load_checkpoint
    from personal.manipulation.learned.policy import DEFAULT_CHECKPOINT
    from personal.manipulation.learned.text import PromptEncoder
    from personal.manipulation.learned.train import PREF_CLASSES
    from personal.manipulation.suite import MISSIONS

    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    ap.add_argument("--sets", default="ABCV")
    args = ap.parse_args()
    import torch

    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    net, _ = load_checkpoint(args.checkpoint)
    if not net.uses_tokens:
        raise SystemExit(f"{args.checkpoint}: a sentence-vector checkpoint; this probe reads token checkpoints")
    encoder = PromptEncoder()
    sets = {"A": phrasings.HELD_OUT, "B": phrasings.HELD_OUT_B, "C": phrasings.HELD_OUT_C, "V": phrasings.VALIDATION}
    prefs = list(phrasings.TRAIN)
    rows, hits = [], Counter()
    for mission in MISSIONS.values():
        train = [(p, w) for p in prefs for w in phrasings.TRAIN[p]]
        f = language_features(net, encoder, mission.task, [w for _, w in train] + [""])
        labels = np.array([p for p, _ in train] + ["none"])
        names = sorted(set(labels))
        cent = np.stack([f[labels == n].mean(0).numpy() for n in names])
        for s in args.sets:
            for pref in prefs:
                words = sets[s].get(pref, [])
                if not words:
                    continue
                g = language_features(net, encoder, mission.task, words)
                head = [PREF_CLASSES[i] for i in net.pref_head(g).argmax(-1)] if net.pref_head is not None else ["–"] * len(words)
                near = [names[i] for i in np.linalg.norm(g.numpy()[:, None] - cent[None], axis=-1).argmin(1)]
                for w, h, n in zip(words, head, near):
                    hits[(s, "head")] += h == pref
                    hits[(s, "centroid")] += n == pref
                    hits[(s, "n")] += 1
                    if mission.id == "bin" and (h != pref or n != pref):
                        rows.append((s, pref, w, h, n))
    print(f"checkpoint {args.checkpoint}; language features in each mission's task sentence ({len(MISSIONS)} missions)\n")
    print("| set | wordings × missions | named right by the aux head | by nearest training centroid |\n|---|---|---|---|")
    for s in args.sets:
        n = hits[(s, "n")]
        print(f"| {s} | {n} | {hits[(s, 'head')]} ({hits[(s, 'head')] / n:.0%}) | {hits[(s, 'centroid')]} ({hits[(s, 'centroid')] / n:.0%}) |")
    print("\nMisread wordings (bin mission's task sentence):\n\n| set | preference | wording | aux head says | nearest centroid |\n|---|---|---|---|---|")
    for s, pref, w, h, n in rows:
        print(f"| {s} | {pref} | {w} | {h} | {n} |")


if __name__ == "__main__":
    main()
