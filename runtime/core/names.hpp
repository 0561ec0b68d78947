// The name rules are public API (<dix/names.hpp>, implemented in core/names.cpp); internal code
// may include either header.
#pragma once

#include <dix/names.hpp>
