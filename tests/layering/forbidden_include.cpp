// Deliberately breaks the core's layering rule: the std-only check must reject this file.
#include <rocksdb/db.h>
