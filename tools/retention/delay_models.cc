#include "delay_models.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace idem::retention {
namespace {

struct ParamField {
  const char* name;
  double ModelParams::*field;
  const char* unit;  // "ms" for durations (printed as such), "" otherwise
};

// Which parameters each model reads, in the order --help lists them.
std::vector<ParamField> FieldsOf(DelayModel model) {
  std::vector<ParamField> fields = {{"dup_prob", &ModelParams::dup_prob, ""},
                                    {"again_prob", &ModelParams::again_prob, ""},
                                    {"max_dups", &ModelParams::max_dups, ""}};
  switch (model) {
    case DelayModel::kRetry:
      fields.push_back({"base_ms", &ModelParams::base_ms, "ms"});
      fields.push_back({"factor", &ModelParams::factor, ""});
      fields.push_back({"cap_ms", &ModelParams::cap_ms, "ms"});
      break;
    case DelayModel::kRedelivery:
      fields.push_back({"visibility_ms", &ModelParams::visibility_ms, "ms"});
      fields.push_back({"poll_ms", &ModelParams::poll_ms, "ms"});
      fields.push_back({"redrive_prob", &ModelParams::redrive_prob, ""});
      fields.push_back({"redrive_min_ms", &ModelParams::redrive_min_ms, "ms"});
      fields.push_back({"redrive_max_ms", &ModelParams::redrive_max_ms, "ms"});
      break;
    case DelayModel::kCallbacks:
      break;
    case DelayModel::kHuman:
      fields.push_back({"median_ms", &ModelParams::median_ms, "ms"});
      fields.push_back({"sigma", &ModelParams::sigma, ""});
      break;
  }
  return fields;
}

// The truncated geometric count shared by every model.
int DrawCount(const ModelParams& p, Random& random) {
  if (!random.Bernoulli(p.dup_prob)) return 0;
  const int max = static_cast<int>(p.max_dups);
  int n = 1;
  while (n < max && random.Bernoulli(p.again_prob)) ++n;
  return n;
}

}  // namespace

std::string_view ModelName(DelayModel model) {
  switch (model) {
    case DelayModel::kRetry:
      return "retry";
    case DelayModel::kRedelivery:
      return "redelivery";
    case DelayModel::kCallbacks:
      return "callbacks";
    case DelayModel::kHuman:
      return "human";
  }
  return "?";
}

std::optional<DelayModel> ParseModel(std::string_view name) {
  for (DelayModel m : kAllModels) {
    if (ModelName(m) == name) return m;
  }
  return std::nullopt;
}

ModelParams ModelParams::Defaults(DelayModel model) {
  ModelParams p;
  switch (model) {
    case DelayModel::kRetry:
      // An SDK or job runner retrying a timed-out call: 1s, 3s, 9s, ... capped at 6h, full jitter.
      p.dup_prob = 0.3;
      p.again_prob = 0.5;
      p.max_dups = 10;
      p.base_ms = 1000;
      p.factor = 3;
      p.cap_ms = 6.0 * 3600 * 1000;
      break;
    case DelayModel::kRedelivery:
      // A worker that dies or overruns a 10 min visibility timeout; 5 receives, then the DLQ.
      p.dup_prob = 0.2;
      p.again_prob = 0.3;
      p.max_dups = 5;
      p.visibility_ms = 10.0 * 60 * 1000;
      p.poll_ms = 20'000;
      p.redrive_prob = 0.5;
      p.redrive_min_ms = 1.0 * 3600 * 1000;
      p.redrive_max_ms = 24.0 * 3600 * 1000;
      break;
    case DelayModel::kCallbacks:
      // The provider re-sends while it gets no 2xx; a receiver that is down tends to stay down.
      p.dup_prob = 0.3;
      p.again_prob = 0.7;
      p.max_dups = static_cast<double>(kCallbackSteps.size());
      break;
    case DelayModel::kHuman:
      // Median 20 min, p99 about 11h: most people retry soon, a few come back the next day.
      p.dup_prob = 0.2;
      p.again_prob = 0.3;
      p.max_dups = 5;
      p.median_ms = 20.0 * 60 * 1000;
      p.sigma = 1.5;
      break;
  }
  return p;
}

ModelParamSet::ModelParamSet() {
  for (DelayModel m : kAllModels) params_[static_cast<size_t>(m)] = ModelParams::Defaults(m);
}

