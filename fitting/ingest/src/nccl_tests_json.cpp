// JSON outputs of the nccl-tests family, turned into the sections the text reader makes:
//  - nccl-tests `-J FILE` (src/util.cu, JSON_FILE_VERSION 2): one object with "args" (argv; argv[0]
//    names the *_perf binary), "nccl_version", "config" {"devices": [{rank, hostname, ...}]},
//    "results": [{size, count, type, redop, root, out_of_place|in_place: {time|cpu_time, alg_bw,
//    bus_bw, nwrong}}];
//  - rccl-tests `--output_file F --output_format json` (ROCm/rccl-tests PR #93): JSON lines
//    {"name":"AllReduce","gpus":4,"inPlace":0|1,"size":..,"time":..,"algBw":..,"busBw":..,
//    "type":"float","redop":"sum","#wrong":"0"}.
#include "nccl_tests_detail.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace scalefit::ingest::detail {
namespace {

using nlohmann::json;

/// A JSON value as the token the text table would print ("N/A" for null or "nan").
std::string token(const json &v) {
  if (v.is_null())
    return "N/A";
  if (v.is_string()) {
    const std::string s(trim(v.get<std::string>()));
    return s == "nan" ? "N/A" : s;
  }
  if (v.is_number_integer() || v.is_number_unsigned())
    return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d))
      return "N/A";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", d);
    return buf;
  }
  return v.dump();
}

std::vector<std::string> columns_for(bool per_iter) {
  std::vector<std::string> c{"size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                             "#wrong"};
  (void)per_iter;
  const std::vector<std::string> half{"time", "algbw", "busbw", "#wrong"};
  c.insert(c.end(), half.begin(), half.end());
  return c;
}

Section from_nccl_tests_doc(const json &doc, Diagnostics &diag, std::string &tool_version,
                            std::string &command_line) {
  Section s;
  s.header_line = 1;
  s.columns = columns_for(false);
  s.footer = doc.contains("average_bus_bandwidth") || doc.contains("end_time");
  if (doc.contains("args") && doc["args"].is_array()) {
    std::vector<std::string> args;
    for (const auto &a : doc["args"])
      if (a.is_string())
        args.push_back(a.get<std::string>());
    if (!args.empty()) {
      s.op_banner = op_from_binary(args.front());
      command_line = join(args);
    }
  }
  if (doc.contains("nccl_version") && doc["nccl_version"].is_number_integer())
    tool_version = "json v" + token(doc.value("version", json(nullptr)));
  if (const auto cfg = doc.find("config"); cfg != doc.end() && cfg->is_object())
    if (const auto dev = cfg->find("devices"); dev != cfg->end() && dev->is_array())
      for (const auto &d : *dev) {
        if (!d.is_object() || !d.contains("rank") || !d["rank"].is_number_integer() ||
            d["rank"].get<std::int64_t>() < 0 || d["rank"].get<std::int64_t>() >= kMaxRecordRanks)
          continue; // a rank number no job has is not a rank line
        RankLine rl;
        rl.rank = d["rank"].get<int>();
        rl.host = d.value("hostname", std::string());
        rl.device = d.value("device_info", std::string());
        rl.line = 1;
        s.ranks.push_back(rl);
      }
  const auto res = doc.find("results");
  if (res == doc.end() || !res->is_array())
    diag.fail(1, "results", "nccl-tests JSON without a \"results\" list");
  long idx = 0;
  for (const auto &r : *res) {
    ++idx;
    if (!r.is_object()) {
      diag.warn(1, "results[" + std::to_string(idx - 1) + "]", "not an object; skipped");
      continue;
    }
    RawRow row;
    row.line = 1;
    for (const char *k : {"size", "count", "type", "redop", "root"})
      row.prefix[k] = r.contains(k) ? token(r[k]) : "N/A";
    for (const char *place : {"out_of_place", "in_place"}) {
      RawHalf h;
      if (r.contains(place) && r[place].is_object()) {
        const json &p = r[place];
        h.cols["time"] = token(p.contains("time") ? p["time"] : p.value("cpu_time", json()));
        h.cols["algbw"] = token(p.value("alg_bw", json()));
        h.cols["busbw"] = token(p.value("bus_bw", json()));
        h.cols["#wrong"] = token(p.value("nwrong", json()));
      } else {
        h.cols["time"] = "N/A";
      }
      row.halves.push_back(h);
    }
    s.rows.push_back(std::move(row));
  }
  return s;
}

} // namespace

