"""rclpy nodes: thin wrappers around the personal library, one per file."""
