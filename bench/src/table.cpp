// The nccl-tests table (current format of nccl-tests src/util.cu).
#include "scalefit/bench/table.hpp"

#include <fmt/format.h>

#include <cmath>

namespace scalefit::bench {

std::string format_float(double value, int width) {
  int power = 0;
  for (double v = 1; value >= v && power < 400; v *= 10)
    ++power;
  if (power < width - 2)
    return fmt::format("{:>{}.2f}", value, width);
  if (power < width - 1)
    return fmt::format("{:>{}.1f}", value, width);
  if (power < width + 1)
    return fmt::format("{:>{}.0f}", value, width);
  if (width >= 7)
    return fmt::format("{:>{}.1e}", value, width);
  return fmt::format("{:>{}.0e}", value, width);
}

std::string table_header(const std::string &time_definition, bool choice_column) {
  std::string h = "# time: " + time_definition + "\n";
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                 "
                   "      in-place          \n",
                   "", "", "", "", "");
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
                   "{:>6}  {:>6}  {:>6} {}\n",
                   "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                   "time", "algbw", "busbw", "#wrong", choice_column ? " algo/proto/ch" : "");
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
                   "{:>6}  {:>6}  {:>6} \n",
                   "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                   "(GB/s)", "(GB/s)", "");
  return h;
}

std::string row_choice(const std::optional<CollChoice> &choice, bool point_to_point) {
  if (choice && !choice->algo.empty())
    return fmt::format("  {}/{}/{}", choice->algo, choice->proto, choice->channels);
  return point_to_point ? "  p2p" : "  -";
}

std::string row_preamble(std::uint64_t bytes, std::uint64_t count, std::string_view type,
                         std::string_view redop, int root) {
  return fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", bytes, count, type, redop, root);
}

std::string row_body(double time_us, double algbw_gbps, double busbw_gbps,
                     std::optional<std::int64_t> wrong) {
  const std::string w = wrong ? fmt::format("{:>6}", *wrong) : std::string("   N/A");
  return fmt::format("  {}  {}  {}  {}", format_float(time_us, 7), format_float(algbw_gbps, 6),
                     format_float(busbw_gbps, 6), w);
}

std::string row_absent() {
  return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "-", "-", "-", "-");
}

std::string row_not_run() {
  return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A");
}

std::string not_run_note(std::string_view placement, std::string_view why) {
  return fmt::format("# {}: N/A: {}\n", placement, why);
}

std::string above_memory_note(double memory_gbps) {
  return fmt::format("# {} : algbw above the device memory bandwidth ({:.0f} GB/s): the data did "
                     "not all come from memory (cache), not a link rate\n",
                     std::string(kAboveMemoryMark).substr(2), memory_gbps);
}

std::string modes_note(std::string_view statistic) {
  return fmt::format("# {} : the samples fell into two regimes (a shared or preempted host); the "
                     "row reports the {} of all samples, the record's extra.modes both levels\n",
                     std::string(kModesMark).substr(2), statistic);
}

std::string table_footer(std::int64_t wrong_total, double avg_busbw_gbps, std::string_view name) {
  return fmt::format("# {:<20} : {} {}\n# {:<20} : {:g} \n#\n# Collective test concluded: {}\n",
                     "Out of bounds values", wrong_total, wrong_total ? "FAILED" : "OK",
                     "Avg bus bandwidth", avg_busbw_gbps, name);
}

} // namespace scalefit::bench
