#include "record_json.h"

#include <string>

#include "base64.h"

namespace idem {

bool IsReplay(const OpResult& r) { return r.outcome == Outcome::kCompleted; }

void WriteBytesJson(std::string_view name, std::string_view bytes, JsonWriter& j) {
  if (IsValidUtf8(bytes)) {
    j.Key(name);
    j.String(bytes);
  } else {
    j.Key(std::string(name) + "_b64");
    j.String(Base64Encode(bytes));
  }
}

size_t BytesJsonSize(std::string_view name, std::string_view bytes) {
  if (IsValidUtf8(bytes)) return JsonQuotedSize(name) + 1 + JsonQuotedSize(bytes);
  // NAME_b64 (name and suffix need no escapes: callers' names are plain ASCII) and base64's
  // 4 characters per 3 bytes, padded, quoted.
  return JsonQuotedSize(name) + 4 + 1 + 2 + 4 * ((bytes.size() + 2) / 3);
}

void WriteRecordJson(const Record& r, JsonWriter& j) {
  j.BeginObject();
  j.Key("kind");
  j.String(RecordKindName(r.kind));
  j.Key("status");
  j.String(r.status);
  j.Key("version");
  j.Uint(r.version);
  j.Key("fence");
  j.Uint(r.fence);
  WriteBytesJson("fingerprint", r.fingerprint, j);
  WriteBytesJson("payload", r.payload, j);
  j.Key("owner");
  j.String(r.owner);
  j.Key("created_ms");
  j.Int(r.created_ms);
  j.Key("updated_ms");
  j.Int(r.updated_ms);
  j.Key("expires_at_ms");
  j.Int(r.expires_at_ms);
  j.Key("lease_until_ms");
  j.Int(r.lease_until_ms);
  j.EndObject();
}

void WriteOpResultJson(const OpResult& r, JsonWriter& j) {
  j.BeginObject();
  j.Key("outcome");
  j.String(OutcomeName(r.outcome));
  if (r.outcome == Outcome::kExists || r.outcome == Outcome::kMismatch ||
      r.outcome == Outcome::kExpired) {
    j.Key("fingerprint_matches");
    j.Bool(r.fingerprint_matches);
  }
  if (!r.token.empty()) {
    j.Key("token");
    j.String(r.token);
  }
  if (IsReplay(r)) {
    j.Key("replay");
    j.Bool(true);
  }
  if (r.record) {
    j.Key("record");
    WriteRecordJson(*r.record, j);
  }
  j.EndObject();
}

void WriteStatusJson(const Status& status, JsonWriter& j) {
  j.BeginObject();
  j.Key("code");
  j.String(CodeName(status.code()));
  j.Key("message");
  j.String(status.message());
  j.EndObject();
}

}  // namespace idem
