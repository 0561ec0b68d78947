# Fails when a Catch2 TEST_CASE name in a test source holds a semicolon: catch_discover_tests
# splits a name at each one, registering two ctests that both fail to find their test (it cost
# four CI rounds). Run by ctest as "tests: no TEST_CASE name holds a semicolon".
#   cmake -DDIR=<tests dir> -P check_test_names.cmake
file(GLOB_RECURSE sources "${DIR}/*.cpp")
set(bad "")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" lines REGEX "TEST_CASE\\(\"[^\"]*;")
  foreach(line IN LISTS lines)
    string(APPEND bad "\n  ${source}: ${line}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "TEST_CASE names holding a semicolon (ctest's discovery splits them):${bad}")
endif()
