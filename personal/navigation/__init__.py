"""Personalized Active Navigation (PAN): planner, path follower, collision guard, online
mapper, policies (random frontier, value-map explorer with QS / RPG / RPG-owner scorers, and
the ORACLE "human with environment memory"), and the ROS-free episode loop."""
