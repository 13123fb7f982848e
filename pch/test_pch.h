// Precompiled header of the test programs (meson's cpp_pch): the library
// one plus googletest and googlemock, which every test file includes.

#include "lib_pch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
