# The packaging test (tests/CMakeLists.txt): installs the build tree into a fresh prefix, then
# checks that the reference docs are there (share/doc/dix), configures docs/examples as a
# standalone project against it (find_package(dix CONFIG)), builds it and runs its tests, which run
# the examples (among them a shared library linking dix::dix that a program loads with dlopen()).
# Fails at the first step that fails.
#   cmake -DBUILD_DIR=… -DEXAMPLES=… -DWORK_DIR=… -DGENERATOR=… -DCXX=… [-DLAUNCHER=…]
#         [-DSANITIZERS=…] [-DDOCDIR=…] -P test_install.cmake
cmake_minimum_required(VERSION 3.25)

function(step what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "packaging: ${what}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: ${what} failed (${rc})")
  endif()
endfunction()

get_filename_component(bin "${CMAKE_COMMAND}" DIRECTORY)
set(ctest "${bin}/ctest")
set(prefix "${WORK_DIR}/prefix")
set(consumer "${WORK_DIR}/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")

step("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# The reference the installed headers and the conformance kit cite (docs/README.md) is installed
# beside them.
if(NOT DOCDIR)
  set(DOCDIR "share/doc/dix")
endif()
foreach(doc README.md protocol.md api.md backends.md actors.md formats.md testing.md)
  if(NOT EXISTS "${prefix}/${DOCDIR}/${doc}")
    message(FATAL_ERROR "packaging: ${prefix}/${DOCDIR}/${doc} was not installed")
  endif()
endforeach()
message(STATUS "packaging: the reference is installed in ${prefix}/${DOCDIR}")

# Release, whatever the project's build type: the consumer only has to link. The project's
# sanitizers come along, or the instrumented libraries would not link.
set(configure "${CMAKE_COMMAND}" -S "${EXAMPLES}" -B "${consumer}" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}")
if(LAUNCHER)
  list(APPEND configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
if(SANITIZERS)
  list(APPEND configure "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZERS} -fno-omit-frame-pointer"
                        "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZERS}"
                        "-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=${SANITIZERS}")
endif()
step("configure the consumer" ${configure})
step("build the consumer" "${CMAKE_COMMAND}" --build "${consumer}" -j2)
step("run the examples" "${ctest}" --test-dir "${consumer}" --output-on-failure)
