/// \file table.hpp
/// The nccl-tests table, in the current nccl-tests format (src/util.cu: writeResultHeader,
/// writeBenchmarkLinePreamble, writeBenchmarkLineBody, writeResultFooter), so users compare by eye.
#pragma once

#include "scalefit/bench/nccl_profiler.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace scalefit::bench {

/// nccl-tests' getFloatStr: `value` right-aligned in `width` columns with 2, 1 or 0 decimals
/// (fewer as the integer part grows), or exponent notation when it does not fit.
std::string format_float(double value, int width);

/// The header: one comment line naming what `time` is (`time_definition`, e.g. "mean over
/// samples of the per-operation time, averaged over ranks"), then nccl-tests' three lines
/// (placement titles, column names, units), each ending in '\n'; `choice_column` adds the
/// "algo/proto/ch" column after in-place #wrong (nccl: row_choice).
std::string table_header(const std::string &time_definition, bool choice_column = false);

/// The last column of a row when the table has one (table_header's choice_column, the nccl
/// backend): NCCL's choice for the row's first measured placement, "ALGO/PROTO/CHANNELS" (e.g.
/// "RING/LL128/4"); "p2p" for an operation NCCL runs as point-to-point work (AllToAll(v),
/// SendRecv: no algorithm or protocol); "-" when unknown (the context's nccl_profiler says why).
std::string row_choice(const std::optional<CollChoice> &choice, bool point_to_point);

/// The row's first columns: size [B], count [elements], type, redop ("none" for ops that do not
/// reduce), root (-1 for ops without one).
std::string row_preamble(std::uint64_t bytes, std::uint64_t count, std::string_view type,
                         std::string_view redop, int root);

/// One placement's columns: time [us], algbw and busbw [GB/s], #wrong ("N/A" without -c).
std::string row_body(double time_us, double algbw_gbps, double busbw_gbps,
                     std::optional<std::int64_t> wrong);

/// The columns of a placement that was not measured (--placement): dashes, same widths.
std::string row_absent();

/// The columns of a placement the backend does not run (collective.hpp: not_run_reason): N/A in
/// every column, same widths; and the note printed under the header of such a block, naming the
/// placement ("in-place") and why: "# in-place: N/A: <why>\n".
std::string row_not_run();
std::string not_run_note(std::string_view placement, std::string_view why);

/// The marker appended to a row whose algbw exceeds the device's memory bandwidth, and the
/// footnote that explains it (with the bandwidth [GB/s]).
inline constexpr const char *kAboveMemoryMark = "  !mem";
std::string above_memory_note(double memory_gbps);

/// The marker appended to a row whose samples fell into two regimes (core/timing.hpp:
/// detect_modes; the record's extra.modes holds both levels), and its footnote, which names the
/// statistic the row reports.
inline constexpr const char *kModesMark = "  ~2modes";
std::string modes_note(std::string_view statistic);

/// The footer: out-of-bounds count, average bus bandwidth [GB/s] and the concluding line.
std::string table_footer(std::int64_t wrong_total, double avg_busbw_gbps, std::string_view name);

} // namespace scalefit::bench
