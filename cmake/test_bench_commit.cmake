# Test: a bench report names the commit the tree is at, not the one CMake was configured at.
# Runs `dix bench wal` once (small) and compares its "commit" with `git rev-parse --short=7 HEAD`
# ("-dirty" aside: the tree may carry edits). Run as:
#   cmake -DDIX=path/to/dix -DSOURCE=dir -DWORK=dir -P this
execute_process(COMMAND "${DIX}" bench wal --records 200 --rounds 1 --dir "${WORK}"
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _report ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "dix bench wal failed (${_rc}): ${_err}")
endif()
if(NOT _report MATCHES "\"commit\":\"([^\"]*)\"")
  message(FATAL_ERROR "the report has no commit field: ${_report}")
endif()
set(_reported "${CMAKE_MATCH_1}")
string(REGEX REPLACE "-dirty$" "" _reported_commit "${_reported}")
execute_process(COMMAND git rev-parse --short=7 HEAD WORKING_DIRECTORY "${SOURCE}"
                RESULT_VARIABLE _git_rc OUTPUT_VARIABLE _head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _git_rc EQUAL 0)
  set(_head unknown)  # no git or no repository: the bench says so too
endif()
if(NOT _reported_commit STREQUAL _head)
  message(FATAL_ERROR "the report names commit '${_reported}', the tree is at '${_head}' (rebuild after a commit?)")
endif()
message(STATUS "bench commit: the report names ${_reported}, the tree is at ${_head}")
