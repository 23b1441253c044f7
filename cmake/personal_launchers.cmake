# `ros2 run personal <node>` launchers: one per entry of setup.py's NODES (the single list), plus
# the `personal` CLI, each the same guarded script:
#
#     from nodes.mapping_node import main
#     if __name__ == "__main__":
#         sys.exit(main())
#
# The guard matters: multiprocessing's spawn start method (the mapping node's encoder process)
# re-imports the parent's main script in the child as __mp_main__; an unguarded sys.exit(main())
# there started a second node inside the child and the encoder never loaded (issue 27, finding 5).
# setuptools' console scripts (the pip install) have the same guard.
#
# CMakeLists.txt calls personal_write_launchers() and installs the result into lib/personal; the
# tests run this file in script mode to get exactly the scripts an install gets:
#   cmake -DPERSONAL_SETUP_PY=setup.py -DPERSONAL_LAUNCHER_DIR=<dir> -P cmake/personal_launchers.cmake

function(_personal_write_launcher path name module func)
  file(WRITE "${path}"
    "#!/usr/bin/env python3\n"
    "\"\"\"`ros2 run personal ${name}` launcher for ${module}:${func} (written by cmake/personal_launchers.cmake).\"\"\"\n"
    "import sys\n\n"
    "from ${module} import ${func}\n\n"
    "if __name__ == \"__main__\":  # not when multiprocessing's spawn re-imports this file\n"
    "    sys.exit(${func}())\n")
endfunction()

# Write the launchers of setup.py's NODES and the CLI into out_dir; their paths go to out_var.
function(personal_write_launchers setup_py out_dir out_var)
  file(STRINGS "${setup_py}" _lines REGEX "^    \"[a-z0-9_]+\": \"[A-Za-z0-9_.]+:[A-Za-z0-9_]+\",")
  if(NOT _lines)
    message(FATAL_ERROR "${setup_py}: no NODES entries (\"name\": \"module:function\",) found")
  endif()
  set(_scripts "")
  foreach(_line IN LISTS _lines)
    string(REGEX MATCH "\"([a-z0-9_]+)\": \"([A-Za-z0-9_.]+):([A-Za-z0-9_]+)\"" _m "${_line}")
    _personal_write_launcher("${out_dir}/${CMAKE_MATCH_1}" "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}" "${CMAKE_MATCH_3}")
    list(APPEND _scripts "${out_dir}/${CMAKE_MATCH_1}")
  endforeach()
  _personal_write_launcher("${out_dir}/personal" "personal" "personal.cli" "main")
  list(APPEND _scripts "${out_dir}/personal")
  set(${out_var} ${_scripts} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED PERSONAL_LAUNCHER_DIR)
  personal_write_launchers("${PERSONAL_SETUP_PY}" "${PERSONAL_LAUNCHER_DIR}" _written)
  list(LENGTH _written _n)
  message(STATUS "wrote ${_n} launchers into ${PERSONAL_LAUNCHER_DIR}")
endif()
