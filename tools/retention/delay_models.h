// Delay models: when the duplicates of one request arrive, as offsets from the first arrival.
//
// Every model draws the NUMBER of duplicates the same way: none with probability 1 - dup_prob;
// otherwise one, plus one more with probability again_prob each time, at most max_dups
// (a truncated geometric). The models differ in WHEN those duplicates come:
//
//   retry       client retry, exponential backoff with full jitter: the k-th retry waits
//               U(0, min(cap, base * factor^(k-1))) after the previous attempt (cumulative).
//   redelivery  queue redelivery: the k-th redelivery comes when the k-th visibility timeout
//               lapses, k * visibility + U(0, poll); a message that used all max_dups receives
//               is dead-lettered and, with probability redrive_prob, redriven once more after
//               U(redrive_min, redrive_max) (an operator replaying the DLQ hours later).
//   callbacks   a payment provider's callback schedule: the k-th re-send comes after the first
//               k steps of kCallbackSteps, which are PER-STEP intervals (15s, then 15s more,
//               then 30s more, ...; the 11th re-send is 25h04m after the first delivery).
//   human       "the user tries again later": each duplicate independently at
//               LogNormal(ln(median), sigma) after the first (heavy-tailed), sorted.
//
// docs/retention.md has the formulas, means and quantiles of the defaults.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/status.h"
#include "random.h"

namespace idem::retention {

enum class DelayModel : uint8_t { kRetry, kRedelivery, kCallbacks, kHuman };

inline constexpr std::array<DelayModel, 4> kAllModels = {
    DelayModel::kRetry, DelayModel::kRedelivery, DelayModel::kCallbacks, DelayModel::kHuman};

// Per-step intervals of the callback schedule, in milliseconds (see above).
inline constexpr std::array<int64_t, 11> kCallbackSteps = {
    15'000,    15'000,    30'000,    180'000,    600'000,   1'200'000,
    1'800'000, 3'600'000, 7'200'000, 21'600'000, 54'000'000};

std::string_view ModelName(DelayModel model);  // "retry", "redelivery", "callbacks", "human"
std::optional<DelayModel> ParseModel(std::string_view name);

// Every parameter of every model; a model reads only its own. Times are milliseconds.
// Settable from the command line as MODEL.NAME=VALUE (see SetModelParam).
struct ModelParams {
  double dup_prob = 0;    // a request has at least one duplicate
  double again_prob = 0;  // after a duplicate, another one follows
  double max_dups = 0;    // at most this many duplicates (redelivery: receives before DLQ)
  // retry
  double base_ms = 0, factor = 0, cap_ms = 0;
  // redelivery
  double visibility_ms = 0, poll_ms = 0, redrive_prob = 0, redrive_min_ms = 0, redrive_max_ms = 0;
  // human
  double median_ms = 0, sigma = 0;

  static ModelParams Defaults(DelayModel model);
};

// Parameters for every model, defaults first, overridable one by one.
class ModelParamSet {
 public:
  ModelParamSet();
  const ModelParams& Get(DelayModel model) const { return params_[static_cast<size_t>(model)]; }
  // "callbacks.again_prob=0.5". InvalidArgument names an unknown model/parameter or bad value.
  Status Set(std::string_view assignment);
  // "NAME=VALUE" pairs a model uses, for --help and the report.
  static std::vector<std::string> ParamNames(DelayModel model);
  std::string Describe(DelayModel model) const;  // "dup_prob=0.3 again_prob=0.7 ..."

 private:
  std::array<ModelParams, kAllModels.size()> params_;
};

// Appends the duplicates' delays (ms after the first arrival, > 0, ascending) to `out`
// (cleared first).
void DrawDuplicateDelays(DelayModel model, const ModelParams& params, Random& random,
                         std::vector<int64_t>* out);

}  // namespace idem::retention
