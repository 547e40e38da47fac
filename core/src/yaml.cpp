// YAML files: yaml-cpp's parse, then unique keys checked (yaml-cpp accepts duplicates).
#include "scalefit/core/yaml.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/validate.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace scalefit {

long line_of(const YAML::Node &n) {
  return n.Mark().is_null() ? 0 : n.Mark().line + 1;
}

namespace {

constexpr int kMaxDepth = 64;
constexpr long kMaxNodes = 1000000;

void check_unique_keys(const YAML::Node &node, const std::string &name, int depth, long &visited) {
  if (++visited > kMaxNodes)
    throw InputError("more than 1e6 YAML nodes (aliases expanding?)", name, line_of(node));
  if (depth > kMaxDepth)
    throw InputError("YAML nested deeper than 64 levels", name, line_of(node));
  if (node.IsSequence()) {
    for (const YAML::Node &item : node)
      check_unique_keys(item, name, depth + 1, visited);
  } else if (node.IsMap()) {
    std::map<std::string, long> seen;
    for (const auto &kv : node) {
      if (kv.first.IsScalar()) {
        const std::string key = kv.first.Scalar();
        const auto [it, fresh] = seen.emplace(key, line_of(kv.first));
        if (!fresh)
          throw InputError("key given twice in one mapping (first at line " +
                               std::to_string(it->second) + ")",
                           name, line_of(kv.first), key);
      }
      check_unique_keys(kv.second, name, depth + 1, visited);
    }
  }
}

} // namespace

YAML::Node parse_yaml(const std::string &text, const std::string &name) {
  require_utf8(text, name);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception &e) {
    throw InputError("invalid YAML: " + e.msg, name, e.mark.is_null() ? 0 : e.mark.line + 1);
  }
  if (!root.IsMap())
    throw InputError("expected a YAML mapping at the top level", name, 1);
  long visited = 0;
  check_unique_keys(root, name, 0, visited);
  return root;
}

void require_known_keys(const YAML::Node &map, std::initializer_list<const char *> known,
                        const std::string &file, const std::string &path) {
  if (!map.IsMap())
    return;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    bool ok = false;
    for (const char *k : known)
      ok = ok || key == k;
    if (ok)
      continue;
    std::string list;
    for (const char *k : known)
      list += (list.empty() ? "" : ", ") + std::string(k);
    const long line = it->first.Mark().is_null() ? 0 : it->first.Mark().line + 1;
    throw InputError("unknown key '" + key + "' (known here: " + list + ")", file, line,
                     path + key);
  }
}

YAML::Node load_yaml_file(const std::string &path) {
  return parse_yaml(*read_input(path), path);
}

} // namespace scalefit
