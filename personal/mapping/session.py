"""Pre-exploration of one scene without ROS: backend + MapBuilder + FrontierExplorer.

The backend is any object with the ``SimBackend`` methods used here (``step(action)``
returning an Observation with depth, rgb, instance_ids, K, T_map_camera, state, collided);
``sim_bridge`` is not imported, so the library stays free of the simulator's dependencies.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from personal.mapping.exploration import Act, FrontierExplorer
from personal.mapping.pipeline import MapBuilder


@dataclass
class ExplorationResult:
    steps: int
    reason: str
    collisions: int
    seconds: float
    trajectory: list[tuple[float, float, float]] = field(default_factory=list)


def explore(backend, first_observation, builder: MapBuilder, explorer: FrontierExplorer, progress=None,
            also: tuple[MapBuilder, ...] = ()) -> ExplorationResult:
    """Run the frontier policy until it stops; every observation goes into ``builder`` (which
    the policy reads) and into each builder of ``also`` (e.g. the same frames mapped with
    another encoder)."""
    t0 = time.perf_counter()
    obs = first_observation
    traj = []
    while True:
        s = obs.state
        traj.append((s.x, s.y, s.yaw))
        for b in (builder, *also):
            b.integrate(obs.depth, obs.K, obs.T_map_camera, rgb=obs.rgb, instance_ids=obs.instance_ids, agent_xy=(s.x, s.y))
        action = explorer.act(builder.occupancy.state(), builder.occupancy.geometry, (s.x, s.y, s.yaw), obs.collided)
        if progress is not None:
            progress(explorer.status.steps)
        if action == Act.STOP:
            break
        obs = backend.step(action)
    st = explorer.status
    return ExplorationResult(st.steps, st.reason, st.collisions, time.perf_counter() - t0, traj)
