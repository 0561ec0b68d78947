// A probe for the layering tests (tests/CMakeLists.txt): it includes one file of the layer testing.
// cmake/check_layers.cmake checks it as a file of another layer. Never compiled.
#include "testing/backend_conformance.cpp"
