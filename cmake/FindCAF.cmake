# Finds Debian's libcaf-dev 0.17.x, which ships neither a CMake package nor a .pc file.
# Defines CAF::core and CAF::io (CAF::io links CAF::core; CAF::core links Threads).
find_path(CAF_INCLUDE_DIR NAMES caf/all.hpp)
if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _dix_caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" _dix_caf_version
         "${_dix_caf_version_line}")
  math(EXPR _dix_caf_major "${_dix_caf_version} / 10000")
  math(EXPR _dix_caf_minor "(${_dix_caf_version} / 100) % 100")
  math(EXPR _dix_caf_patch "${_dix_caf_version} % 100")
  set(CAF_VERSION "${_dix_caf_major}.${_dix_caf_minor}.${_dix_caf_patch}")
endif()
if(NOT CAF_FIND_COMPONENTS)
  set(CAF_FIND_COMPONENTS core)
endif()
foreach(_dix_component IN LISTS CAF_FIND_COMPONENTS)
  find_library(CAF_${_dix_component}_LIBRARY NAMES caf_${_dix_component})
  if(CAF_${_dix_component}_LIBRARY)
    set(CAF_${_dix_component}_FOUND TRUE)
    if(NOT TARGET CAF::${_dix_component})
      add_library(CAF::${_dix_component} UNKNOWN IMPORTED)
      set_target_properties(CAF::${_dix_component} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_dix_component}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
    endif()
  endif()
endforeach()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
if(CAF_FOUND)
  find_package(Threads REQUIRED)
  if(TARGET CAF::io AND TARGET CAF::core)
    set_property(TARGET CAF::io APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
  endif()
  if(TARGET CAF::openssl AND TARGET CAF::io)
    set_property(TARGET CAF::openssl APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::io)
  endif()
  if(TARGET CAF::core)
    set_property(TARGET CAF::core APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
  endif()
endif()
mark_as_advanced(CAF_INCLUDE_DIR)
