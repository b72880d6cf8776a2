#include "http_ops.h"

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "base64.h"

namespace idem {
namespace {

using Json = nlohmann::json;

// What an op's decoded Ops borrow: the parsed document and the bytes decoded from it.
struct OpsOwner {
  Json doc;
  std::deque<std::string> bytes;  // base64-decoded fields, path segments; never reallocated
};

// A field's JSON type, and how its value is read.
enum class Kind : uint8_t {
  kText,      // a string
  kBytes,     // a string, or NAME_b64: a base64 string
  kUint,      // a non-negative integer
  kMillis,    // an integer (milliseconds)
  kTextList,  // an array of strings
};

struct Value {
  std::string_view text;
  uint64_t uint = 0;
  int64_t millis = 0;
  std::vector<std::string_view> list;
};

struct Field {
  std::string_view name;
  Kind kind;
  void (*set)(Op& op, const Value& v);
};

struct OpSpec {
  OpType type;
  bool keyed;  // has a "key" (every op but token-issue; token-consume's is the token)
  std::vector<Field> fields;
};

// Fields several ops share, each writing the Op member the op's factory (idem/operation.h) does.
const Field kStatus{"status", Kind::kText, [](Op& op, const Value& v) { op.status = v.text; }};
const Field kPayload{"payload", Kind::kBytes, [](Op& op, const Value& v) { op.payload = v.text; }};
const Field kFingerprint{"fingerprint", Kind::kBytes,
                         [](Op& op, const Value& v) { op.fingerprint = v.text; }};
const Field kOwner{"owner", Kind::kText, [](Op& op, const Value& v) { op.owner = v.text; }};
const Field kTtl{"ttl_ms", Kind::kMillis,
                 [](Op& op, const Value& v) { op.ttl = Ttl(std::chrono::milliseconds(v.millis)); }};
const Field kLease{"lease_ms", Kind::kMillis,
                   [](Op& op, const Value& v) { op.lease = std::chrono::milliseconds(v.millis); }};
const Field kWait{"wait_ms", Kind::kMillis,
                  [](Op& op, const Value& v) { op.wait = std::chrono::milliseconds(v.millis); }};
const Field kFence{"fence", Kind::kUint,
                   [](Op& op, const Value& v) { op.condition.fence = v.uint; }};
const Field kExpectStatus{"expect_status", Kind::kTextList,
                          [](Op& op, const Value& v) { op.condition.status_in = v.list; }};
const Field kExpectVersion{"expect_version", Kind::kUint,
                           [](Op& op, const Value& v) { op.condition.version = v.uint; }};
const Field kExpectFence{"expect_fence", Kind::kUint,
                         [](Op& op, const Value& v) { op.condition.fence = v.uint; }};
// CompareAndSet's and Transition's changes go to Op::update.
const Field kNewStatus{"status", Kind::kText,
                       [](Op& op, const Value& v) { op.update.status = v.text; }};
const Field kNewPayload{"payload", Kind::kBytes,
                        [](Op& op, const Value& v) { op.update.payload = v.text; }};
const Field kNewTtl{"ttl_ms", Kind::kMillis, [](Op& op, const Value& v) {
                      op.update.ttl = Ttl(std::chrono::milliseconds(v.millis));
                    }};

// The table: one row per operation (OpTypeName gives the "op" name).
const std::vector<OpSpec>& Specs() {
  static const std::vector<OpSpec> specs = {
      {OpType::kInsert, true, {kStatus, kPayload, kFingerprint, kTtl}},
      {OpType::kGet, true, {}},
      {OpType::kCompareAndSet,
       true,
       {kExpectStatus, kExpectVersion, kExpectFence, kNewStatus, kNewPayload, kNewTtl}},
      {OpType::kDelete, true, {kExpectStatus, kExpectVersion, kExpectFence}},
      {OpType::kBegin, true, {kFingerprint, kOwner, kLease, kWait, kTtl}},
      {OpType::kComplete, true, {kFence, kPayload, kStatus, kTtl}},
      {OpType::kAbort, true, {kFence, kPayload}},
      {OpType::kHeartbeat, true, {kFence, kLease}},
      {OpType::kCheckpoint, true, {kFence, kPayload}},
      {OpType::kIssueToken, false, {kTtl, kPayload}},
      {OpType::kConsumeToken, true, {}},
      {OpType::kLock, true, {kOwner, kLease, kWait}},
      {OpType::kRenew, true, {kFence, kLease}},
      {OpType::kUnlock, true, {kFence}},
      // The status the record moves to is "status", as for every op that sets one.
      {OpType::kTransition, true, {kStatus, kExpectVersion, kNewPayload}},
  };
  return specs;
}

const OpSpec* FindSpec(std::string_view name) {
  for (const OpSpec& spec : Specs()) {
    if (OpTypeName(spec.type) == name) return &spec;
  }
  return nullptr;
}

std::string OpNames() {
  std::string names;
  for (const OpSpec& spec : Specs()) {
    if (!names.empty()) names += ", ";
    names += OpTypeName(spec.type);
  }
  return names;
}

constexpr std::string_view kB64 = "_b64";

Status Bad(std::string_view where, std::string_view what) {
  return Status::InvalidArgument(std::string(where) + ": " + std::string(what));
}

std::string_view TypeName(const Json& v) { return v.type_name(); }

// Reads `v` as `field` wants it into *out. `base64`: the value is NAME_b64's.
Status ReadValue(const std::string& where, const Field& field, const Json& v, bool base64,
                 OpsOwner& owner, Value* out) {
  switch (field.kind) {
    case Kind::kText:
    case Kind::kBytes: {
      if (!v.is_string()) {
        return Bad(where, "expected a string, got " + std::string(TypeName(v)));
      }
      const std::string& s = v.get_ref<const std::string&>();
      if (!base64) {
        out->text = s;
        return Status::Ok();
      }
      Result<std::string> bytes = Base64Decode(s);
      if (!bytes.ok()) return Bad(where, bytes.status().message());
      out->text = owner.bytes.emplace_back(std::move(*bytes));
      return Status::Ok();
    }
    case Kind::kUint:
      if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned())) {
        return Bad(where, "expected a non-negative integer, got " +
                              (v.is_number_integer() ? v.dump() : std::string(TypeName(v))));
      }
      out->uint = v.get<uint64_t>();
      return Status::Ok();
    case Kind::kMillis:
      if (!v.is_number_integer()) {
        return Bad(where, "expected an integer (milliseconds), got " +
                              (v.is_number() ? v.dump() : std::string(TypeName(v))));
      }
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Bad(where, "milliseconds " + v.dump() + " out of range");
      }
      out->millis = v.get<int64_t>();
      return Status::Ok();
    case Kind::kTextList:
      if (!v.is_array()) {
        return Bad(where, "expected an array of strings, got " + std::string(TypeName(v)));
      }
      out->list.reserve(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          return Bad(where + "[" + std::to_string(i) + "]",
                     "expected a string, got " + std::string(TypeName(v[i])));
        }
        out->list.push_back(v[i].get_ref<const std::string&>());
      }
      return Status::Ok();
  }
  return Bad(where, "unreadable");
}

