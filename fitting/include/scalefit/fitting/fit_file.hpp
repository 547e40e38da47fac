/// \file fit_file.hpp
/// The fit file (YAML, schema "scalefit.fit/2", documented in docs/fit-file.md): one entry per
/// fitted curve (op, group shape, dtype, redop, root, placement) with model, parameters and their
/// standard errors, valid size range and quality; scaling series across node counts; provenance.
/// Building it from measurement records, writing it, and loading it (load_fit_file in predict.hpp).
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/fitting/compute.hpp"
#include "scalefit/fitting/fit.hpp"
#include "scalefit/fitting/predict.hpp"
#include "scalefit/fitting/scaling.hpp"

#include <map>
#include <string>
#include <vector>

namespace scalefit::fitting {

/// Schema identifier of fit files this version writes. /2 extends /1 with the regimes model's
/// bandwidth drops (`parameters.drops`, docs/fit-file.md); the loader also reads /1 files
/// (kFitSchemaV1), in which `drops` is an error.
inline constexpr const char *kFitSchema = "scalefit.fit/2";
/// Schema of files with a `compute` or `framework` section (compute.hpp): /2 plus those
/// sections. Written only when the file holds one, so files without stay readable by /2 readers.
inline constexpr const char *kFitSchemaV3 = "scalefit.fit/3";
/// The key that ends every fit file (`end: true`, the last key of the top-level mapping). The
/// loader refuses a file without it as truncated (docs/fit-file.md, "End marker").
inline constexpr const char *kFitEndKey = "end";
/// The previous schema, still read: the same fields without `parameters.drops`.
inline constexpr const char *kFitSchemaV1 = "scalefit.fit/1";

/// One fitted curve.
struct FitEntry {
  std::string
      id; ///< "allreduce:world:16=2x8:float:sum:out-of-place" (+ ":method" when the records have
          ///< one, + "@system" when ids collide)
  std::string system; ///< the context's system name of the records fitted
  Op op = Op::allreduce;
  GroupShape group;
  DType dtype = DType::float32;
  RedOp redop = RedOp::sum;
  int root = -1;
  Placement placement = Placement::out_of_place;
  std::string method; ///< MeasurementRecord::method of the records fitted ("osu_bw", ...; "" none)
  int points = 0;                      ///< points fitted (after exclusions)
  RepeatStats repeats; ///< points merged from repeats in several files (fit file `repeats`)
  std::vector<ExcludedPoint> excluded; ///< points left out, with reasons
  double min_bytes = 0;                ///< smallest fitted size [B] (valid range, inclusive)
  double max_bytes = 0;                ///< largest fitted size [B]
  double peak_busbw_gbps = 0;          ///< largest measured busbw [GB/s]
  CurveModel model;                    ///< the chosen model
  std::vector<double> stderrs;         ///< per parameter_names(model); NaN when unknown
  FitQuality quality;
  int status = 0;        ///< Eigen LevenbergMarquardtSpace::Status of the chosen fit
  int info = 0;          ///< Eigen ComputationInfo of the chosen fit
  std::string selection; ///< why this model: "BIC regimes(R=2) -123.4 < logistic -98.1"
  std::map<std::string, double> candidate_bic; ///< "alpha_beta", "logistic", "regimes(R=2)" → BIC
  std::string diagnostic;                      ///< LM warnings; empty when clean

