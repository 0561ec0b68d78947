# Finds Debian's libhnswlib-dev (0.6): header-only, no version macro and no CMake config, so the
# version is the package's and only the header is checked. Defines Hnswlib::hnswlib. Only the
# vector backend's source file includes <hnswlib/hnswlib.h> (runtime/backends/README.md).
find_path(HNSWLIB_INCLUDE_DIR NAMES hnswlib/hnswlib.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hnswlib REQUIRED_VARS HNSWLIB_INCLUDE_DIR)
if(Hnswlib_FOUND AND NOT TARGET Hnswlib::hnswlib)
  add_library(Hnswlib::hnswlib INTERFACE IMPORTED)
  set_target_properties(Hnswlib::hnswlib PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${HNSWLIB_INCLUDE_DIR}")
endif()
