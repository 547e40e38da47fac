/// \file kernels_resume.hpp
/// `scalefit-bench kernels --out FILE` on a file that already holds records (a job cut mid-way
/// and run again, a .part file): the run resumes point by point, as `scalefit-bench comm
/// --resume` does. Shapes the file already holds for the SAME sweep (same_kernels_sweep) are not
/// measured again and not written again; the others are measured and appended after a new
/// context record. A file holding other sweeps (another dtype, tp, model...) is appended to, as
/// before: no record is ever duplicated, nothing measured is lost. A torn last line (the job
/// killed mid-write) is dropped with a message.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>

namespace scalefit::kernels {

/// The identity of a kernel record (or of the fields of one about to be measured): name, kind,
/// pass, m, n, k, batch, dtype and group_tokens, as JSON text. Two records with the same key
/// measure the same kernel.
std::string kernel_record_key(const nlohmann::json &rec);

/// Whether two kernels context records describe the same sweep: every field equal but those
/// that change from one run of it to the next (start_time, command_line, host, versions).
bool same_kernels_sweep(const nlohmann::json &a, const nlohmann::json &b);

/// What an existing --out file holds for a run.
struct KernelsResume {
  std::map<std::string, nlohmann::json> done; ///< this sweep's kernel records by kernel_record_key
  std::size_t records = 0;                    ///< kernel records in the file (every sweep)
  std::string note; ///< what was done to a torn last line ("" when there was none)
};

/// Reads `path` for a run whose context record is `ctx` (a missing or empty file: nothing done)
/// and drops a torn last line: a last line without its newline is cut off the file when it is
/// not a whole JSON object (else its newline is added), and `note` says so, naming the file and
/// the line. The only change this makes to the file.
/// \throws InputError naming the file, the line and the field when a complete line is not a JSON
/// object, a context record's schema is not scalefit.kernels/1 (another tool's file: choose
/// another --out), or a kernel record comes before any context; field "--out" when the file
/// cannot be read or written.
KernelsResume prepare_kernels_output(const std::string &path, const nlohmann::json &ctx);

} // namespace scalefit::kernels
