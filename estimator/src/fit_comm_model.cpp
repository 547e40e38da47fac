// Adaptor: prices messages by a measured fit file (fitting/predict.hpp) and falls back to the
// spec-derived curves where the file has no entry for the op and group shape.
#include "scalefit/estimator/comm_model.hpp"
#include "scalefit/fitting/predict.hpp"

#include <cmath>
#include <optional>
#include <vector>

namespace scalefit::estimator {
namespace {

constexpr int kPointsPerOctave = 4;
constexpr int kOctaves = 44; // 1 B .. 16 TiB
constexpr int kPoints = kOctaves * kPointsPerOctave + 1;

/// The tabulated fit of one (op, nranks, nnodes): log2 time at log2 sizes.
struct Curve {
  Op op = Op::allreduce;
  int nranks = 1, nnodes = 1;
  bool from_fit = false;
  int source = 0;
  std::vector<float> log2_time_us; // kPoints
  std::vector<char> extrapolated;  // kPoints
};

class FitCommModel final : public CommModel {
public:
  FitCommModel(fitting::FitFilePtr fit, std::shared_ptr<const CommModel> spec, DType dtype,
               AlltoallMatrix matrix)
      : m_fit(std::move(fit)), m_spec(std::move(spec)), m_dtype(dtype), m_matrix(matrix) {
    m_curves.reserve(64);
  }

  CommPrice price(Op op, const CommGroup &g, double bytes) const override {
    if (g.nranks <= 1 || bytes <= 0)
      return {};
    const Curve &c = curve(op, g);
    if (!c.from_fit) {
      CommPrice p = m_spec->price(op, g, bytes);
      p.source = kSpecOffset + p.source; // keep spec ids distinct from fit entries
      return p;
    }
    const double x = std::max(0.0, std::log2(bytes)) * kPointsPerOctave;
    const int i = std::min(kPoints - 2, static_cast<int>(x));
    const double w = std::min(1.0, x - i);
    CommPrice p;
    p.time_us = std::exp2((1 - w) * c.log2_time_us[i] + w * c.log2_time_us[i + 1]);
    p.source = c.source;
    p.extrapolated = c.extrapolated[i] || c.extrapolated[i + 1] || x > kPoints - 1;
    return p;
  }

  std::string source_name(int source) const override {
    if (source >= kSpecOffset)
      return m_spec->source_name(source - kSpecOffset);
    return "fit:" + m_sources.at(source);
  }
  bool source_is_fit(int source) const override { return source < kSpecOffset; }

private:
  static constexpr int kSpecOffset = 1 << 20;

  const Curve &curve(Op op, const CommGroup &g) const {
    for (const Curve &c : m_curves)
      if (c.op == op && c.nranks == g.nranks && c.nnodes == g.nnodes)
        return c;
    Curve c;
    c.op = op;
    c.nranks = g.nranks;
    c.nnodes = g.nnodes;
    // The curves to try, best first. MoE token dispatch/combine (Op::alltoall) is an AllToAllv
    // in Megatron-Core (per-peer split sizes): the measured alltoallv of the chosen count matrix
    // (skewed falls back to uniform), then alltoall (uniform alltoallv's traffic), then the spec.
    fitting::CommQuery tries[3];
    int n_tries = 0;
    auto add = [&](Op o, const char *method) {
      fitting::CommQuery &t = tries[n_tries++];
      t.op = o;
      t.nranks = g.nranks;
      t.nnodes = g.nnodes;
      t.method = method;
    };
    if (op == Op::alltoall) {
      if (m_matrix == AlltoallMatrix::skewed)
        add(Op::alltoallv, "skewed");
      add(Op::alltoallv, "uniform");
    }
    add(op, "");
    fitting::CommQuery q;
    std::optional<fitting::CommPrediction> first;
    for (int i = 0; i < n_tries && !first; ++i) {
      q = tries[i];
      q.dtype = m_dtype;
      first = fitting::predict(*m_fit, q, 1.0);
      if (!first) { // no entry of this dtype: any dtype
        q.dtype.reset();
        first = fitting::predict(*m_fit, q, 1.0);
      }
    }
    if (first) {
      c.from_fit = true;
      c.source = source_id(first->entry.empty() ? std::string(op_name(op)) : first->entry);
      c.log2_time_us.resize(kPoints);
      c.extrapolated.resize(kPoints);
      for (int i = 0; i < kPoints; ++i) {
        const double bytes = std::exp2(double(i) / kPointsPerOctave);
        const auto pr = fitting::predict(*m_fit, q, bytes);
        const double t = pr ? std::max(1e-3, pr->time_us) : 1e-3;
        c.log2_time_us[i] = static_cast<float>(std::log2(t));
        c.extrapolated[i] = pr ? pr->extrapolated : 1;
      }
    }
    m_curves.push_back(std::move(c));
    return m_curves.back();
  }

  int source_id(const std::string &entry) const {
    for (std::size_t i = 0; i < m_sources.size(); ++i)
      if (m_sources[i] == entry)
        return static_cast<int>(i);
    m_sources.push_back(entry);
    return static_cast<int>(m_sources.size() - 1);
  }

  fitting::FitFilePtr m_fit;
  std::shared_ptr<const CommModel> m_spec;
  DType m_dtype;
  AlltoallMatrix m_matrix;
  mutable std::vector<Curve>
      m_curves; // grows on first use of an (op, group); stable refs via reserve
  mutable std::vector<std::string> m_sources;
};

} // namespace

bool fit_support_available() {
  return true;
}

std::shared_ptr<const CommModel> make_fit_comm_model(const std::string &fit_path,
                                                     std::shared_ptr<const CommModel> spec,
                                                     DType dtype, AlltoallMatrix matrix) {
  return std::make_shared<FitCommModel>(fitting::load_fit_file(fit_path), std::move(spec), dtype,
                                        matrix);
}

}  // namespace scalefit::estimator
