"""LIBERO-PeRM-style personalized manipulation: preferences, metrics, a tabletop suite, policy serving.

ROS-free. Submodules:
- ``trajectory``: the recorded episode (eef trace, object traces, grasp trace) and derived subgoals.
- ``layout``: objects on the table for one episode (shared by every simulator backend).
- ``preferences``: the preference registry (motion / skill / user profile), metrics and binning.
- ``scoring``: SR, SA, composition and conflict scoring, aggregation per tier and suite.
- ``suite``: missions, task instances and the single / compose / conflict / comprepref suites.
- ``backends``: simulators (robosuite Panda; a kinematic stand-in for tests).
- ``policies``: the ``infer(observation) -> actions`` boundary and its backends, plus the openpi server.
"""