// Applies every member of `fields` (a JSON object) to `op` by `spec`'s table. Members named in
// `taken` were read by the caller.
Status ReadFields(const std::string& where, const OpSpec& spec, const Json& fields,
                  std::initializer_list<std::string_view> taken, OpsOwner& owner, Op* op) {
  // A byte field given both as text and as base64 is refused: which one was meant is unknown.
  for (const Field& f : spec.fields) {
    if (f.kind == Kind::kBytes && fields.contains(f.name) &&
        fields.contains(std::string(f.name) + std::string(kB64))) {
      return Bad(where, "\"" + std::string(f.name) + "\" and \"" + std::string(f.name) +
                            std::string(kB64) + "\" both given; give one");
    }
  }
  for (const auto& [name, value] : fields.items()) {
    bool is_taken = false;
    for (std::string_view t : taken) is_taken = is_taken || name == t;
    if (is_taken) continue;
    std::string_view base = name;
    const bool base64 = base.ends_with(kB64);
    if (base64) base.remove_suffix(kB64.size());
    const Field* field = nullptr;
    for (const Field& f : spec.fields) {
      if (f.name == base && (!base64 || f.kind == Kind::kBytes)) field = &f;
    }
    if (field == nullptr) {
      std::string known;
      for (const Field& f : spec.fields) {
        known += (known.empty() ? "" : ", ") + std::string(f.name);
        if (f.kind == Kind::kBytes) known += ", " + std::string(f.name) + std::string(kB64);
      }
      return Bad(where, "unknown field \"" + name + "\" for op " +
                            std::string(OpTypeName(spec.type)) + " (it takes " +
                            (known.empty() ? "no other fields" : known) + ")");
    }
    Value v;
    if (Status s = ReadValue(where + "." + name, *field, value, base64, owner, &v); !s.ok()) {
      return s;
    }
    field->set(*op, v);
  }
  return Status::Ok();
}