  /// The fitted algbw at the largest measured size, max_bytes / t_model(max_bytes) [GB/s]: the
  /// bandwidth the fit file calls asymptotic and extrapolates with. It is the time-based figure
  /// nccl-tests prints, so latency lifts and drops are included (the bandwidth term B(s) alone can
  /// lie far above it when a lift carries part of the time, and a fitted Σ bmax beyond the data).
  double asymptotic_algbw_gbps() const {
    return max_bytes > 0 ? max_bytes / model.time_us(max_bytes) * 1e-3 : 0.0;
  }
  /// The latency floor t_model(min_bytes) [us] (α alone may trade off against a k ≈ 1 step).
  double latency_us() const { return model.time_us(min_bytes); }
  /// nccl-tests' busbw factor of this entry's op and nranks.
  double busbw_factor() const { return scalefit::busbw_factor(op, group.nranks); }
};

/// A curve that could not be fitted, and why.
struct UnfittedEntry {
  std::string id;
  int points = 0;
  std::string reason;
};

/// Entries of one op (and dtype, placement, group kind, ranks per node, redop, root) at several
/// node counts, with eff(g→n) between consecutive counts and parameter trends in log2(nnodes).
struct ScalingSeries {
  std::string system; ///< entries of one system only
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  Placement placement = Placement::out_of_place;
  RedOp redop = RedOp::sum;
  int root = -1;
  std::string kind = "world";
  int ranks_per_node = 1;
  std::vector<int> nnodes;                   ///< measured node counts, ascending
  std::vector<std::string> entries;          ///< entry id per node count
  std::vector<ScalingEfficiency> efficiency; ///< first count → each other count
  LogLinearTrend alpha_us;   ///< latency floor t(min_bytes) [us] against log2(nnodes)
  LogLinearTrend busbw_gbps; ///< busbw at max_bytes (asymptotic_algbw_gbps() x factor) [GB/s] against log2(nnodes)
};

/// Where the records came from.
struct FitSource {
  std::string file;
  std::string system;
  std::string backend;
  int nranks = 0, nnodes = 0;
  int measurements = 0;
};

/// A fit file in memory.
class FitFile {
public:
  std::string schema = kFitSchema;
  std::string path; ///< file it was loaded from ("" when built)
  std::map<std::string, std::string>
      system;                          ///< name, backend, devices, hosts... of the first source
  std::string tool = "scalefit 0.1.0"; ///< generator
  std::string created;                 ///< ISO 8601 UTC
  std::vector<FitSource> sources;
  std::vector<FitEntry> entries;
  std::vector<UnfittedEntry> unfitted;
  std::vector<ScalingSeries> scaling;
  ComputeSection compute; ///< kernel throughput fits and calibrated framework constants (/3)
  /// How repeats of a point in several files were treated (repeat_policy_name: "merge",
  /// "refuse"); "" when not recorded (files written before repeats were merged): no `repeats` key.
  std::string repeat_policy;

  /// Points merged from repeats over all entries and compute fits.
  int merged_points() const;

  /// The entry with this id, or nullptr.
  const FitEntry *find(const std::string &id) const;
};

/// The id of the curve a record belongs to.
std::string entry_id(const MeasurementRecord &m);

/// Groups the records by (context system, MeasurementRecord::key(false)), fits each group with
/// fit_curve, and builds the scaling series. Curves that cannot be fitted go to `unfitted` with the
/// reason. \param sets record sets (one per file) and their file names (same length)
FitFile fit_records(const std::vector<RecordSet> &sets, const std::vector<std::string> &files,
                    const FitOptions &options = {});

/// Builds the scaling series of a file's entries (called by fit_records).
std::vector<ScalingSeries> build_scaling(const std::vector<FitEntry> &entries);

/// The YAML text of a fit file (yaml-cpp emitter).
std::string to_yaml(const FitFile &fit);

/// Writes to_yaml(fit) to `path` atomically (core/atomic_file.hpp: temporary file, fsync, rename):
/// `path` holds the whole new file or its previous content, never a part.
/// The text is parsed back first (parse_fit_file): \throws std::logic_error (a bug; exit 3) when
/// it would not load, and writes nothing.
/// \throws InputError naming `path` when it cannot be written (missing directory, full disk...).
void write_fit_file(const FitFile &fit, const std::string &path);

/// Time [us] of `bytes` on one entry's curve with the range rule: inside [min_bytes, max_bytes]
/// the model; below, the latency floor t_model(min_bytes); above, t_model(max_bytes) +
/// (bytes − max_bytes) / asymptotic algbw. Sets `extrapolated` outside the range.
double entry_time_us(const FitEntry &entry, double bytes, bool &extrapolated);

/// Parses and validates fit-file text; `name` is used in errors.
/// \throws InputError naming file, line (yaml-cpp Mark), entry and field.
FitFile parse_fit_file(const std::string &text, const std::string &name);

} // namespace scalefit::fitting
