# Fails when any of FILES (a ;-list, or FILES_LIST: a file holding one) includes a header outside the standard library and the
# project's own std-only directories. Run as: cmake -DCXX=... -DROOT=runtime-dir -DFILES_LIST=file -P this
# Used as a POST_BUILD step of dix_core, so a CAF, RocksDB or Boost include there breaks the build.
# ROOT is runtime/: its include/ and itself are the project's std-only include directories.
set(INCLUDES "${ROOT}/include" "${ROOT}")
if(FILES_LIST)
  file(STRINGS "${FILES_LIST}" FILES)
endif()
set(_args -std=c++17 -x c++ -M)
foreach(_dir IN LISTS INCLUDES)
  list(APPEND _args "-I${_dir}")
endforeach()
execute_process(COMMAND "${CXX}" ${_args} ${FILES}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _deps ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "std-only check: the compiler could not list dependencies:\n${_err}")
endif()
string(REPLACE "\\\n" " " _deps "${_deps}")
string(REGEX REPLACE "[ \t\r\n]+" ";" _deps "${_deps}")
set(_bad "")
foreach(_dep IN LISTS _deps)
  if(_dep MATCHES ":$" OR _dep STREQUAL "")
    continue()
  endif()
  # clang names libstdc++ as /usr/bin/../lib/gcc/…: compare normalized paths.
  if(_dep MATCHES "^/")
    get_filename_component(_dep "${_dep}" ABSOLUTE)
  endif()
  # Allowed: the C++ standard library, the C library and kernel headers it pulls in, the
  # compiler's own headers (clang's stdint.h, stddef.h), our dirs.
  if((_dep MATCHES "^/usr/include/[^/]+$" AND NOT _dep MATCHES "xapian") OR
     _dep MATCHES "^/usr/include/(c\\+\\+|x86_64-linux-gnu|aarch64-linux-gnu|linux|asm|asm-generic)/" OR
     _dep MATCHES "^/usr/lib/gcc/" OR _dep MATCHES "^/usr/lib/llvm-[0-9]+/lib/clang/[^/]+/include/")
    continue()
  endif()
  set(_own FALSE)
  foreach(_dir IN LISTS INCLUDES)
    if(_dep MATCHES "^${_dir}/")
      set(_own TRUE)
    endif()
  endforeach()
  if(NOT _dep MATCHES "^/" OR _own)
    continue()
  endif()
  list(APPEND _bad "${_dep}")
endforeach()
if(_bad)
  list(REMOVE_DUPLICATES _bad)
  list(JOIN _bad "\n  " _bad_text)
  message(FATAL_ERROR "std-only check: these files may include only the standard library, "
                      "but pull in:\n  ${_bad_text}")
endif()
