// Declarative config sections: each key of a section is declared once, with
// its type, allowed values, documentation and how it is read into the struct
// the section fills. The same declarations drive the parser (config.cc,
// table_schema.cc) and the generated config reference (ConfigReference()),
// so the two cannot disagree.
//
// Keys are read in declaration order, so a key's reader may look at keys
// declared before it (e.g. "hidden" is only allowed when "model" is mlp).
//
// Thread safety: plain values.
#ifndef PS_COMMON_CONFIG_SCHEMA_H_
#define PS_COMMON_CONFIG_SCHEMA_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_doc.h"
#include "common/yaml_reader.h"

namespace ps {

template <class T>
struct ConfigKey {
  std::string name;
  std::string type;
  std::string allowed;
  std::string doc;
  // The default as text, shown from a default-constructed T; empty function
  // for required keys and keys without a meaningful default.
  std::function<std::string(const T&)> show;
  // Reads the field into *out; the earlier keys of the section are read.
  std::function<absl::Status(const YamlReader&, const YamlField&, T*)> read;

  // Required keys: absent while required_when(keys read so far) holds is
  // "missing required key; required: <required_text>". The reference
  // shows `required_doc` ("yes", "with consistency ssp", ...).
  std::function<bool(const T&)> required_when;
  std::string required_text;
  std::string required_doc;

  // Keys that only apply in some settings: present while applies(keys read
  // so far) is false is "<not_applicable(keys)>; <fix>" at the key.
  std::function<bool(const T&)> applies;
  std::function<std::string(const T&)> not_applicable;
  std::string fix;

