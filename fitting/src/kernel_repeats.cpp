// Kernel records measured more than once (compute.hpp: merge_kernel_repeats): counted once,
// repeats from other files merged into their median (core/repeats.hpp).
#include "scalefit/core/error.hpp"
#include "scalefit/core/repeats.hpp"
#include "scalefit/fitting/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace scalefit::fitting {
namespace {

/// The identity of a kernel measurement: device, dtype, kind, name, shape and, for unequal
/// groups, how they ran.
std::string kernel_key(const KernelPoint &p, const std::string &device) {
  std::string k = fmt::format("{}|{}|{}|{}|{:.17g}|{:.17g}|{:.17g}|{:.17g}|{}", device, p.dtype,
                              kernel_kind_name(p.kind), p.name, p.m, p.n, p.k, p.batch,
                              p.tokens_in_k ? "k" : "m");
  for (double t : p.group_tokens)
    k += fmt::format("|{:.17g}", t);
  if (!p.group_tokens.empty() && p.per_group)
    k += "|per-expert"; // a different way to run the same groups, not a repeat
  return k;
}

} // namespace

std::vector<KernelPoint> merge_kernel_repeats(const std::vector<std::vector<KernelPoint>> &per_file,
                                              const std::vector<std::string> &devices,
                                              const std::vector<std::string> &files,
                                              RepeatPolicy policy,
                                              std::vector<std::string> &notes) {
  struct Seen {
    std::size_t file;   ///< index into per_file
    double time_us;     ///< its time [us]
    std::string origin; ///< "file:line"
  };
  struct Point {
    std::size_t out = 0;    ///< index in the result
    std::vector<Seen> seen; ///< every reading, the kept one first
  };
  std::vector<KernelPoint> out;
  std::map<std::string, Point> points;
  std::map<std::pair<std::size_t, std::size_t>, int> identical; // (first, second file) -> count
  RepeatLog log;
  const auto name = [&](std::size_t f) { return f < files.size() ? files[f] : std::string(); };
  for (std::size_t f = 0; f < per_file.size(); ++f) {
    const std::string device = f < devices.size() ? devices[f] : "";
    const std::string file = name(f);
    for (const KernelPoint &p : per_file[f]) {
      const auto [it, fresh] = points.try_emplace(kernel_key(p, device));
      Point &pt = it->second;
      if (fresh) {
        pt = Point{out.size(), {{f, p.time_us, p.origin}}};
        out.push_back(p);
        out.back().repeat_time_us.clear();
        continue;
      }
      const auto same = std::find_if(pt.seen.begin(), pt.seen.end(),
                                     [&](const Seen &s) { return s.time_us == p.time_us; });
      if (same != pt.seen.end()) { // the same record again (the same file given twice)
        ++identical[{same->file, f}];
        continue;
      }
      const auto in_file = std::find_if(pt.seen.begin(), pt.seen.end(), [&](const Seen &s) {
        return s.file == f || name(s.file) == file;
      });
      if (in_file != pt.seen.end() || policy == RepeatPolicy::refuse) {
        const Seen &first = in_file != pt.seen.end() ? *in_file : pt.seen.front();
        throw InputError(
            fmt::format("kernel '{}' ({} {}, m {:g} n {:g} k {:g} batch {:g}) measured again "
                        "with a different result than {} (time_us {:g} vs {:g}): {}",
                        p.name, p.dtype, kernel_kind_name(p.kind), p.m, p.n, p.k, p.batch,
                        first.origin, first.time_us, p.time_us,
                        in_file != pt.seen.end()
                            ? "a rerun appended to this file (scalefit-bench kernels before it "
                              "resumed point by point); keep one of them"
                            : "a repeat from another run, refused by --repeats refuse; keep one "
                              "of them, or merge them (--repeats merge)"),
            origin_file(p.origin), origin_line(p.origin), "time_us");
      }
      log.add(name(pt.seen.front().file), file, pt.seen.front().time_us, p.time_us,
              fmt::format("{} {}", p.name, p.dtype));
      pt.seen.push_back({f, p.time_us, p.origin});
    }
  }
  for (auto &[key, pt] : points) {
    if (pt.seen.size() < 2)
      continue;
    KernelPoint &k = out[pt.out];
    for (const Seen &s : pt.seen)
      k.repeat_time_us.push_back(s.time_us);
    k.time_us = median_of(k.repeat_time_us);
  }
  for (const auto &[pair, n] : identical)
    notes.push_back(fmt::format("{} holds {} kernel record(s) identical to {}'s (the same file "
                                "given twice?): counted once",
                                name(pair.second), n, name(pair.first)));
  for (const std::string &line : log.lines("kernel shapes"))
    notes.push_back(line);
  return out;
}

} // namespace scalefit::fitting