Status ModelParamSet::Set(std::string_view assignment) {
  const size_t dot = assignment.find('.');
  const size_t eq = assignment.find('=');
  if (dot == std::string_view::npos || eq == std::string_view::npos || eq < dot) {
    return Status::InvalidArgument("bad model parameter '" + std::string(assignment) +
                                   "': expected MODEL.NAME=VALUE, e.g. callbacks.again_prob=0.5");
  }
  const std::string_view model_name = assignment.substr(0, dot);
  const std::string_view name = assignment.substr(dot + 1, eq - dot - 1);
  const std::string_view value_text = assignment.substr(eq + 1);
  auto model = ParseModel(model_name);
  if (!model) {
    return Status::InvalidArgument("unknown model '" + std::string(model_name) +
                                   "' (models: retry, redelivery, callbacks, human)");
  }
  double value = 0;
  auto [end, ec] = std::from_chars(value_text.data(), value_text.data() + value_text.size(), value);
  if (ec != std::errc() || end != value_text.data() + value_text.size() || !std::isfinite(value) ||
      value < 0) {
    return Status::InvalidArgument("bad value '" + std::string(value_text) + "' for " +
                                   std::string(model_name) + "." + std::string(name) +
                                   ": expected a non-negative number");
  }
  for (const ParamField& f : FieldsOf(*model)) {
    if (name != f.name) continue;
    const bool probability = name == "dup_prob" || name == "again_prob" || name == "redrive_prob";
    if (probability && value > 1) {
      return Status::InvalidArgument(std::string(model_name) + "." + std::string(name) +
                                     " is a probability: 0..1");
    }
    if (name == "max_dups" && (value < 1 || value != std::floor(value) ||
                               (*model == DelayModel::kCallbacks &&
                                value > static_cast<double>(kCallbackSteps.size())))) {
      return Status::InvalidArgument(std::string(model_name) +
                                     ".max_dups must be a whole number >= 1 (callbacks: <= 11)");
    }
    params_[static_cast<size_t>(*model)].*f.field = value;
    return Status::Ok();
  }
  std::string known;
  for (const auto& n : ParamNames(*model)) known += (known.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("unknown parameter '" + std::string(name) + "' of model " +
                                 std::string(model_name) + " (known: " + known + ")");
}

std::vector<std::string> ModelParamSet::ParamNames(DelayModel model) {
  std::vector<std::string> names;
  for (const ParamField& f : FieldsOf(model)) names.emplace_back(f.name);
  return names;
}

std::string ModelParamSet::Describe(DelayModel model) const {
  std::string out;
  const ModelParams& p = Get(model);
  for (const ParamField& f : FieldsOf(model)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", p.*f.field);
    out += (out.empty() ? "" : " ") + std::string(f.name) + "=" + buf;
  }
  return out;
}

void DrawDuplicateDelays(DelayModel model, const ModelParams& p, Random& random,
                         std::vector<int64_t>* out) {
  out->clear();
  const int n = DrawCount(p, random);
  if (n == 0) return;
  // Every delay is at least 1 ms: a duplicate is never simultaneous with its first arrival.
  auto ms = [](double v) { return std::max<int64_t>(1, static_cast<int64_t>(std::llround(v))); };
  switch (model) {
    case DelayModel::kRetry: {
      double t = 0;
      double backoff = p.base_ms;
      for (int k = 0; k < n; ++k) {
        t += random.Uniform() * std::min(backoff, p.cap_ms);
        backoff *= p.factor;
        out->push_back(std::max(ms(t), out->empty() ? 1 : out->back() + 1));
      }
      break;
    }
    case DelayModel::kRedelivery: {
      for (int k = 1; k <= n; ++k) {
        out->push_back(ms(k * p.visibility_ms + random.Uniform() * p.poll_ms));
      }
      if (n == static_cast<int>(p.max_dups) && random.Bernoulli(p.redrive_prob)) {
        out->push_back(
            ms(n * p.visibility_ms + random.Uniform(p.redrive_min_ms, p.redrive_max_ms)));
      }
      break;
    }
    case DelayModel::kCallbacks: {
      int64_t t = 0;
      for (int k = 0; k < n; ++k) {
        t += kCallbackSteps[static_cast<size_t>(k)];
        out->push_back(t);
      }
      break;
    }
    case DelayModel::kHuman: {
      const double mu = std::log(p.median_ms);
      for (int k = 0; k < n; ++k) out->push_back(ms(random.LogNormal(mu, p.sigma)));
      break;
    }
  }
  // Only a user-set poll_ms > visibility_ms or a short redrive could reorder them.
  std::sort(out->begin(), out->end());
}

}  // namespace idem::retention