// The key of a keyed op: "key" (text) or "key_b64" (bytes), exactly one.
Status ReadKey(const std::string& where, const Json& fields, OpsOwner& owner,
               std::string_view* key) {
  const bool text = fields.contains("key"), b64 = fields.contains("key_b64");
  if (text == b64) {
    return Bad(where, text ? "\"key\" and \"key_b64\" both given; give one"
                           : "\"key\" (or \"key_b64\") is required");
  }
  static const Field kKey{"key", Kind::kBytes, nullptr};
  Value v;
  if (Status s = ReadValue(where + (b64 ? ".key_b64" : ".key"), kKey,
                           fields[b64 ? "key_b64" : "key"], b64, owner, &v);
      !s.ok()) {
    return s;
  }
  *key = v.text;
  return Status::Ok();
}

Result<Op> DecodeOneOp(const std::string& where, const Json& j, OpsOwner& owner) {
  if (!j.is_object()) return Bad(where, "expected an object, got " + std::string(TypeName(j)));
  auto name = j.find("op");
  if (name == j.end() || !name->is_string()) {
    return Bad(where, "\"op\" (a string) is required: one of " + OpNames());
  }
  const OpSpec* spec = FindSpec(name->get_ref<const std::string&>());
  if (spec == nullptr) {
    return Bad(where + ".op",
               "unknown op \"" + name->get<std::string>() + "\": one of " + OpNames());
  }
  Op op;
  op.type = spec->type;
  auto ns = j.find("namespace");
  if (ns == j.end() || !ns->is_string()) {
    return Bad(where, "\"namespace\" (a string) is required");
  }
  op.ns = ns->get_ref<const std::string&>();
  if (spec->keyed) {
    if (Status s = ReadKey(where, j, owner, &op.key); !s.ok()) return s;
  }
  if (Status s = ReadFields(where, *spec, j, {"op", "namespace", "key", "key_b64"}, owner, &op);
      !s.ok()) {
    return s;
  }
  if (!spec->keyed && (j.contains("key") || j.contains("key_b64"))) {
    return Bad(where, "op " + std::string(OpTypeName(spec->type)) + " takes no key");
  }
  return op;
}

Status TooManyOps(std::string_view count, const Limits& limits) {
  return Status::InvalidArgument("request has " + std::string(count) +
                                 " operations; max_batch_ops is " +
                                 std::to_string(limits.max_batch_ops));
}

// How deep the schema's containers go: an apply body is {"ops":[{..., "list":[...]}]}
// (containers at depths 0..3), a route's body {..., "list":[...]} (0..1).
constexpr int kApplyBodyDepth = 3;
constexpr int kRouteBodyDepth = 1;

// Thrown by the parser callback to stop parsing at once (discarding instead would still read
// the rest, and nlohmann rescans a container per discarded element).
struct ParseRefused {
  Status status;
};

