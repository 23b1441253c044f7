"""Real-robot support (LoCoBot): closed-loop execution of discrete actions. ROS-free."""