bool looks_like_json(const std::vector<std::string> &lines) {
  for (const auto &l : lines) {
    const auto t = trim(l);
    if (t.empty() || t.front() == '#') // a provenance comment may precede the JSON
      continue;
    // '{', or a JSON list ("[" alone or "[{"); never a "[host] $ srun ..." prompt.
    return t.front() == '{' || t == "[" || t.substr(0, 2) == "[{";
  }
  return false;
}

std::vector<Section> read_json_sections(const std::vector<std::string> &lines, Diagnostics &diag,
                                        std::string &tool_version, std::string &command_line) {
  // One document (nccl-tests -J) or one object per line (rccl-tests).
  std::string all;
  for (const auto &l : lines) {
    const auto t = trim(l);
    if (!t.empty() && t.front() == '#')
      all += '\n'; // keep line numbers; JSON has no comments
    else
      all += l + '\n';
  }
  json doc = json::parse(all, nullptr, false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("results"))
    return {from_nccl_tests_doc(doc, diag, tool_version, command_line)};

  std::map<std::string, Section> by_name;
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::size_t>> row_of; // name -> size|type -> row
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i) + 1;
    const auto t = trim(lines[i]);
    if (t.empty() || t.front() == '#')
      continue;
    json j = json::parse(t.begin(), t.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      diag.warn(ln, "", "not a JSON object; line skipped");
      continue;
    }
    if (!j.contains("size") || !j.contains("time")) {
      diag.warn(ln, "", "JSON record without \"size\" and \"time\"; skipped");
      continue;
    }
    const std::string name = j.value("name", std::string("unknown"));
    if (!by_name.count(name)) {
      Section s;
      s.header_line = ln;
      s.columns = {"size", "type", "redop", "time", "algbw", "busbw", "#wrong",
                   "time", "algbw", "busbw", "#wrong"};
      s.op_banner = parse_op(name);
      if (!s.op_banner)
        diag.fail(ln, "name", "unsupported collective '" + name + "'");
      s.footer = true;
      by_name[name] = s;
      order.push_back(name);
    }
    Section &s = by_name[name];
    if (j.contains("gpus") && j["gpus"].is_number_integer() && j["gpus"].get<long>() >= 1 &&
        j["gpus"].get<long>() <= kMaxRecordRanks)
      s.json_nranks = j["gpus"].get<int>();
    const std::string key = token(j["size"]) + "|" + j.value("type", std::string());
    auto &rows = row_of[name];
    if (!rows.count(key)) {
      RawRow row;
      row.line = ln;
      row.prefix["size"] = token(j["size"]);
      row.prefix["type"] = j.value("type", std::string("float"));
      row.prefix["redop"] = j.value("redop", std::string("none"));
      row.halves.resize(2);
      row.halves[0].cols["time"] = "N/A";
      row.halves[1].cols["time"] = "N/A";
      rows[key] = s.rows.size();
      s.rows.push_back(row);
    }
    RawRow &row = s.rows[rows[key]];
    const bool in_place = j.value("inPlace", 0) != 0;
    RawHalf &h = row.halves[in_place ? 1 : 0];
    h.cols["time"] = token(j["time"]);
    h.cols["algbw"] = token(j.value("algBw", json()));
    h.cols["busbw"] = token(j.value("busBw", json()));
    h.cols["#wrong"] = token(j.value("#wrong", json()));
    s.last_row_line = ln;
  }
  std::vector<Section> out;
  for (const auto &n : order)
    out.push_back(std::move(by_name[n]));
  if (out.empty())
    diag.fail(1, "", "JSON input holds no nccl-tests results (expected nccl-tests -J output or "
                     "rccl-tests JSON lines)");
  (void)tool_version;
  return out;
}

} // namespace scalefit::ingest::detail
