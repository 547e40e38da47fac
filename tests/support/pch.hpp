/// \file pch.hpp
/// The heavy third-party headers most test translation units include (GoogleTest,
/// nlohmann_json) and the standard headers they pull in, precompiled once and reused by
/// every test target (tests/CMakeLists.txt, SCALEFIT_TEST_PCH): the front end spent most of a
/// test TU's compile time in these templates (a core test: 12.1 s without, 5.4 s with, on the
/// 2-core CI machine). Only headers, no project code: a test that forgets an include of its
/// own still fails to compile with SCALEFIT_TEST_PCH=OFF (the asan and fuzz presets build that
/// way). Not fmt: targets that link the shared fmt define FMT_SHARED, which a header that uses
/// it would then have to agree on (GCC refuses such a PCH: -Winvalid-pch).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>
