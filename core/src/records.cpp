#include "scalefit/core/records.hpp"

#include "scalefit/core/jsonl.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/core/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace scalefit {
namespace {

using nlohmann::json;

/// Reads a required or optional field with the type check naming file, line and field.
struct FieldReader {
  const json &j;
  const std::string &file;
  long line;
  std::string prefix;

  [[noreturn]] void fail(const std::string &field, const std::string &why) const {
    throw InputError(why, file, line, prefix + field);
  }
  const json *find(const std::string &field) const {
    auto it = j.find(field);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  const json &need(const std::string &field) const {
    const json *v = find(field);
    if (!v) fail(field, "missing");
    return *v;
  }
  std::string str(const std::string &field, bool required = true) const {
    const json *v = required ? &need(field) : find(field);
    if (!v) return {};
    if (!v->is_string()) fail(field, "expected a string, got " + dump_json(*v));
    return v->get<std::string>();
  }
  double num(const std::string &field, bool required = true, double dflt = 0) const {
    const json *v = required ? &need(field) : find(field);
    if (!v) return dflt;
    if (!v->is_number()) fail(field, "expected a number, got " + dump_json(*v));
    return v->get<double>();
  }
  std::int64_t integer(const std::string &field, bool required = true, std::int64_t dflt = 0) const {
    const json *v = required ? &need(field) : find(field);
    if (!v) return dflt;
    if (!v->is_number_integer()) fail(field, "expected an integer, got " + dump_json(*v));
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      fail(field, "integer out of range, got " + dump_json(*v));
    return v->get<std::int64_t>();
  }
  /// An integer in [lo, hi] (required, or `dflt` when absent and not required).
  std::int64_t integer_in(const std::string &field, std::int64_t lo, std::int64_t hi,
                          bool required = true, std::int64_t dflt = 0) const {
    const std::int64_t v = integer(field, required, dflt);
    if (find(field)) require_int_in(v, lo, hi, prefix + field, file, line);
    return v;
  }
  /// A number inside `b` (required, or `dflt` when absent and not required).
  double num_in(const std::string &field, const Bounds &b, bool required = true,
                double dflt = 0) const {
    const double v = num(field, required, dflt);
    if (find(field)) require_in(v, b, prefix + field, file, line);
    return v;
  }
};

json summary_to_json(const Summary &s) {
  return json{{"n", s.n},         {"min_us", s.min},       {"median_us", s.median},
              {"mean_us", s.mean}, {"max_us", s.max},       {"stddev_us", s.stddev},
              {"p99_us", s.p99}};
}

}  // namespace

std::string MeasurementRecord::key(bool with_size) const {
  std::string k;
  k.append(op_name(op)).append("|").append(group.kind).append("|");
  k.append(std::to_string(group.nranks)).append("|").append(std::to_string(group.nnodes));
  k.append("|").append(std::to_string(group.ranks_per_node)).append("|");
  k.append(dtype_name(dtype)).append("|").append(redop_name(redop)).append("|");
  k.append(std::to_string(root)).append("|").append(placement_name(placement));
  if (!method.empty()) k.append("|").append(method);
  if (with_size) k.append("|").append(std::to_string(bytes));
  return k;
}

json to_json(const ContextRecord &c) {
  json j = c.extra.is_object() ? c.extra : json::object();
  j["type"] = "context";
  j["schema"] = c.schema;
  j["system"] = c.system;
  j["backend"] = c.backend;
  j["nranks"] = c.nranks;
  j["nnodes"] = c.nnodes;
  j["ranks_per_node"] = c.ranks_per_node;
  j["emulated_nodes"] = c.emulated_nodes;
  j["hosts"] = c.hosts;
  j["devices"] = c.devices;
  j["versions"] = c.versions;
  j["command_line"] = c.command_line;
  j["env"] = c.env;
  j["start_time"] = c.start_time;
  if (!c.source.is_null()) j["source"] = c.source;
  return j;
}

json to_json(const MeasurementRecord &m) {
  json j = m.extra.is_object() ? m.extra : json::object();
  j["type"] = "measurement";
  j["op"] = op_name(m.op);
  j["group"] = json{{"kind", m.group.kind},
                    {"nranks", m.group.nranks},
                    {"nnodes", m.group.nnodes},
                    {"ranks_per_node", m.group.ranks_per_node}};
  j["dtype"] = dtype_name(m.dtype);
  j["redop"] = redop_name(m.redop);
  j["root"] = m.root;
  j["placement"] = placement_name(m.placement);
  if (!m.method.empty()) j["method"] = m.method;
  j["bytes"] = m.bytes;
  j["count"] = m.count;
  j["time_us"] = m.time_us;
  j["algbw_gbps"] = m.algbw_gbps;
  j["busbw_gbps"] = m.busbw_gbps;
  if (m.wrong) j["wrong"] = *m.wrong;
  if (m.stats) j["stats"] = summary_to_json(*m.stats);
  if (m.iters_per_sample > 0) j["iters_per_sample"] = m.iters_per_sample;
  if (!m.samples_us.empty()) j["samples_us"] = m.samples_us;
  if (!m.repeat_time_us.empty()) j["repeat_time_us"] = m.repeat_time_us;
  return j;
}

ContextRecord context_from_json(const json &j, const std::string &file, long line) {
  FieldReader r{j, file, line, ""};
  ContextRecord c;
  c.schema = r.str("schema");
  if (c.schema.rfind("scalefit.comm/", 0) != 0)
    r.fail("schema", "unknown schema '" + c.schema + "' (expected " + kCommSchema + ")");
  c.system = r.str("system", false);
  c.backend = r.str("backend", false);
  c.nranks = static_cast<int>(r.integer_in("nranks", 0, kMaxRecordRanks, false));
  c.nnodes = static_cast<int>(r.integer_in("nnodes", 0, kMaxRecordRanks, false));
  c.ranks_per_node = static_cast<int>(r.integer_in("ranks_per_node", 0, kMaxRecordRanks, false));
  if (const json *v = r.find("emulated_nodes")) {
    if (!v->is_boolean()) r.fail("emulated_nodes", "expected true or false");
    c.emulated_nodes = v->get<bool>();
  }
  try {
    if (const json *v = r.find("hosts")) c.hosts = v->get<std::vector<std::string>>();
    if (const json *v = r.find("devices")) c.devices = v->get<std::vector<std::string>>();
    if (const json *v = r.find("versions")) c.versions = v->get<std::map<std::string, std::string>>();
    if (const json *v = r.find("env")) c.env = v->get<std::map<std::string, std::string>>();
  } catch (const json::exception &e) {
    throw InputError(std::string("malformed list or map: ") + e.what(), file, line, "hosts/devices/versions/env");
  }
  c.command_line = r.str("command_line", false);
  c.start_time = r.str("start_time", false);
  if (const json *v = r.find("source")) c.source = *v;
  static const char *known[] = {"type", "schema", "system", "backend", "nranks", "nnodes",
                                "ranks_per_node", "emulated_nodes", "hosts", "devices", "versions",
                                "command_line", "env", "start_time", "source"};
  c.extra = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool is_known = false;
    for (const char *k : known) is_known = is_known || it.key() == k;
    if (!is_known) c.extra[it.key()] = it.value();
  }
  return c;
}

