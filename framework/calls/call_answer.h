// call_answer.h: what the driven mode's student process says with every
// answer, before the function's values (driven_student.cpp writes it,
// driven_harness.cpp reads it): the memory budget's first refusal during
// the call, which the harness then tells as the in-process harness does;
// the framework's rules the call broke (a request destroyed unwaited, say),
// each failing the case as it does in one process; and, for the outcome
// CheckFailed, the failed check's fields. Typed values, never text the
// other side parses; a forged one can only fail the handin's own case.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "call_values.h"
#include "check_failure.h"
#include "heap_watch.h"

namespace dtrain::calls {

inline void put_refusal(Writer& w, const heap_budget::Refusal& r) {
  w.put(r.happened);
  if (!r.happened) return;
  w.put(r.asked);
  w.put(r.held);
  w.put(r.by_system);
  w.text(r.function != nullptr ? r.function : "");
  w.text(r.rule != nullptr ? r.rule : "");
}

// A refusal's names live as long as the process, as the heap watch's do.
inline const char* kept_name(const std::string& s) {
  static std::set<std::string>& names = *new std::set<std::string>;
  if (names.size() > 256) return "(a student function)";  // the answers' names are the process's few
  return names.insert(s).first->c_str();
}

inline heap_budget::Refusal get_refusal(Reader& in) {
  heap_budget::Refusal r;
  r.happened = in.integer() != 0;
  if (!r.happened) return r;
  r.asked = in.integer();
  r.held = in.integer();
  r.by_system = in.integer() != 0;
  if (r.asked < 0 || r.held < 0) throw BadValues("a refusal's sizes out of range");
  r.function = kept_name(in.text());
  const std::string rule = in.text();
  r.rule = rule.empty() ? nullptr : kept_name(rule);
  return r;
}

// At most this many rules broken in one call travel, each cut to kMostRuleBytes.
inline constexpr std::size_t kMostRulesBroken = 4, kMostRuleBytes = 2000;

inline void put_rules(Writer& w, const std::vector<std::string>& broken) {
  w.put(static_cast<std::int64_t>(std::min(broken.size(), kMostRulesBroken)));
  for (std::size_t i = 0; i < broken.size() && i < kMostRulesBroken; ++i) w.text(broken[i].substr(0, kMostRuleBytes));
}

inline std::vector<std::string> get_rules(Reader& in) {
  const std::int64_t n = in.integer();
  if (n < 0 || n > static_cast<std::int64_t>(kMostRulesBroken)) throw BadValues("rules broken out of range");
  std::vector<std::string> broken;
  for (std::int64_t i = 0; i < n; ++i) broken.push_back(in.text().substr(0, kMostRuleBytes));
  return broken;
}

inline void put_check_failure(Writer& w, const CheckFailure& f) {
  for (const std::string* s : {&f.what, &f.where, &f.source, &f.more}) w.text(*s);
}

inline CheckFailure get_check_failure(Reader& in) {
  CheckFailure f;
  for (std::string* s : {&f.what, &f.where, &f.source, &f.more}) *s = in.text();
  return f;
}

}  // namespace dtrain::calls
