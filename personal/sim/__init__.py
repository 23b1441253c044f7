"""The simulator as a library: backends (synthetic, habitat), the renderer, the sensor model, the
navigation grid and episode sources (``bridge_logic``). ``sim_bridge/`` keeps only the ROS nodes
that serve it (docs/architecture.md)."""