MeasurementRecord measurement_from_json(const json &j, const std::string &file, long line) {
  FieldReader r{j, file, line, ""};
  MeasurementRecord m;
  const std::string op = r.str("op");
  if (auto o = parse_op(op)) m.op = *o;
  else r.fail("op", "unknown operation '" + op + "'");
  const json &g = r.need("group");
  if (!g.is_object()) r.fail("group", "expected an object");
  FieldReader gr{g, file, line, "group."};
  m.group.kind = gr.str("kind");
  m.group.nranks = static_cast<int>(gr.integer_in("nranks", 1, kMaxRecordRanks));
  m.group.nnodes = static_cast<int>(gr.integer_in("nnodes", 1, m.group.nranks, false, 1));
  m.group.ranks_per_node =
      static_cast<int>(gr.integer_in("ranks_per_node", 1, m.group.nranks, false, m.group.nranks));
  const std::string dt = r.str("dtype");
  if (auto t = parse_dtype(dt)) m.dtype = *t;
  else r.fail("dtype", "unknown data type '" + dt + "'");
  const std::string ro = r.str("redop", false);
  if (!ro.empty()) {
    if (auto x = parse_redop(ro)) m.redop = *x;
    else r.fail("redop", "unknown reduction '" + ro + "'");
  }
  m.root = static_cast<int>(r.integer_in("root", -1, m.group.nranks - 1, false, -1));
  const std::string pl = r.str("placement", false);
  if (!pl.empty()) {
    if (auto p = parse_placement(pl)) m.placement = *p;
    else r.fail("placement", "expected 'out-of-place' or 'in-place', got '" + pl + "'");
  }
  m.method = r.str("method", false);
  if (m.method.size() > 64 ||
      !std::all_of(m.method.begin(), m.method.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
      }))
    r.fail("method", "expected a benchmark name of letters, digits, '_', '-', '.' (at most 64)");
  // A 0 B point has no bandwidth and nothing to fit (the ingesters skip nccl-tests' size-0 rows
  // with a note): refused here, not silently excluded later.
  m.bytes = static_cast<std::uint64_t>(r.integer_in("bytes", 1, kMaxRecordBytes));
  m.count = static_cast<std::uint64_t>(r.integer_in(
      "count", 0, kMaxRecordBytes, false,
      static_cast<std::int64_t>(count_per_rank(m.op, m.bytes, dtype_size(m.dtype), m.group.nranks))));
  m.time_us = r.num_in("time_us", bounds::measured_time_us);  // 0 or 5e-324: no measurement
  const Bounds bw{0, 1e6};  // [GB/s]; 0 when the time is 0
  m.algbw_gbps = r.num_in("algbw_gbps", bw, false, gbps(static_cast<double>(m.bytes), m.time_us));
  m.busbw_gbps =
      r.num_in("busbw_gbps", bw, false, m.algbw_gbps * busbw_factor(m.op, m.group.nranks));
  if (r.find("wrong")) m.wrong = r.integer_in("wrong", 0, INT64_MAX);
  if (const json *s = r.find("stats")) {
    if (!s->is_object()) r.fail("stats", "expected an object");
    FieldReader sr{*s, file, line, "stats."};
    Summary sum;
    sum.n = static_cast<std::size_t>(sr.integer_in("n", 0, INT64_MAX));
    sum.min = sr.num_in("min_us", bounds::time_us);
    sum.median = sr.num_in("median_us", bounds::time_us);
    sum.mean = sr.num_in("mean_us", bounds::time_us);
    sum.max = sr.num_in("max_us", bounds::time_us);
    sum.stddev = sr.num_in("stddev_us", bounds::time_us);
    sum.p99 = sr.num_in("p99_us", bounds::time_us);
    m.stats = sum;
  }
  m.iters_per_sample = static_cast<int>(r.integer_in("iters_per_sample", 0, INT32_MAX, false, 0));
  if (const json *v = r.find("samples_us")) {
    if (!v->is_array()) r.fail("samples_us", "expected an array of numbers");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json &x = (*v)[i];
      const std::string f = "samples_us[" + std::to_string(i) + "]";
      if (!x.is_number()) r.fail(f, "expected a number, got " + dump_json(x));
      m.samples_us.push_back(require_in(x.get<double>(), bounds::time_us, f, file, line));
    }
  }
  if (const json *v = r.find("repeat_time_us")) {
    if (!v->is_array()) r.fail("repeat_time_us", "expected an array of numbers");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json &x = (*v)[i];
      const std::string f = "repeat_time_us[" + std::to_string(i) + "]";
      if (!x.is_number()) r.fail(f, "expected a number, got " + dump_json(x));
      m.repeat_time_us.push_back(require_in(x.get<double>(), bounds::time_us, f, file, line));
    }
  }
  static const char *known[] = {"type", "op", "group", "dtype", "redop", "root", "placement",
                                "method", "bytes", "count", "time_us", "algbw_gbps", "busbw_gbps", "wrong",
                                "stats", "iters_per_sample", "samples_us", "repeat_time_us"};
  m.extra = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool is_known = false;
    for (const char *k : known) is_known = is_known || it.key() == k;
    if (!is_known) m.extra[it.key()] = it.value();
  }
  return m;
}

