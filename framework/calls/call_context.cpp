// call_context.cpp: the student call context (call_context.h) and the scope
// that sets it around each student call (StudentScope, comm_runtime.h).
#include "call_context.h"
#include "function_id.h"

#include <atomic>
#include <exception>
#include <map>
#include <utility>
#include <vector>

#include "comm_runtime.h"
#include "heap_watch.h"

namespace dtrain {

namespace {

std::atomic<std::uint64_t> g_call_serial{0};  // a new number on entering and on leaving a student call
std::atomic<const char*> g_function{nullptr};  // read by the watchdog thread and signal handlers
std::vector<ArgShape> g_args;                   // main thread only
std::string g_thrown_from;                      // what an exception last left

std::map<std::int64_t, std::string>& function_names() {  // id -> name, of the functions this rank entered
  static std::map<std::int64_t, std::string> names;
  return names;
}

}  // namespace

namespace ledger {

std::string function_now() {
  const char* f = g_function.load();
  return f ? f : "";
}

const char* function_now_signal_safe() { return g_function.load(); }

std::uint64_t student_call_serial() { return g_call_serial.load(); }

std::string arguments_now() {
  std::string out;
  for (const ArgShape& a : g_args)
    out += (out.empty() ? "" : ", ") + std::string(a.name) + " (" + std::to_string(a.rows) + ", " +
           std::to_string(a.cols) + ")";
  return out;
}

std::string take_thrown_from() { return std::exchange(g_thrown_from, std::string()); }

// FNV-1a: stable across processes, unlike std::hash.
std::int64_t function_id(const char* name) { return dtrain::function_id(name); }

std::string function_name(std::int64_t id) {
  const auto found = function_names().find(id);
  return found == function_names().end() ? "" : found->second;
}

}  // namespace ledger

StudentScope::StudentScope(const char* function, Communicator* comm, const char* comm_name,
                           std::initializer_list<ArgShape> args, std::int64_t argument)
    : function_(function),
      outer_function_(g_function.exchange(function)),
      exceptions_at_start_(std::uncaught_exceptions()),
      comm_(comm_name ? comm : nullptr) {
  const LibraryAllocations bookkeeping;  // the kit's records, not the student function's
  g_call_serial.fetch_add(1);
  outer_args_ = g_args;
  function_names().emplace(ledger::function_id(function), function);
  g_args.assign(args.begin(), args.end());
  if (comm_) {
    outer_comm_name_ = CommAccess::name(*comm_);
    CommAccess::set_name(*comm_, comm_name);
  }
  CommAccess::mark_call(function, argument);
}

ServedScope::ServedScope(const char* function) : outer_function_(g_function.exchange(function)) {
  g_call_serial.fetch_add(1);
  CommAccess::serving(true);
}

ServedScope::~ServedScope() {
  CommAccess::serving(false);
  g_function.store(outer_function_);
  g_call_serial.fetch_add(1);
}

StudentScope::~StudentScope() {
  const LibraryAllocations bookkeeping;
  // By the time a test sees the exception every scope is gone: remember the
  // innermost function it left, with its arguments, for the message.
  if (std::uncaught_exceptions() > exceptions_at_start_ && g_thrown_from.empty()) {
    g_thrown_from = g_function.load();
    if (const std::string args = ledger::arguments_now(); !args.empty()) g_thrown_from += " (called with " + args + ")";
  }
  ledger::student_call_ended();
  try {
    CommAccess::mark_return(function_);
  } catch (...) {  // the side refused: the case's account shows the call unreturned
  }
  g_function.store(outer_function_);
  g_call_serial.fetch_add(1);
  g_args = std::move(outer_args_);
  if (comm_) CommAccess::set_name(*comm_, outer_comm_name_);
}

}  // namespace dtrain
