"""Offline evaluation: run agent configurations over an index and write the report."""
from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

from personal.runs.output import ResultLog, run_folder
from personal.verification.agent import AgentConfig, VerificationAgent, run_episode
from personal.verification.attributes import make_decomposer
from personal.verification.metrics import compare_runs, compute_metrics, write_report
from personal.verification.nbv import make_nbv
from personal.verification.openai_compat import ChatClient
from personal.verification.reader import load_index
from personal.verification.records import result_record
from personal.verification.verifier import make_verifier


def standard_configs(base: AgentConfig, with_llm: bool | None = None,
                     coverage: float | list[float] = 1.0) -> dict[str, AgentConfig]:
    """Single-view plus multi-view with each NBV strategy (LLM only when an endpoint is configured).

    Multi-view runs use the paper's stopping rule (converged, or all seen attributes
    unanimous); with ``coverage`` > 0 each strategy is also run requiring that share of
    the verifier-judgeable attribute weight to be seen before a unanimity stop.
    """
    if with_llm is None:
        with_llm = ChatClient.from_env("LLM") is not None
    runs = {"SV": replace(base, mode="single", nbv="none")}
    for nbv in ("random", "fps") + (("llm",) if with_llm else ()):
        runs[f"MV-{nbv}"] = replace(base, mode="multi", nbv=nbv)
    coverages = coverage if isinstance(coverage, (list, tuple)) else ([coverage] if coverage else [])
    for cov in coverages:
        for nbv in ("random", "fps") + (("llm",) if with_llm else ()):
            runs[f"MV-{nbv}-cov{cov:g}"] = replace(base, mode="multi", nbv=nbv, min_coverage=cov)
    return runs


def run_config(pairs, cfg: AgentConfig, decomposer: str = "builtin", verifier: str = "builtin",
               attr_cache: dict | None = None, on_record=None) -> list[dict]:
    """Every episode's record; ``on_record`` gets each as soon as it exists (to write it at once)."""
    agent = VerificationAgent(make_decomposer(decomposer), make_verifier(verifier), cfg, attr_cache)
    nbv = make_nbv(cfg.nbv, cfg.seed) if cfg.mode == "multi" else None
    records = []
    for p in pairs:
        if nbv is not None and hasattr(nbv, "begin_episode"):
            nbv.begin_episode(p.index)  # per-episode generator: the same views as the aiv_eval graph, in any order
        try:
            records.append(run_episode(p, agent, nbv, seed=cfg.seed))
        except (OSError, ValueError) as exc:  # unreadable capture etc.: a flagged failure, not a dead run
            records.append(error_record(p, cfg, f"{type(exc).__name__}: {exc}"))
        if on_record:
            on_record(records[-1])
    return records


def error_record(p, cfg: AgentConfig, error: str) -> dict:
    """The conservative-No record of an episode that could not be run (flagged by ``error``)."""
    return result_record(p, prediction="No", statuses=["error"], first_view="No", interim=[], transcript=[],
                         attributes=[], mode=cfg.mode, nbv=cfg.nbv, stop_reason=f"error: {error}", error=error)


def evaluate(index: str | Path, out_dir: str | Path, configs: dict[str, AgentConfig], decomposer: str = "builtin",
             verifier: str = "builtin", limit: int | None = None, strict: bool = True, notes: list[str] | None = None,
             log=print) -> dict:
    out = run_folder(out_dir)  # OutputDirError before any episode runs
    pairs = load_index(index, strict=strict, limit=limit)
    attr_cache: dict = {}
    runs = {}
    sv_records = None
    for name, cfg in configs.items():
        t0 = time.perf_counter()
        with ResultLog(out / f"results_{name}.jsonl") as results:  # written record by record
            records = run_config(pairs, cfg, decomposer, verifier, attr_cache, on_record=results.append)
        dt = time.perf_counter() - t0
        m = compute_metrics(records)
        runs[name] = {"metrics": m, "config": asdict(cfg), "decomposer": decomposer, "verifier": verifier,
                      "seconds": round(dt, 2)}
        if cfg.mode == "single" and sv_records is None:
            sv_records = records
        elif sv_records is not None:
            runs[name]["paired_vs_sv"] = compare_runs(sv_records, records)
        log(f"{name}: acc {m['accuracy']} {({k: v['accuracy'] for k, v in m['per_pair_type'].items()})} "
            f"ASD {m['asd']} ({dt:.1f} s)")
    base_notes = [
        f"index: {index} ({len(pairs)} episodes)",
        f"decomposer: {decomposer}; verifier: {verifier}"
        + (" (built-in colour measurer on the GT mask; category gates from metric extent and from the category's drawn shape fitted to mask + depth; "
           "body and part colours read where the fitted shape draws them; non-colour attributes Unsure)"
           if verifier == "builtin" else ""),
        "LLM NBV: " + ("run" if any(c.nbv == "llm" for c in configs.values()) else
                       "not run (no OpenAI-compatible endpoint configured: PERSONAL_LLM_BASE_URL/PERSONAL_LLM_MODEL)"),
    ]
    write_report(runs, out, notes=base_notes + list(notes or []))
    return runs
