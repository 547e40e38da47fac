/// \file pch.hpp
/// The third-party headers most of scalefit's translation units include (nlohmann_json, fmt,
/// yaml-cpp) and the standard headers around them, precompiled once and reused by every library
/// and executable target (CMakeLists.txt, SCALEFIT_PCH; GCC only). The front end spent about
/// half of a library TU's compile time in them (estimator.cpp: 4.8 s without, 2.7 s with, on the
/// 2-core CI machine), which the first run's build and CI pay for every TU. Only third-party and
/// standard headers: a file that forgets an include of its own still fails in the builds without
/// it (clang: the asan and fuzz presets).
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
