// The eight collectives as plug-ins (nccl-tests' testColl: getCollByteCount, in-place offsets,
// runColl, and the expected data of verifiable/), and AllToAllv's count matrices.
#include "scalefit/bench/collective.hpp"

#include "scalefit/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace scalefit::bench {
namespace {

std::size_t same(std::size_t c, int) {
  return c;
}
std::size_t times_n(std::size_t c, int n) {
  return c * static_cast<std::size_t>(n);
}
std::size_t zero(std::size_t) {
  return 0;
}
std::size_t one_block(std::size_t c) {
  return c;
}
bool always(const CollArgs &) {
  return true;
}
bool root_only(const CollArgs &a) {
  return a.rank == a.root;
}

double reduced(const CheckPattern &p, std::size_t i) {
  return p.reduced[i & static_cast<std::size_t>(p.period - 1)];
}

const std::vector<Collective> kCollectives = {
    {Op::allreduce, "all_reduce_perf", same, same, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.allreduce(s, r, a.count, a.dtype, a.redop);
     },
     always,
     [](const CheckPattern &p, const CollArgs &, std::size_t, std::size_t i) {
       return reduced(p, i);
     }},
    {Op::allgather, "all_gather_perf", same, times_n, one_block, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.allgather(s, r, a.count, a.dtype);
     },
     always,
     [](const CheckPattern &p, const CollArgs &, std::size_t block, std::size_t i) {
       return p.input(static_cast<int>(block), i);
     }},
    {Op::reducescatter, "reduce_scatter_perf", times_n, same, zero, one_block,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.reducescatter(s, r, a.count, a.dtype, a.redop);
     },
     always,
     [](const CheckPattern &p, const CollArgs &a, std::size_t, std::size_t i) {
       return reduced(p, static_cast<std::size_t>(a.rank) * a.count + i);
     }},
    {Op::reduce, "reduce_perf", same, same, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.reduce(s, r, a.count, a.dtype, a.redop, a.root);
     },
     root_only,
     [](const CheckPattern &p, const CollArgs &, std::size_t, std::size_t i) {
       return reduced(p, i);
     }},
    {Op::broadcast, "broadcast_perf", same, same, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.broadcast(s, r, a.count, a.dtype, a.root);
     },
     always,
     [](const CheckPattern &p, const CollArgs &a, std::size_t, std::size_t i) {
       return p.input(a.root, i);
     }},
    {Op::alltoall, "alltoall_perf", times_n, times_n, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) { c.alltoall(s, r, a.count, a.dtype); },
     always,
     [](const CheckPattern &p, const CollArgs &a, std::size_t block, std::size_t i) {
       // Block b of rank r's result is block r of rank b's send buffer.
       return p.input(static_cast<int>(block), static_cast<std::size_t>(a.rank) * a.count + i);
     }},
    // Buffers as alltoall's: both matrices send and receive n * count elements on every rank.
    {Op::alltoallv, "alltoallv_perf", times_n, times_n, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       c.alltoallv(s, r, alltoallv_plan(a.matrix, a.count, a.nranks, a.rank).layout, a.dtype);
     },
     always,
     [](const CheckPattern &p, const CollArgs &a, std::size_t block, std::size_t i) {
       // Element j of the result lies in the segment from the last source whose displacement is
       // <= j (zero-count segments share their successor's displacement).
       const AlltoallvPlan &plan = alltoallv_plan(a.matrix, a.count, a.nranks, a.rank);
       const std::vector<std::size_t> &d = plan.layout.recv_displs;
       const std::size_t j = block * a.count + i;
       const auto src = static_cast<std::size_t>(std::upper_bound(d.begin(), d.end(), j) -
                                                 d.begin() - 1);
       return p.input(static_cast<int>(src), plan.source_offsets[src] + (j - d[src]));
     }},
    {Op::sendrecv, "sendrecv_perf", same, same, zero, zero,
     [](Comm &c, const void *s, void *r, const CollArgs &a) {
       // Ring: send to rank + 1, receive from rank - 1.
       c.sendrecv(s, r, a.count, a.dtype, (a.rank + 1) % a.nranks,
                  (a.rank - 1 + a.nranks) % a.nranks);
     },
     always,
     [](const CheckPattern &p, const CollArgs &a, std::size_t, std::size_t i) {
       return p.input((a.rank - 1 + a.nranks) % a.nranks, i);
     }},
};

} // namespace

const std::vector<Collective> &all_collectives() {
  return kCollectives;
}

const Collective &collective(Op op) {
  for (const Collective &c : kCollectives)
    if (c.op == op)
      return c;
  throw RuntimeError("no collective plug-in for operation " + std::string(op_name(op)));
}

std::string not_run_reason(std::string_view backend, Op op, Placement p) {
  if (op == Op::alltoallv && p == Placement::in_place)
    return "no in-place alltoallv on either backend: NCCL has no AllToAllv collective (grouped "
           "ncclSend/ncclRecv, undefined with send == recv) and nccl-tests 2.19 checks it out of "
           "place only; MPI_Alltoallv takes MPI_IN_PLACE, but it is not timed here so that both "
           "backends measure the same thing";
  if (backend != "nccl" || p != Placement::in_place || (op != Op::alltoall && op != Op::sendrecv))
    return "";
  return std::string("NCCL defines no in-place ") +
         (op == Op::alltoall ? "ncclAlltoAll" : "ncclSend/ncclRecv") +
         " (in place only for AllReduce, Broadcast, Reduce, AllGather, ReduceScatter): with send "
         "== recv the result is undefined, so it is neither timed nor checked (nccl-tests reports "
         "no errors for it)";
}

