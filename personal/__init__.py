"""personal — a ROS 2 stack for personalized embodied agents.

The ``personal`` package is the ROS-free library: it never imports rclpy.

``personal.msg`` holds the typed interfaces that rosidl generates from ``msg/*.msg``. A colcon
install puts them into this package's own folder; the pip bootstrap (scripts/build_interfaces.sh)
installs them under ``<venv>/lib/personal_rosidl/personal``, added to this package's path here
because the editable install of the library would otherwise shadow them.
"""
import os as _os
import sys as _sys

__version__ = "0.1.0"

_generated = _os.path.join(_sys.prefix, "lib", "personal_rosidl", "personal")
if _os.path.isdir(_generated) and _generated not in __path__:
    __path__.append(_generated)
