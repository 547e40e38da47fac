// The seven collectives as plug-ins (nccl-tests' testColl: getCollByteCount, in-place offsets,
// runColl, and the expected data of verifiable/).
#include "scalefit/bench/collective.hpp"

#include "scalefit/core/error.hpp"

#include <cmath>

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
  if (backend != "nccl" || p != Placement::in_place || (op != Op::alltoall && op != Op::sendrecv))
    return "";
  return std::string("NCCL defines no in-place ") +
         (op == Op::alltoall ? "ncclAlltoAll" : "ncclSend/ncclRecv") +
         " (in place only for AllReduce, Broadcast, Reduce, AllGather, ReduceScatter): with send "
         "== recv the result is undefined, so it is neither timed nor checked (nccl-tests reports "
         "no errors for it)";
}

} // namespace scalefit::bench