  KeyDoc Document(const T& defaults) const {
    return KeyDoc{name, type, show ? show(defaults) : "", allowed, doc,
                  required_doc};
  }
};

template <class T>
using ConfigKeys = std::vector<ConfigKey<T>>;

// The names of `keys`, in order (a section's allowed keys).
template <class T>
std::vector<std::string> KeyNames(const ConfigKeys<T>& keys) {
  std::vector<std::string> names;
  for (const ConfigKey<T>& k : keys) names.push_back(k.name);
  return names;
}

// Reads every declared key present in `section` into *out, in declaration
// order; a missing required key is an error.
template <class T>
absl::Status ReadKeys(const YamlReader& reader, const YamlSection& section,
                      const ConfigKeys<T>& keys, T* out) {
  for (const ConfigKey<T>& key : keys) {
    const YamlField* field = section.Get(key.name);
    if (field == nullptr) {
      if (key.required_when && key.required_when(*out)) {
        return reader.Missing(section, key.name, key.required_text);
      }
      continue;
    }
    if (key.applies && !key.applies(*out)) {
      return reader.NotApplicable(*field, key.not_applicable(*out), key.fix);
    }
    if (absl::Status s = key.read(reader, *field, out); !s.ok()) return s;
  }
  return absl::OkStatus();
}

template <class T>
std::vector<KeyDoc> DocumentKeys(const ConfigKeys<T>& keys,
                                 const T& defaults = T()) {
  std::vector<KeyDoc> docs;
  for (const ConfigKey<T>& k : keys) docs.push_back(k.Document(defaults));
  return docs;
}

// A section: its keys, plus rules over several keys checked after they are
// all read (e.g. "tls.cert_file is required when tls.enabled is true").
template <class T>
struct SectionSpec {
  std::string doc;
  ConfigKeys<T> keys;
  std::function<absl::Status(const YamlReader&, const YamlSection&, const T&)>
      check;
};

// Reads the mapping `field` with `spec` into *out.
template <class T>
absl::Status ReadSection(const YamlReader& reader, const YamlField& field,
                         const SectionSpec<T>& spec, T* out) {
  absl::StatusOr<YamlSection> section =
      reader.OpenSection(field, KeyNames(spec.keys));
  if (!section.ok()) return section.status();
  if (absl::Status s = ReadKeys(reader, *section, spec.keys, out); !s.ok()) {
    return s;
  }
  return spec.check ? spec.check(reader, *section, *out) : absl::OkStatus();
}

template <class T>
SectionDoc DocumentSection(std::string path, const SectionSpec<T>& spec,
                           const T& defaults = T()) {
  return SectionDoc{std::move(path), spec.doc, DocumentKeys(spec.keys, defaults)};
}

// `key`, with check(reader, field, *out) run right after it is read.
template <class T>
ConfigKey<T> Then(ConfigKey<T> key,
                  std::function<absl::Status(const YamlReader&,
                                             const YamlField&, const T&)>
                      check) {
  auto read = std::move(key.read);
  key.read = [read, check](const YamlReader& r, const YamlField& f, T* out) {
    if (absl::Status s = read(r, f, out); !s.ok()) return s;
    return check(r, f, *out);
  };
  return key;
}

// ---------------------------------------------------------------------------
// Builders for the common shapes. `M` is the member's type.

template <class T, class M>
ConfigKey<T> IntKey(std::string name, M T::*member, int64_t lo, int64_t hi,
                    std::string allowed, std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "integer";
  k.allowed = allowed;
  k.doc = std::move(doc);
  k.show = [member](const T& t) { return absl::StrCat(t.*member); };
  k.read = [member, lo, hi, allowed](const YamlReader& r, const YamlField& f,
                                     T* out) {
    int64_t v = 0;
    if (absl::Status s = r.ReadInt64(f, lo, hi, allowed, &v); !s.ok()) return s;
    out->*member = static_cast<M>(v);
    return absl::OkStatus();
  };
  return k;
}

template <class T>
ConfigKey<T> Uint64Key(std::string name, uint64_t T::*member, std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "integer";
  k.allowed = "an integer in [0, 18446744073709551615]";
  k.doc = std::move(doc);
  k.show = [member](const T& t) { return absl::StrCat(t.*member); };
  k.read = [member](const YamlReader& r, const YamlField& f, T* out) {
    return r.ReadUint64(f, &(out->*member));
  };
  return k;
}

template <class T>
ConfigKey<T> FloatKey(std::string name, float T::*member,
                      std::function<bool(double)> ok, std::string allowed,
                      std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "number";
  k.allowed = allowed;
  k.doc = std::move(doc);
  k.show = [member](const T& t) { return absl::StrCat(t.*member); };
  k.read = [member, ok, allowed](const YamlReader& r, const YamlField& f,
                                 T* out) {
    return r.ReadFloat(f, ok, allowed, &(out->*member));
  };
  return k;
}

template <class T>
ConfigKey<T> BoolKey(std::string name, bool T::*member, std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "boolean";
  k.allowed = "true, false";
  k.doc = std::move(doc);
  k.show = [member](const T& t) { return t.*member ? "true" : "false"; };
  k.read = [member](const YamlReader& r, const YamlField& f, T* out) {
    return r.ReadBool(f, &(out->*member));
  };
  return k;
}

template <class T>
ConfigKey<T> StringKey(std::string name, std::string T::*member,
                       std::string allowed, std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "string";
  k.allowed = allowed;
  k.doc = std::move(doc);
  k.show = [member](const T& t) { return absl::StrCat("\"", t.*member, "\""); };
  k.read = [member, allowed](const YamlReader& r, const YamlField& f, T* out) {
    return r.ReadString(f, allowed, &(out->*member));
  };
  return k;
}

// A key whose value is one of `names`; `names[i]` stands for `values[i]`.
// `what` names the kind of thing in "unknown <what> 'x'".
template <class T, class E>
ConfigKey<T> NameKey(std::string name, E T::*member,
                     std::vector<std::string> names, std::vector<E> values,
                     std::string what, std::string doc) {
  ConfigKey<T> k;
  k.name = std::move(name);
  k.type = "string";
  k.allowed = absl::StrJoin(names, ", ");
  k.doc = std::move(doc);
  k.show = [member, names, values](const T& t) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] == t.*member) return names[i];
    }
    return std::string();
  };
  k.read = [member, names, values, what](const YamlReader& r,
                                         const YamlField& f, T* out) {
    std::string text;
    if (absl::Status s = r.ReadName(f, names, what, &text); !s.ok()) return s;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == text) out->*member = values[i];
    }
    return absl::OkStatus();
  };
  return k;
}

// `key`, required (in every setting, or while `when` holds).
template <class T>
ConfigKey<T> Required(ConfigKey<T> key, std::string required_text,
                      std::function<bool(const T&)> when = nullptr,
                      std::string required_doc = "yes") {
  key.required_when = when ? std::move(when) : [](const T&) { return true; };
  key.required_text = std::move(required_text);
  key.required_doc = std::move(required_doc);
  key.show = nullptr;
  return key;
}

// `key`, only accepted while applies(keys read before it) holds; otherwise
// "<problem(keys)>; <fix>" at the key.
template <class T>
ConfigKey<T> OnlyWhen(ConfigKey<T> key, std::function<bool(const T&)> applies,
                      std::function<std::string(const T&)> problem,
                      std::string fix) {
  key.applies = std::move(applies);
  key.not_applicable = std::move(problem);
  key.fix = std::move(fix);
  return key;
}

}  // namespace ps

#endif  // PS_COMMON_CONFIG_SCHEMA_H_
