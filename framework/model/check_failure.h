// check_failure.h: a failed check in student code (an Eigen check, a
// product's shapes) as fields, so that the driven mode's student process
// can send it (call_answer.h) and the harness, whose StudentScope knows the
// call and its arguments, words it as the in-process message is worded.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace dtrain {

struct CheckFailure {
  std::string what;    // what the check found: "a block (...) that reaches outside the matrix"
  std::string where;   // the student's line, "student/func_impl.cpp:28", or ""
  std::string source;  // that line's text, or ""
  std::string more;    // lines that follow: "\n  Eigen's check: ..."
};

// "Eigen check failed in F (called with ...) at student/x.cpp:N: <what>",
// then the line's text and `more`; F and its arguments are the student call
// this process is in (call_context.h).
std::string check_failure_text(const CheckFailure& f);

class StudentCheckFailed : public std::logic_error {
 public:
  explicit StudentCheckFailed(CheckFailure f) : std::logic_error(check_failure_text(f)), failure_(std::move(f)) {}
  const CheckFailure& failure() const { return failure_; }

 private:
  CheckFailure failure_;
};

}  // namespace dtrain
