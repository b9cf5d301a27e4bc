// call_answer.h: what the driven mode's student process says with every
// answer, before the function's values (driven_student.cpp writes it,
// driven_harness.cpp reads it): the memory budget's first refusal during
// the call, which the harness then tells as the in-process harness does;
// how many of the framework's rules the call broke (a request destroyed
// unwaited), which fail the case as they do in one process; and, for the outcome
// CheckFailed, the failed check's fields. Typed values, never text the
// other side parses; a forged one can only fail the handin's own case.
#pragma once

#include <set>
#include <string>

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

// The framework's rules the call broke in the student's process: only one
// can be broken there (a Request destroyed before anyone waited for it), so
// they travel as a count, and the harness words them: no text of that
// process's reaches a message.
inline void put_rules(Writer& w, std::int64_t broken) { w.put(broken); }

inline std::int64_t get_rules(Reader& in) {
  const std::int64_t n = in.integer();
  if (n < 0) throw BadValues("rules broken out of range");
  return n;
}

inline std::string rules_text(std::int64_t broken) {
  return "a Request was destroyed before anyone waited for it" +
         (broken > 1 ? " (" + std::to_string(broken) + " in this call)" : std::string()) +
         "; call wait() on every request (or test() it until it returns true) before it goes away";
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
