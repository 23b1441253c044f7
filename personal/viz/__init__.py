"""Live views: ROS topics -> Foxglove schemas over a Foxglove WebSocket server (``viz:=foxglove``).

``personal.viz.convert`` turns ROS messages (read by attribute only, no rclpy) into
``foxglove.messages``; ``personal.viz.server`` holds the server and its typed channels;
``nodes/viz_node.py`` subscribes and forwards. Layouts for the Foxglove app are in
``viz/layouts/<graph>.json``; an RViz2 config for full ROS installs is ``viz/personal.rviz``.
"""
