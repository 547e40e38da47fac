/// \file yaml.hpp
/// The one YAML reader under scalefit's YAML files (system, model and fit files): yaml-cpp, plus
/// the checks yaml-cpp does not make.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>

namespace scalefit {

/// Parses `text` (the contents of the file called `name`) into a YAML tree whose top level is a
/// mapping.
///
/// Errors (InputError naming `name`, the line and, where there is one, the field): invalid UTF-8;
/// invalid YAML (yaml-cpp's message and mark); a top level that is not a mapping; a key given
/// twice in one mapping, block or flow style (YAML 1.2 requires unique keys; yaml-cpp keeps both
/// and a lookup would silently take one), named with the line of its first occurrence; mappings
/// nested deeper than 64 levels or more than 1e6 nodes reached through aliases.
YAML::Node parse_yaml(const std::string &text, const std::string &name);

/// Reads the file at `path` and parses it as parse_yaml() does. Errors: as parse_yaml(), and an
/// InputError when the file cannot be opened.
YAML::Node load_yaml_file(const std::string &path);

/// The 1-based line of `node` in its document, or 0 for a node without a position (built in code,
/// or absent). What every InputError about a YAML field names.
long line_of(const YAML::Node &node);

/// Refuses a key of the mapping `map` that is not in `known` (a misspelled `loo_mape_pct` would
/// otherwise read as absent: NaN in a report). \throws InputError naming `file`, the key's line
/// and the field `path` + key, with the known keys. A `map` that is not a mapping passes.
void require_known_keys(const YAML::Node &map, std::initializer_list<const char *> known,
                        const std::string &file, const std::string &path);

} // namespace scalefit
