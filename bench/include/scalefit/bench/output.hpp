/// \file output.hpp
/// The --out/--resume rules of `scalefit-bench comm`. Nothing measured is ever lost silently:
///  - without --resume, --out must be a new or empty file (else: error, exit 2);
///  - with --resume, the file may be new/empty, or hold the SAME context (system, backend, nranks,
///    nnodes, ranks per node, dtype set); its points are skipped and a new context record is
///    appended before the new points. A different context is an error (exit 2), and so is a
///    different method (check_same_method: --stat, --hot, --nccl-tests, --batch, -G). A tail of
///    NUL bytes (a crash) is dropped with a message.
/// All checks happen before any measurement and never create the file.
#pragma once

#include "scalefit/core/records.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::bench {

/// Whether two contexts describe the same sweep for --resume: system, backend, nranks, nnodes,
/// ranks_per_node and the "dtypes" list (ContextRecord::extra) are equal.
bool same_context(const ContextRecord &a, const ContextRecord &b);

/// What an existing output file already holds for the run's context.
struct ResumeState {
  std::map<std::string, MeasurementRecord> done; ///< by MeasurementRecord::key()
  bool truncate_partial_line = false; ///< the file ends in an unterminated line (a killed write)
  std::uintmax_t valid_bytes = 0;     ///< size of the file up to its last complete line [B]
  bool dropped_nul_padding = false;   ///< the tail held NUL bytes (a crash): dropped from the
                                      ///< line of the first NUL on (truncate_partial_line set)
};

/// --resume mixes no methods in one curve: the context fields statistic (--stat), buffers.mode
/// (--hot), sampling.mode (--nccl-tests), sampling.batch (--batch) and sampling.graph_launches
/// (-G) of a context already in `path` (`file`) must equal this run's (`run`); a field missing
/// from either (older files) is not compared.
/// \throws InputError naming the field and its option (exit 2) on a difference.
void check_same_method(const ContextRecord &file, const ContextRecord &run,
                       const std::string &path);

/// Whether `path` exists and is neither a regular file nor a directory (a character device such
/// as /dev/full or /dev/null, a FIFO): --out then writes in place, takes no lock and cannot be
/// resumed.
bool is_device_output(const std::string &path);

/// Applies the rules above to `path` for context `ctx`; does not create or modify the file.
/// \throws InputError (field "--out" or "--resume") when the rules forbid the run, when the
///   file is unreadable or malformed, or when neither it nor its directory can be written.
ResumeState prepare_output(const std::string &path, bool resume, const ContextRecord &ctx);

/// The context record's `not_run` field: one {"op", "placement", "why"} object for each of
/// `ops` x `placements` that `backend` does not run (collective.hpp: not_run_reason; the table
/// prints N/A for them); an empty array when it runs them all.
nlohmann::json not_run_entries(std::string_view backend, const std::vector<Op> &ops,
                               const std::vector<Placement> &placements);

} // namespace scalefit::bench