RecordSet read_records(const std::string &path) {
  RecordSet set;
  for_each_json_line(path, [&](const json &j, long line) {
    auto t = j.find("type");
    if (t == j.end() || !t->is_string()) throw InputError("missing", path, line, "type");
    const std::string type = t->get<std::string>();
    if (type == "context") {
      set.contexts.push_back(context_from_json(j, path, line));
    } else if (type == "measurement") {
      if (set.contexts.empty())
        throw InputError("measurement before any context record", path, line);
      set.measurements.push_back(measurement_from_json(j, path, line));
      set.context_of.push_back(set.contexts.size() - 1);
      set.origin.push_back(path + ":" + std::to_string(line));
    } else {
      throw InputError("unknown record type '" + type + "' (expected context or measurement)", path,
                       line, "type");
    }
    return true;
  });
  return set;
}

std::vector<std::string> expand_jsonl_inputs(const std::vector<std::string> &inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string &in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto &de : fs::directory_iterator(in, ec))
        if (de.is_regular_file() && de.path().extension() == ".jsonl")
          found.push_back(de.path().string());
      std::sort(found.begin(), found.end());
      if (found.empty())
        throw InputError("directory has no *.jsonl files", in);
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw InputError("no such file or directory", in);
    }
  }
  return files;
}

JsonlWriter::JsonlWriter(const std::string &path) : m_path(path) {
  m_file = std::fopen(path.c_str(), "a");
  if (!m_file) throw InputError(std::string("cannot open for writing: ") + std::strerror(errno), path);
}

JsonlWriter::~JsonlWriter() {
  if (m_file) std::fclose(m_file);
}

void JsonlWriter::write(const json &j) {
  const std::string line = dump_json(j) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0)
    throw InputError(std::string("cannot write: ") + std::strerror(errno), m_path);
}

std::string dump_json(const json &j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace scalefit
