// Strategy search and system comparison.
#include "scalefit/estimator/search.hpp"

#include "scalefit/core/error.hpp"

#include "detail.hpp"

#include <algorithm>
#include <memory>
#include <string>

namespace scalefit::estimator {

SearchResult search(const Estimator &est, const SearchSpace &space, int top_k) {
  if (space.gpus <= 0 || space.gpus > kMaxGpus)
    throw InputError("expected a GPU count in [1, " + std::to_string(kMaxGpus) + "], got " +
                         std::to_string(space.gpus),
                     "", 0, "--gpus");
  if (space.global_batch <= 0)
    throw InputError("a positive global batch is needed (option or the model's global_batch)", "",
                     0, "--global-batch");
  if (top_k < 1)
    throw InputError("expected at least 1, got " + std::to_string(top_k), "", 0, "--top");
  SearchResult r;
  r.top.reserve(top_k + 1);
  Estimate e;
  Strategy s = space.base;
  s.global_batch = space.global_batch;
  const int n_all = space.gpus;
  const bool moe = est.model().moe();
  const auto cache = std::make_unique<LayerCostCache>(); // blocks shared across layouts
  for (int cp = 1; cp <= std::max(1, space.max_cp); cp *= 2) {
  if (n_all % cp != 0)
    break;
  s.cp = cp;
  const int n = n_all / cp;
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp != 0 || (space.max_tp > 0 && tp > space.max_tp))
      continue;
    for (int pp = 1; pp <= n / tp; ++pp) {
      if ((n / tp) % pp != 0)
        continue;
      const int dp = n / tp / pp;
      s.dp = dp;
      s.tp = tp;
      s.pp = pp;
      for (int v = 1; v <= (pp > 1 ? space.max_interleave : 1); ++v) {
        s.interleave = v;
        for (int b : space.micro_batches) {
          s.micro_batch = b;
          for (int z : space.zero_stages) {
            s.zero = z;
            for (Recompute rc : space.recomputes) {
              s.recompute = rc;
              for (int spi = 0; spi < (tp > 1 && space.try_sp ? 2 : 1); ++spi) {
                s.sp = spi == 1;
                // MoE: expert-parallel degrees 1, 2, 4 ... dividing the experts (dense: 1)
                for (int ep = 1; ep <= (moe ? space.max_ep : 1); ep *= 2) {
                s.ep = ep;
                if (moe && est.model().experts % ep != 0)
                  break;
                ++r.enumerated;
                Reject why = est.check(s, n_all);
                if (why == Reject::none) {
                  ++r.estimated;
                  // memory first: a layout that does not fit is not timed
                  if (!est.evaluate_fitting(s, e, cache.get()))
                    why = Reject::memory;
                }
                if (why != Reject::none) {
                  ++r.rejected[static_cast<int>(why)];
                  continue;
                }
                ++r.accepted;
                const double t = e.time_s.iteration;
                if (static_cast<int>(r.top.size()) == top_k &&
                    t >= r.top.back().estimate.time_s.iteration)
                  continue;
                auto pos =
                    std::upper_bound(r.top.begin(), r.top.end(), t, [](double x, const Ranked &c) {
                      return x < c.estimate.time_s.iteration;
                    });
                est.evaluate(s, e); // a kept layout lists its messages
                r.top.insert(pos, Ranked{s, e});
                if (static_cast<int>(r.top.size()) > top_k)
                  r.top.pop_back();
                }
              }
            }
          }
        }
      }
    }
  }
  }
  return r;
}

Comparison compare(const Estimator &a, const Estimator &b, const std::optional<Strategy> &strategy,
                   const SearchSpace &space) {
  Comparison c;
  auto one = [&](const Estimator &est, Ranked &out) {
    if (strategy) {
      est.validate(*strategy, space.gpus);
      out.strategy = *strategy;
      est.evaluate(*strategy, out.estimate);
      return;
    }
    SearchResult r = search(est, space, 1);
    if (r.top.empty())
      throw InputError("no layout of " + std::to_string(space.gpus) + " GPUs fits in memory on " +
                           est.system().name,
                       "", 0, "--gpus");
    out = r.top.front();
  };
  one(a, c.a);
  one(b, c.b);
  const auto &ta = c.a.estimate.time_s, &tb = c.b.estimate.time_s;
  c.time_ratio = tb.iteration / ta.iteration;
  c.comm_ratio = ta.communication > 0 ? tb.communication / ta.communication : 0;
  c.comm_share_a = ta.communication / ta.iteration;
  c.comm_share_b = tb.communication / tb.iteration;
  c.exposed_share_a = (ta.communication - ta.overlap) / ta.iteration;
  c.exposed_share_b = (tb.communication - tb.overlap) / tb.iteration;
  return c;
}

}  // namespace scalefit::estimator
