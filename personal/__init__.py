"""personal — a ROS 2 stack for personalized embodied agents.

The ``personal`` package is the ROS-free library: it never imports rclpy.
"""
__version__ = "0.1.0"
