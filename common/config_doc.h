// The config reference's shape: sections of documented keys, produced from
// the parsers' own declarations (config_schema.h) by ConfigReference().
//
// Plain data.
#ifndef PS_COMMON_CONFIG_DOC_H_
#define PS_COMMON_CONFIG_DOC_H_

#include <string>
#include <vector>

namespace ps {

struct KeyDoc {
  std::string name;
  std::string type;           // "integer", "number", "boolean", "string", ...
  std::string default_value;  // "" when the key is required or has none
  std::string allowed;        // e.g. "an integer in [1, 256]"
  std::string doc;            // what it does
  std::string required;       // "" (optional), "yes", or when it is required
};

// One section ("server", "tables[].optimizer (type: adam)", ...).
struct SectionDoc {
  std::string path;
  std::string doc;
  std::vector<KeyDoc> keys;
};

}  // namespace ps

#endif  // PS_COMMON_CONFIG_DOC_H_
