// Reading the report's inputs: comm and kernels JSONL, fit files, estimate JSON.
#include "scalefit/core/error.hpp"
#include "scalefit/core/jsonl.hpp"
#include "scalefit/report/report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace scalefit::report {
namespace {

namespace fs = std::filesystem;

/// The "schema" of the first non-blank line of a JSONL file.
std::string first_schema(const std::string &path) {
  std::string schema;
  bool any = false;
  for_each_json_line(path, [&](const nlohmann::json &j, long n) {
    if (!j.contains("schema") || !j["schema"].is_string())
      throw InputError("the first record has no \"schema\" (expected a context record)", path, n,
                       "schema");
    schema = j["schema"].get<std::string>();
    any = true;
    return false;
  });
  if (!any)
    throw InputError("file is empty", path);
  return schema;
}

/// A finite number field of a kernel record.
double number(const nlohmann::json &j, const char *field, const std::string &path, long line) {
  if (!j.contains(field) || !j[field].is_number())
    throw InputError("missing or non-numeric field", path, line, field);
  const double v = j[field].get<double>();
  if (!std::isfinite(v) || v < 0)
    throw InputError("expected a finite non-negative number", path, line, field);
  return v;
}

} // namespace

KernelsFile read_kernels_file(const std::string &path) {
  KernelsFile f;
  f.path = path;
  for_each_json_line(path, [&](const nlohmann::json &j, long n) {
    const std::string type =
        j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
    if (type == "context") {
      // The fields the report prints as text (write.cpp): strings or absent, never a type_error
      // later (exit 3 naming no file).
      for (const char *field : {"system", "device", "library", "command_line"})
        if (j.contains(field) && !j[field].is_string())
          throw InputError("expected a string", path, n, field);
      if (f.context.is_null())
        f.context = j;
    } else if (type == "kernel") {
      if (f.context.is_null())
        throw InputError("kernel record before any context record", path, n, "type");
      if (!j.contains("name") || !j["name"].is_string())
        throw InputError("missing field", path, n, "name");
      for (const char *field : {"m", "n", "k", "batch", "flops", "time_us", "tflops"})
        (void)number(j, field, path, n);
      if (!(j["time_us"].get<double>() > 0))
        throw InputError("expected a positive time", path, n, "time_us");
      f.kernels.push_back(j);
    } else {
      throw InputError("unknown record type '" + type + "' (expected context or kernel)", path, n,
                       "type");
    }
    return true;
  });
  if (f.kernels.empty())
    throw InputError("no kernel records", path);
  return f;
}

Inputs load_inputs(const std::vector<std::string> &results, const std::vector<std::string> &fits,
                   const std::vector<std::string> &estimates) {
  if (results.empty() && fits.empty() && estimates.empty())
    throw InputError("nothing to report: give JSONL results, --fit or --estimate files");
  Inputs in;
  for (const std::string &f : expand_jsonl_inputs(results)) {
    const std::string schema = first_schema(f);
    if (schema.rfind("scalefit.comm/", 0) == 0) {
      in.comm_files.push_back(f);
      in.comm.push_back(read_records(f));
    } else if (schema.rfind("scalefit.kernels/", 0) == 0) {
      in.kernels.push_back(read_kernels_file(f));
    } else {
      throw InputError("unknown schema '" + schema +
                           "' (expected scalefit.comm/1 or scalefit.kernels/1)",
                       f, 1, "schema");
    }
  }
  for (const std::string &f : fits)
    in.fits.push_back(fitting::load_fit_file(f));
  for (const std::string &f : estimates) {
    std::ifstream is(f);
    if (!is)
      throw InputError("cannot open file", f);
    EstimateInput e;
    e.path = f;
    try {
      e.doc = nlohmann::json::parse(is);
    } catch (const nlohmann::json::exception &ex) {
      throw InputError(std::string("malformed JSON: ") + ex.what(), f);
    }
    if (e.doc.is_object() && e.doc.contains("top") && e.doc["top"].is_array())
      e.kind = "search";
    else if (e.doc.is_object() && e.doc.contains("a") && e.doc.contains("b"))
      e.kind = "compare";
    else if (e.doc.is_object() && e.doc.contains("time_s") && e.doc.contains("memory_gib"))
      e.kind = "estimate";
    else if (e.doc.is_array()) // scalefit validate --json: one object per published run
      e.kind = "validate";
    else
      throw InputError("not the JSON of scalefit estimate, search, compare or validate --json "
                       "(expected \"time_s\", \"top\", \"a\" and \"b\", or an array of runs)",
                       f);
    in.estimates.push_back(std::move(e));
  }
  return in;
}

} // namespace scalefit::report
