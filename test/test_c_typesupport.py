"""Interoperability with non-Python nodes: a message serialised by rclpy is decoded by a C program
compiled here against the generated C typesupport and headers in the venv (what a C/C++ node or
rosbag2 on a robot does with the same CDR bytes), and rclpy reads back what the C program
serialises."""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

C_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcutils/allocator.h>
#include <rmw/rmw.h>
#include <rmw/serialized_message.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <personal/msg/episode_descriptor.h>

int main(int argc, char ** argv) {
  if (argc != 3) { fprintf(stderr, "usage: decode IN.cdr OUT.cdr\n"); return 2; }
  FILE * f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 2; }
  static unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof(buf), f);
  fclose(f);

  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  rmw_serialized_message_t in = rmw_get_zero_initialized_serialized_message();
  if (rmw_serialized_message_init(&in, n, &alloc) != RMW_RET_OK) { return 3; }
  memcpy(in.buffer, buf, n);
  in.buffer_length = n;

  const rosidl_message_type_support_t * ts = ROSIDL_GET_MSG_TYPE_SUPPORT(personal, msg, EpisodeDescriptor);
  personal__msg__EpisodeDescriptor * msg = personal__msg__EpisodeDescriptor__create();
  if (rmw_deserialize(&in, ts, msg) != RMW_RET_OK) { fprintf(stderr, "rmw_deserialize failed\n"); return 4; }

  printf("episode_id=%s\n", msg->episode_id.data);
  printf("query=%s\n", msg->query.data);
  printf("extracted_summary=%zu", msg->extracted_summary.size);
  for (size_t i = 0; i < msg->extracted_summary.size; ++i) printf("|%s", msg->extracted_summary.data[i].data);
  printf("\n");
  for (size_t i = 0; i < msg->target_positions.size; ++i) {
    geometry_msgs__msg__Point * p = &msg->target_positions.data[i];
    printf("target=%.17g,%.17g,%.17g\n", p->x, p->y, p->z);
  }
  printf("floor_id=%d index=%u count=%u\n", msg->floor_id, msg->index, msg->count);
  printf("geodesic_distance=%.17g\n", msg->geodesic_distance);

  rmw_serialized_message_t out = rmw_get_zero_initialized_serialized_message();
  if (rmw_serialized_message_init(&out, 0, &alloc) != RMW_RET_OK) { return 3; }
  if (rmw_serialize(msg, ts, &out) != RMW_RET_OK) { fprintf(stderr, "rmw_serialize failed\n"); return 5; }
  FILE * o = fopen(argv[2], "wb");
  fwrite(out.buffer, 1, out.buffer_length, o);
  fclose(o);
  personal__msg__EpisodeDescriptor__destroy(msg);
  rmw_serialized_message_fini(&in);
  rmw_serialized_message_fini(&out);
  return 0;
}
"""


def _compile(tmp_path: Path) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler: the bootstrap installs gcc (g++) for the interface build")
    prefix = Path(sys.prefix)
    src = tmp_path / "decode.c"
    src.write_text(C_SOURCE)
    includes = [f"-I{d}" for d in sorted((prefix / "include").iterdir()) if d.is_dir()]
    libs_dirs = sorted((prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages").glob("ros_*.libs"))
    exe = tmp_path / "decode"
    cmd = [cc, "-std=c11", "-O1", "-o", str(exe), str(src), *includes, f"-L{prefix / 'lib'}",
           "-lpersonal__rosidl_typesupport_c", "-lpersonal__rosidl_generator_c", "-lgeometry_msgs__rosidl_generator_c",
           "-lrmw_fastrtps_cpp", "-lrmw", "-lrcutils", "-lrosidl_runtime_c",
           f"-Wl,-rpath,{prefix / 'lib'}", *[f"-Wl,-rpath-link,{d}" for d in libs_dirs]]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"compiling against the generated C typesupport failed:\n{' '.join(cmd)}\n{res.stderr}"
    return exe


def test_python_cdr_decodes_in_c_and_back(tmp_path):
    from rclpy.serialization import deserialize_message, serialize_message

    from personal.interfaces.convert import from_dict
    from personal.msg import EpisodeDescriptor

    msg = from_dict(EpisodeDescriptor, {
        "episode_id": "synth_00000_hard_003", "scene_id": "synth_00000", "split": "hard",
        "query": "Find one of Lisa's mugs.", "summary": "Lisa owns the striped blue mug. Tom owns the red one.",
        "extracted_summary": ["Lisa owns the striped blue mug", "Tom owns the red mug"], "owner": "Lisa",
        "object_category": "mug", "target_object_ids": ["mug_12", "mug_40"], "description": ["a striped blue mug"] * 2,
        "target_positions": [{"x": 1.25, "y": -3.5, "z": 0.91}, {"x": 4.0, "y": 2.125, "z": 0.75}],
        "start_position": {"x": 0.5, "y": 0.25, "z": 0.0}, "start_yaw": math.pi / 3, "floor_id": 1,
        "geodesic_distance": 7.3125, "index": 4, "count": 30})
    cdr = serialize_message(msg)
    (tmp_path / "in.cdr").write_bytes(cdr)
    exe = _compile(tmp_path)
    res = subprocess.run([str(exe), str(tmp_path / "in.cdr"), str(tmp_path / "out.cdr")], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "episode_id=synth_00000_hard_003" and lines[1] == "query=Find one of Lisa's mugs."
    assert lines[2] == "extracted_summary=2|Lisa owns the striped blue mug|Tom owns the red mug"
    assert lines[3:5] == ["target=1.25,-3.5,0.91000000000000003", "target=4,2.125,0.75"]
    assert lines[5] == "floor_id=1 index=4 count=30" and lines[6] == "geodesic_distance=7.3125"
    back = (tmp_path / "out.cdr").read_bytes()
    assert len(back) == len(cdr)  # same layout (alignment padding bytes are unspecified in CDR)
    assert deserialize_message(back, EpisodeDescriptor) == msg  # and rclpy reads C's bytes back exactly