// Parses `body`, bounded while it is parsed (on the I/O thread, before any document is built
// whole): a container nested deeper than `max_depth` is refused, and so is a top-level "ops"
// array of more than `limits->max_batch_ops` elements (null `limits`: no count), so a body of
// millions of ops costs a stopped parse, not a document.
Result<Json> Parse(std::string_view body, int max_depth, const Limits* limits = nullptr) {
  bool in_ops = false;
  size_t ops = 0;
  auto bound = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::key:
        if (depth == 1) in_ops = parsed == "ops";
        return true;
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth > max_depth) {
          throw ParseRefused{Status::InvalidArgument(
              "body nests deeper than the operations' schema (" + std::to_string(max_depth + 1) +
              " levels of objects and arrays)")};
        }
        [[fallthrough]];
      case Json::parse_event_t::value:
        if (limits != nullptr && depth == 2 && in_ops && ++ops > limits->max_batch_ops) {
          throw ParseRefused{
              TooManyOps("more than " + std::to_string(limits->max_batch_ops), *limits)};
        }
        return true;
      default:
        return true;
    }
  };
  try {
    Json doc = Json::parse(body, bound, /*allow_exceptions=*/false);
    if (!doc.is_discarded()) return doc;
    // The parser's position is only reported through exceptions; one parse more, for the
    // message, happens on bad input only.
    Json ignored = Json::parse(body, bound);
    (void)ignored;
  } catch (const ParseRefused& refused) {
    return refused.status;
  } catch (const Json::parse_error& e) {
    return Status::InvalidArgument(std::string("body is not JSON: ") + e.what());
  }
  return Status::InvalidArgument("body is not JSON");
}

}  // namespace

Status DecodeApplyBody(std::string_view body, const Limits& limits, DecodedOps* out) {
  auto owner = std::make_shared<OpsOwner>();
  Result<Json> doc = Parse(body, kApplyBodyDepth, &limits);
  if (!doc.ok()) return doc.status();
  owner->doc = std::move(*doc);
  const Json& root = owner->doc;
  if (!root.is_object()) {
    return Status::InvalidArgument("body: expected an object {\"ops\":[...]}, got " +
                                   std::string(TypeName(root)));
  }
  for (const auto& [name, value] : root.items()) {
    if (name != "ops") return Bad("body", "unknown field \"" + name + "\" (it takes \"ops\")");
  }
  auto ops = root.find("ops");
  if (ops == root.end() || !ops->is_array()) {
    return Bad("body", "\"ops\" (an array of operations) is required");
  }
  if (ops->size() > limits.max_batch_ops) return TooManyOps(std::to_string(ops->size()), limits);
  DecodedOps decoded;
  decoded.ops.reserve(ops->size());
  for (size_t i = 0; i < ops->size(); ++i) {
    Result<Op> op = DecodeOneOp("ops[" + std::to_string(i) + "]", (*ops)[i], *owner);
    if (!op.ok()) return op.status();
    decoded.Add(std::move(*op));
  }
  decoded.owner = std::move(owner);
  decoded.received = out->received;
  *out = std::move(decoded);
  return Status::Ok();
}

Status DecodeRouteOp(std::string_view op_name, std::string ns, std::optional<std::string> key,
                     std::string_view body, DecodedOps* out) {
  const OpSpec* spec = FindSpec(op_name);
  if (spec == nullptr) return Status::InvalidArgument("unknown op " + std::string(op_name));
  auto owner = std::make_shared<OpsOwner>();
  if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    Result<Json> doc = Parse(body, kRouteBodyDepth);
    if (!doc.ok()) return doc.status();
    owner->doc = std::move(*doc);
    if (!owner->doc.is_object()) {
      return Status::InvalidArgument("body: expected an object of the op's fields, got " +
                                     std::string(TypeName(owner->doc)));
    }
  } else {
    owner->doc = Json::object();
  }
  for (std::string_view path_field : {"op", "namespace", "key", "key_b64"}) {
    if (owner->doc.contains(path_field)) {
      return Bad("body", "\"" + std::string(path_field) + "\" is given by the path, not the body");
    }
  }
  Op op;
  op.type = spec->type;
  op.ns = owner->bytes.emplace_back(std::move(ns));
  if (key) op.key = owner->bytes.emplace_back(std::move(*key));
  if (Status s = ReadFields("body", *spec, owner->doc, {}, *owner, &op); !s.ok()) return s;
  DecodedOps decoded;
  decoded.Add(std::move(op));
  decoded.owner = std::move(owner);
  decoded.received = out->received;
  *out = std::move(decoded);
  return Status::Ok();
}

}  // namespace idem
