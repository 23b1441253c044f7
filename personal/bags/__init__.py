"""rosbag2-compatible MCAP bags without ROS tooling (ROS-free: bytes in, bytes out).

Recording and playing over live topics live in ``nodes/bag_recorder_node.py`` and
``nodes/bag_player_node.py``; this package only knows files, schemas and CDR bytes.
"""
from personal.bags.reader import BagError, BagReader, BagMessage
from personal.bags.schema import message_definition
from personal.bags.writer import BagWriter

__all__ = ["BagError", "BagMessage", "BagReader", "BagWriter", "message_definition"]
