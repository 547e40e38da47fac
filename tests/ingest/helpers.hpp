/// \file helpers.hpp
/// Small helpers shared by the ingest tests (tests/ingest/*.cpp).
#pragma once

#include "scalefit/ingest/ingest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace scalefit::ingest::test {

/// Path of a committed nccl-tests log: tests/data/nccl-tests/<name>.
inline std::string data(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/nccl-tests/" + name;
}

/// The record of `bytes` and placement `p` (and `op`, when given) in `r`; nullptr when none.
inline const MeasurementRecord *find(const IngestResult &r, std::uint64_t bytes, Placement p,
                                     std::optional<Op> op = std::nullopt) {
  for (const auto &m : r.measurements)
    if (m.bytes == bytes && m.placement == p && (!op || m.op == *op))
      return &m;
  return nullptr;
}

/// True when some string of `v` contains `a` (and `b`, when not empty).
inline bool any_contains(const std::vector<std::string> &v, const std::string &a,
                         const std::string &b = "") {
  return std::any_of(v.begin(), v.end(), [&](const std::string &s) {
    return s.find(a) != std::string::npos && (b.empty() || s.find(b) != std::string::npos);
  });
}

/// Writes `text` to <gtest temp dir>/<name> and returns the path.
inline std::string write_tmp(const std::string &name, const std::string &text) {
  const auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p) << text;
  return p.string();
}

/// Path of a real log kept in tests/data/real-logs/ (its first line names its source).
inline std::string real(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/real-logs/" + name;
}

/// The OSU record of size `size` (OSU's own size column, `extra.osu_size`) and, when not empty,
/// measuring `method`; nullptr when none.
inline const MeasurementRecord *osu_size(const IngestResult &r, std::uint64_t size,
                                         const std::string &method = "") {
  for (const auto &m : r.measurements)
    if (m.extra.at("osu_size").get<std::uint64_t>() == size &&
        (method.empty() || m.method == method))
      return &m;
  return nullptr;
}

/// A string field of an ingested context's `source` object (e.g. "nranks_from").
/// \throws nlohmann::json::exception when the key is missing or not a string.
inline std::string source(const IngestResult &r, const char *key) {
  return r.context.source.at(key).get<std::string>();
}

} // namespace scalefit::ingest::test
