# Finds Debian's libxapian-dev (1.4) through the CMake config it ships (xapian-config.cmake sets
# XAPIAN_LIBRARIES and XAPIAN_INCLUDE_DIR, no target) and defines Xapian::xapian. Only the
# full-text backend's source file includes <xapian.h> (runtime/backends/README.md).
find_package(xapian CONFIG QUIET)
find_path(XAPIAN_INCLUDE_DIR NAMES xapian.h HINTS "${XAPIAN_INCLUDE_DIR}")
find_library(XAPIAN_LIBRARY NAMES xapian HINTS "${XAPIAN_SHARED_LIBRARY}")
if(XAPIAN_INCLUDE_DIR AND EXISTS "${XAPIAN_INCLUDE_DIR}/xapian/version.h")
  file(STRINGS "${XAPIAN_INCLUDE_DIR}/xapian/version.h" _dix_xapian_version_line
       REGEX "^#define XAPIAN_VERSION \"[0-9.]+\"")
  string(REGEX REPLACE "^#define XAPIAN_VERSION \"([0-9.]+)\".*" "\\1" Xapian_VERSION
         "${_dix_xapian_version_line}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Xapian
  REQUIRED_VARS XAPIAN_INCLUDE_DIR XAPIAN_LIBRARY
  VERSION_VAR Xapian_VERSION)
if(Xapian_FOUND AND NOT TARGET Xapian::xapian)
  add_library(Xapian::xapian UNKNOWN IMPORTED)
  set_target_properties(Xapian::xapian PROPERTIES
    IMPORTED_LOCATION "${XAPIAN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XAPIAN_INCLUDE_DIR}")
endif()
