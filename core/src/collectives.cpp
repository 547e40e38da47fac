#include "scalefit/core/collectives.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace scalefit {
namespace {

std::string normalize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace

const std::vector<Op> &all_ops() {
  static const std::vector<Op> ops = {Op::allreduce, Op::allgather, Op::reducescatter, Op::reduce,
                                      Op::broadcast, Op::alltoall,  Op::alltoallv,
                                      Op::sendrecv};
  return ops;
}

std::string_view op_name(Op op) {
  switch (op) {
  case Op::allreduce: return "allreduce";
  case Op::allgather: return "allgather";
  case Op::reducescatter: return "reducescatter";
  case Op::reduce: return "reduce";
  case Op::broadcast: return "broadcast";
  case Op::alltoall: return "alltoall";
  case Op::alltoallv: return "alltoallv";
  case Op::sendrecv: return "sendrecv";
  }
  return "?";
}

std::optional<Op> parse_op(std::string_view name) {
  const std::string n = normalize(name);
  for (Op op : all_ops())
    if (n == op_name(op)) return op;
  if (n == "bcast") return Op::broadcast;
  if (n == "p2p" || n == "sendrecvring") return Op::sendrecv;
  return std::nullopt;
}

double busbw_factor(Op op, int nranks) {
  const double n = nranks;
  switch (op) {
  case Op::allreduce: return nranks > 0 ? 2.0 * (n - 1.0) / n : 0.0;
  case Op::allgather:
  case Op::reducescatter:
  case Op::alltoall:
  case Op::alltoallv: return nranks > 0 ? (n - 1.0) / n : 0.0;
  case Op::reduce:
  case Op::broadcast:
  case Op::sendrecv: return 1.0;
  }
  return 1.0;
}

bool count_divided_by_ranks(Op op) {
  return op == Op::allgather || op == Op::reducescatter || op == Op::alltoall ||
         op == Op::alltoallv;
}

std::size_t count_per_rank(Op op, std::size_t bytes, std::size_t type_bytes, int nranks) {
  if (type_bytes == 0 || nranks <= 0) return 0;
  const std::size_t div = count_divided_by_ranks(op) ? type_bytes * static_cast<std::size_t>(nranks)
                                                     : type_bytes;
  return bytes / div;
}

std::size_t effective_bytes(Op op, std::size_t bytes, std::size_t type_bytes, int nranks) {
  const std::size_t c = count_per_rank(op, bytes, type_bytes, nranks);
  return c * type_bytes * (count_divided_by_ranks(op) ? static_cast<std::size_t>(nranks) : 1);
}

std::string_view dtype_name(DType t) {
  switch (t) {
  case DType::int8: return "int8";
  case DType::uint8: return "uint8";
  case DType::int32: return "int32";
  case DType::uint32: return "uint32";
  case DType::int64: return "int64";
  case DType::uint64: return "uint64";
  case DType::half: return "half";
  case DType::float32: return "float";
  case DType::float64: return "double";
  case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  static const std::array<std::pair<const char *, DType>, 24> table = {{
      {"int8", DType::int8},        {"char", DType::int8},        {"uint8", DType::uint8},
      {"int32", DType::int32},      {"int", DType::int32},        {"uint32", DType::uint32},
      {"int64", DType::int64},      {"uint64", DType::uint64},    {"half", DType::half},
      {"float16", DType::half},     {"fp16", DType::half},        {"f16", DType::half},
      {"float", DType::float32},    {"float32", DType::float32},  {"fp32", DType::float32},
      {"f32", DType::float32},      {"double", DType::float64},   {"float64", DType::float64},
      {"fp64", DType::float64},     {"f64", DType::float64},      {"bfloat16", DType::bfloat16},
      {"bf16", DType::bfloat16},    {"mpifloat", DType::float32}, {"mpidouble", DType::float64},
  }};
  const std::string n = normalize(name);
  for (const auto &[key, t] : table)
    if (n == key) return t;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
  case DType::int8:
  case DType::uint8: return 1;
  case DType::half:
  case DType::bfloat16: return 2;
  case DType::int32:
  case DType::uint32:
  case DType::float32: return 4;
  case DType::int64:
  case DType::uint64:
  case DType::float64: return 8;
  }
  return 1;
}

std::string_view redop_name(RedOp r) {
  switch (r) {
  case RedOp::sum: return "sum";
  case RedOp::prod: return "prod";
  case RedOp::max: return "max";
  case RedOp::min: return "min";
  case RedOp::avg: return "avg";
  }
  return "?";
}

std::optional<RedOp> parse_redop(std::string_view name) {
  const std::string n = normalize(name);
  for (RedOp r : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min, RedOp::avg})
    if (n == redop_name(r)) return r;
  return std::nullopt;
}

bool op_has_redop(Op op) {
  return op == Op::allreduce || op == Op::reduce || op == Op::reducescatter;
}
bool op_has_root(Op op) { return op == Op::reduce || op == Op::broadcast; }

std::string_view placement_name(Placement p) {
  return p == Placement::in_place ? "in-place" : "out-of-place";
}

std::optional<Placement> parse_placement(std::string_view name) {
  const std::string n = normalize(name);
  if (n == "outofplace" || n == "oop") return Placement::out_of_place;
  if (n == "inplace" || n == "ip") return Placement::in_place;
  return std::nullopt;
}

std::string GroupShape::label() const {
  return kind + " n=" + std::to_string(nranks) + " (" + std::to_string(nnodes) + "x" +
         std::to_string(ranks_per_node) + ")";
}

}  // namespace scalefit
