// JsonWriter: builds JSON text with commas and string escaping handled, no dependency.
//
//   JsonWriter j;
//   j.BeginObject(); j.Key("name"); j.String("24h/reclaim"); j.EndObject();
//   std::string text = j.Take();
//
// The caller keeps the structure balanced (asserted in debug builds). Shared by every tool that
// prints JSON (idemctl, idem-retention, idem-bench).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// `bytes` as a JSON string literal, quotes included. Valid UTF-8 is kept as is; control
// characters and bytes that are not valid UTF-8 become \u00XX, so the output is always valid
// JSON whatever the input (payloads and keys are opaque bytes).
std::string JsonQuote(std::string_view bytes);

// JsonQuote(bytes).size(), counted in one pass without building the text.
size_t JsonQuotedSize(std::string_view bytes);

// Whether `bytes` is valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points above
// U+10FFFF), i.e. text a JSON string carries exactly. Bytes that are not are printed as base64
// where they must survive (idemctl's payload_b64).
bool IsValidUtf8(std::string_view bytes);

class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key);
  void String(std::string_view value);
  void Int(int64_t value);
  void Uint(uint64_t value);
  void Double(double value);  // non-finite values become null
  void Bool(bool value);
  void Null();
  std::string Take() { return std::move(out_); }  // the text, without a trailing newline

 private:
  void Open(char c);
  void Close(char c);
  void BeforeValue();

  std::string out_;
  std::vector<bool> has_items_;  // per open container: whether it holds an item yet
  bool after_key_ = false;
};

}  // namespace idem
