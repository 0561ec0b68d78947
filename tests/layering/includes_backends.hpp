// A probe for the layering tests (tests/CMakeLists.txt): it includes one file of the layer backends.
// cmake/check_layers.cmake checks it as a file of another layer. Never compiled.
#include "backends/rocksdb_index_backend.cpp"
