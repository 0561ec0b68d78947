# Finds Debian's libcpp-httplib-dev (0.11): a split build, the declarations in httplib.h and the
# implementation in libcpp-httplib.so, compiled with OpenSSL, zlib and Brotli support. The header
# must see the same CPPHTTPLIB_* definitions as the library (the .pc file's Cflags), or the class
# layouts differ. Defines Httplib::httplib. Only runtime/cli/metrics_server.cpp includes it.
find_path(HTTPLIB_INCLUDE_DIR NAMES httplib.h)
find_library(HTTPLIB_LIBRARY NAMES cpp-httplib)
if(HTTPLIB_INCLUDE_DIR AND EXISTS "${HTTPLIB_INCLUDE_DIR}/httplib.h")
  file(STRINGS "${HTTPLIB_INCLUDE_DIR}/httplib.h" _dix_httplib_version_line
       REGEX "^#define CPPHTTPLIB_VERSION \"[0-9.]+\"")
  string(REGEX REPLACE "^#define CPPHTTPLIB_VERSION \"([0-9.]+)\".*" "\\1" HTTPLIB_VERSION
         "${_dix_httplib_version_line}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Httplib
  REQUIRED_VARS HTTPLIB_INCLUDE_DIR HTTPLIB_LIBRARY
  VERSION_VAR HTTPLIB_VERSION)
if(Httplib_FOUND AND NOT TARGET Httplib::httplib)
  find_package(Threads REQUIRED)
  add_library(Httplib::httplib UNKNOWN IMPORTED)
  set_target_properties(Httplib::httplib PROPERTIES
    IMPORTED_LOCATION "${HTTPLIB_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${HTTPLIB_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "CPPHTTPLIB_OPENSSL_SUPPORT;CPPHTTPLIB_ZLIB_SUPPORT;CPPHTTPLIB_BROTLI_SUPPORT"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
