// The terminal report: the study's settings and one row per policy.
#pragma once

#include <string>

#include "study.h"

namespace idem::retention {

// Fixed-width text, columns explained in the footer (docs/retention.md "Reading the results").
std::string FormatTable(const Study& study);

}  // namespace idem::retention
