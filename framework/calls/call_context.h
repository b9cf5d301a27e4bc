// call_context.h: which student function is running, with its arguments'
// shapes, for every message that should name the student's code (an Eigen
// check, a size mismatch, a crash, a hung case's roll-call). Below tensor.h
// and comm.h: it knows no communicator. StudentScope (comm_runtime.h) sets it.
#pragma once

#include <cstdint>
#include <string>

namespace dtrain {

// A matrix argument of a student call, by parameter name, for messages.
struct ArgShape {
  const char* name;
  long rows, cols;
};

namespace ledger {

// The student function running now ("" outside student code), and its
// arguments' shapes as text: "x (2, 3), y (4, 1)".
std::string function_now();
std::string arguments_now();
// The same name for a signal handler (no allocation); nullptr outside student code.
const char* function_now_signal_safe();
// A number that changes with every call into student code: two events with
// the same number happened in one call.
std::uint64_t student_call_serial();
// The student function an exception last left (the innermost one), and the
// arguments it had; empty if none since the last call. Reading it clears it.
std::string take_thrown_from();

// A function's name as a number that is the same on every rank (the ranks
// compare it when they agree on a collective), and back: a name this rank
// has entered, or "" for one it never ran.
std::int64_t function_id(const char* name);
std::string function_name(std::int64_t id);

}  // namespace ledger

// The driven mode's student process (driven_student.cpp), while it carries
// out a call: the function it runs, for the heap budget (which refuses
// only inside student code) and for a check's message. The harness's own
// StudentScope does the rest (the ledger, the call's marks).
class ServedScope {
 public:
  explicit ServedScope(const char* function);
  ~ServedScope();
  ServedScope(const ServedScope&) = delete;
  ServedScope& operator=(const ServedScope&) = delete;

 private:
  const char* outer_function_;
};

}  // namespace dtrain