std::string_view alltoallv_matrix_name(AlltoallvMatrix m) {
  return m == AlltoallvMatrix::skewed ? "skewed" : "uniform";
}

std::optional<AlltoallvMatrix> parse_alltoallv_matrix(std::string_view name) {
  if (name == "uniform")
    return AlltoallvMatrix::uniform;
  if (name == "skewed")
    return AlltoallvMatrix::skewed;
  return std::nullopt;
}

std::vector<std::size_t> alltoallv_row(AlltoallvMatrix m, std::size_t count, int nranks) {
  if (nranks < 1)
    return {};
  const auto n = static_cast<std::size_t>(nranks);
  if (m == AlltoallvMatrix::uniform)
    return std::vector<std::size_t>(n, count);
  // Zipf shares by popularity rank q, rounded by largest remainder (ties: smaller q).
  const std::size_t total = n * count;
  std::vector<long double> w(n);
  for (std::size_t q = 0; q < n; ++q)
    w[q] = std::pow(static_cast<long double>(q + 1), -static_cast<long double>(
                                                         kAlltoallvSkewExponent));
  const long double wsum = std::accumulate(w.begin(), w.end(), 0.0L);
  std::vector<std::size_t> by_q(n);
  std::vector<long double> frac(n);
  std::size_t assigned = 0;
  for (std::size_t q = 0; q < n; ++q) {
    const long double exact = static_cast<long double>(total) * w[q] / wsum;
    by_q[q] = std::min(total, static_cast<std::size_t>(std::floor(exact)));
    frac[q] = exact - static_cast<long double>(by_q[q]);
    assigned += by_q[q];
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&frac](std::size_t x, std::size_t y) { return frac[x] > frac[y]; });
  for (std::size_t k = 0; assigned < total; k = (k + 1) % n, ++assigned)
    ++by_q[order[k]];
  while (assigned > total) { // rounding never overshoots in practice; stay exact regardless
    const auto it = std::max_element(by_q.begin(), by_q.end());
    --*it;
    --assigned;
  }
  // Offset k = (p - r) mod n has popularity rank (k - 1) mod n: the next rank first, self last.
  std::vector<std::size_t> row(n);
  for (std::size_t k = 0; k < n; ++k)
    row[k] = by_q[(k + n - 1) % n];
  return row;
}

AlltoallvLayout alltoallv_layout(AlltoallvMatrix m, std::size_t count, int nranks, int rank) {
  const std::vector<std::size_t> row = alltoallv_row(m, count, nranks);
  const std::size_t n = row.size(), r = static_cast<std::size_t>(rank);
  AlltoallvLayout l;
  l.send_counts.resize(n);
  l.send_displs.resize(n);
  l.recv_counts.resize(n);
  l.recv_displs.resize(n);
  std::size_t so = 0, ro = 0;
  for (std::size_t p = 0; p < n; ++p) {
    l.send_counts[p] = row[(p + n - r % n) % n];
    l.recv_counts[p] = row[(r % n + n - p) % n];
    l.send_displs[p] = so;
    l.recv_displs[p] = ro;
    so += l.send_counts[p];
    ro += l.recv_counts[p];
  }
  return l;
}

AlltoallvPlan make_alltoallv_plan(AlltoallvMatrix m, std::size_t count, int nranks, int rank) {
  AlltoallvPlan plan;
  plan.matrix = m;
  plan.count = count;
  plan.nranks = nranks;
  plan.rank = rank;
  plan.layout = alltoallv_layout(m, count, nranks, rank);
  const std::vector<std::size_t> row = alltoallv_row(m, count, nranks);
  const std::size_t n = row.size(), r = static_cast<std::size_t>(rank);
  plan.source_offsets.assign(n, 0);
  for (std::size_t p = 0; p < n; ++p) // p sends to q < rank before rank: row[(q - p) mod n]
    for (std::size_t q = 0; q < r; ++q)
      plan.source_offsets[p] += row[(q + n - p) % n];
  return plan;
}

const AlltoallvPlan &alltoallv_plan(AlltoallvMatrix m, std::size_t count, int nranks, int rank) {
  thread_local AlltoallvPlan cached;
  if (cached.matrix != m || cached.count != count || cached.nranks != nranks ||
      cached.rank != rank)
    cached = make_alltoallv_plan(m, count, nranks, rank);
  return cached;
}

nlohmann::json alltoallv_context(const std::vector<Op> &ops, AlltoallvMatrix m) {
  if (std::find(ops.begin(), ops.end(), Op::alltoallv) == ops.end())
    return nullptr;
  nlohmann::json j = {{"matrix", alltoallv_matrix_name(m)}};
  if (m == AlltoallvMatrix::uniform) {
    j["definition"] = "every peer gets count elements (nccl-tests' NCCL_TESTS_ALLTOALLV_SPREAD=0)";
  } else {
    j["definition"] =
        "rank r sends to peer (r + k) mod n the share (q + 1)^-s / sum_i (i + 1)^-s of its n * "
        "count elements, q = (k - 1) mod n (next rank first, itself last), rounded by largest "
        "remainder; every rank sends and receives n * count elements";
    j["exponent"] = kAlltoallvSkewExponent;
  }
  j["size"] = "n * count * type size: every rank's send and receive volume (nccl-tests' size)";
  return j;
}

} // namespace scalefit::bench
