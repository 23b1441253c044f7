"""Active instance verification (PInVerify): data, environment, agent, metrics.

ROS-free. Layout:
- ``schema`` / ``reader`` / ``writer``: the public PInVerify folder layout.
- ``env``: benchmark semantics (relative directions, ±30° resolution, trap and
  unreachable steps, start sector, 6-step horizon).
- ``attributes``: decomposition of three descriptions into typed attributes.
- ``verifier``: per-view Yes/No/Unsure per attribute (built-in colour measurer, VLM).
- ``tracker``: confidence-weighted multi-view tracker, fusion, adaptive stopping.
- ``nbv``: next-best-view strategies (random, angular farthest-point, LLM).
- ``agent``: one episode end to end; ``metrics``: records -> metrics.json/report.md.
"""
