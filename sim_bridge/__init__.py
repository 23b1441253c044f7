"""Simulator backends and the ROS bridge node that publishes them."""
