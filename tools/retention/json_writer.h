// JsonWriter: builds JSON text with commas and string escaping handled, no dependency.
//
//   JsonWriter j;
//   j.BeginObject(); j.Key("name"); j.String("24h/reclaim"); j.EndObject();
//   std::string text = j.Take();
//
// The caller keeps the structure balanced (asserted in debug builds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idem::retention {

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
  std::string Take() { return std::move(out_) + "\n"; }

 private:
  void Open(char c);
  void Close(char c);
  void BeforeValue();
  void Escaped(std::string_view s);

  std::string out_;
  std::vector<bool> has_items_;  // per open container: whether it holds an item yet
  bool after_key_ = false;
};

}  // namespace idem::retention
