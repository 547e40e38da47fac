/// \file input_file.hpp
/// Every file scalefit reads goes through read_input: opened once, refused when it is not a
/// regular file or a pipe, and capped in size, so that `--fit /dev/zero` fails at once instead of
/// reading gigabytes, and `fit <(scalefit ingest ...)` or a named FIFO is read exactly once even
/// when a command looks at the input twice (e.g. to tell kernel records from collective records).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace scalefit {

/// Largest input read [bytes]: 1 GiB. A records file of a whole cluster sweep is tens of MB; a
/// log hundreds of kB.
inline constexpr std::uint64_t kMaxInputBytes = std::uint64_t{1} << 30;

/// The whole contents of `path`, read once.
/// - Regular files are read (and re-read on each call); pipes and FIFOs (`<(cmd)`, `mkfifo`) are
///   read once per process and kept, so a second call for the same path returns the same text.
/// - `-` is standard input (read once, kept).
/// \throws InputError naming the path when it cannot be opened, is a directory, a character or
///   block device or a socket ("not a regular file or pipe"), or holds more than `max_bytes`.
std::shared_ptr<const std::string> read_input(const std::string &path,
                                              std::uint64_t max_bytes = kMaxInputBytes);

/// Refuses outputs that would overwrite an input or each other (`fit m.jsonl -o m.jsonl`, `fit ...
/// -o f.yaml --csv f.yaml`): an output that is an input file (the same file, through links too)
/// or the same path as an earlier output. `outputs`: (path, option naming it); empty paths and
/// `-` (stdout) are skipped. \throws InputError naming the option.
void refuse_outputs_over_inputs(const std::vector<std::pair<std::string, std::string>> &outputs,
                                const std::vector<std::string> &inputs);

} // namespace scalefit
