// Precompiled header of podvisor's libraries (meson's cpp_pch).
//
// Only for build speed: every file still includes what it uses. These are
// the headers nearly every translation unit pulls in, directly or through
// pod/model.h; parsing them is about half the compile time of a file, and
// CI compiles the tree twice (plain and sanitized) on 2 cores. No
// include guard: the compiler takes each as the main file, once.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
