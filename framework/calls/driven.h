// driven.h: student calls driven from outside the student's process.
//
// In the driven mode a rank runs three processes: its MPI side, the kit's
// harness (the cases, their checks and records) and the student's process,
// which holds the student's code and only carries out calls
// (framework/comm/side/comm_side_serve.h). The harness asks for a call by
// the function's name and its arguments; the side hands it on and places
// every request the call makes in the case's account, under that name; the
// student's process answers with what the function returned or threw.
//
// Both ends come from one definition: the function's own declaration in
// the public headers. Each parameter and result type travels as one value
// of call_values.h (call_types.h's Value<T>); a Communicator& travels as the
// side's number for it, which names the same communicator in both processes.
//
//   harness:            remote<decltype(dtrain::split_data)>("split_data", x, y, 2, 2, 0)
//   student's process:  serve_calls({served("split_data", &dtrain::split_data), ...})
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "call_types.h"  // how each parameter and result travels
#include "comm_link.h"

namespace dtrain::calls {

// --- the student's process ---

// One served function: its name and how its values are read and written.
struct Served {
  const char* name;
  std::vector<char> (*invoke)(Reader& in);
};

template <auto F>
struct Invoker;
template <class R, class... A, R (*F)(A...)>
struct Invoker<F> {
  static std::vector<char> invoke(Reader& in) {
    Borrowed borrowed;
    // Braces read the arguments in order.
    std::tuple<Held<A>...> args{Value<std::decay_t<A>>::get(in, borrowed)...};
    if (!in.done()) throw BadValues("more values than the call's parameters");
    Writer out;
    if constexpr (std::is_void_v<R>) {
      std::apply(F, args);
    } else {
      R result = std::apply(F, args);
      Value<std::decay_t<R>>::put(out, result);
      keep_alive(result);
    }
    return out.take();
  }
};

template <auto F>
Served served(const char* name) {
  return {name, &Invoker<F>::invoke};
}

// Before the first call, and so before any code of the student's runs: the
// guards a test program puts on the code under test (the heap budget, the
// data and stack limits, and, if `filter`, the system-call filter, keeping
// open/openat if `allow_opening_files`). A filter the system refuses is said
// on standard error. Returns the filter's state (link::FilterCode).
link::FilterCode guard_student_process(bool filter, bool allow_opening_files);

// The student's process's whole life: carries out each call the side hands
// it until the side hands it none. Returns the program's exit status.
// `filter`: the guards' state, which its first Serve tells the side.
int serve_calls(const std::vector<Served>& functions, link::FilterCode filter);

// Whether the side reads this process's memory when the call being carried
// out returns (link.py, Call's `reads_memory`): if so, the call gives back
// what it freed first, so that the reading is what it holds (zero_calls.cpp).
bool call_reads_memory();

// Upcalls: functions of the kit's that the student's code calls during a
// call and that run in the harness (a pipeline stage's forward, say), so
// that their order and arguments are the harness's to see. The harness
// registers them (KIT_UPCALLED, in a file of its own); the student's
// process calls them with upcall<F>(name, ...), F the function's type.
std::vector<Served>& upcallable();
struct UpcallRegistrar {
  explicit UpcallRegistrar(Served s) { upcallable().push_back(s); }
};
#define KIT_UPCALLED(name, function)                                       \
  static const ::dtrain::calls::UpcallRegistrar KIT_SERVED_NAME(__COUNTER__){ \
      ::dtrain::calls::served<function>(name)}

// The student's process's end of one upcall: its values back, or what the
// harness's function threw, thrown here too.
std::vector<char> upcall_values(const std::string& name, const std::vector<char>& arguments);

// The name under which the student's process answers with the names of the
// functions it serves (std::vector<std::string>), whatever they are.
inline constexpr const char* kServedNames = "kit.served";

// Every student function of the parts this copy holds: the base parts'
// (student_functions.cpp) and those an extension part's own file registers
// (KIT_SERVED, in a source its row lists as served: kit/part_types.py).
std::vector<Served> student_functions();
std::vector<Served>& registered();
struct Registrar {
  explicit Registrar(Served s) { registered().push_back(s); }
};
#define KIT_SERVED_JOIN(a, b) a##b
#define KIT_SERVED_NAME(n) KIT_SERVED_JOIN(kit_served_, n)
#define KIT_SERVED(name, function) \
  static const ::dtrain::calls::Registrar KIT_SERVED_NAME(__COUNTER__){::dtrain::calls::served<function>(name)}

// --- the harness ---

// While one lives, this rank's student calls go without their memory read
// at each return (link.py, Call's `reads_memory`), and their process keeps
// what they free for reuse instead of giving it back to the kernel: for a
// case that no memory rule judges, such as a training run, whose calls the
// other cases of its part judge one by one. The account then holds no held@
// mark of the case, and neither does the reference's.
class MemoryUnread {
 public:
  MemoryUnread();
  ~MemoryUnread();
  MemoryUnread(const MemoryUnread&) = delete;
  MemoryUnread& operator=(const MemoryUnread&) = delete;

 private:
  bool was_;
};

// The student's process ended during a call: the harness fails the case and
// ends the job (its other ranks may wait for this one).
class ProcessGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The harness's answer to the student's process ending during a call
// (`why`: "crashed with SIGSEGV (invalid memory access) in F", ...): if set,
// it is called instead of throwing ProcessGone, and does not return.
void on_process_gone(void (*handler)(const std::string& why));
[[noreturn]] void process_gone(const std::string& why);

// One call: its outcome and values (what it returned or threw). Where the
// side found the call's collectives disagreeing across the ranks, it throws
// CollectiveMismatch, named from the side's findings alone.
// `marked`: a student call (link.py, Call's `marked`); false: the kit's own access to an object.
// `key`: the call's key argument, which the account keeps beside each iallreduce it starts (Call's `argument`).
std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments,
                                           bool marked = true, std::int64_t key = 0);

// What the student's process of this rank is doing now, in the roll-call's
// words (rank_state.h), from the side's page (side_page.h); "" where this
// process has no page (outside the driven mode).
std::string student_state();
// The call of the communicator that process waits in, as the roll-call's
// record wants it (ledger::waiting_call's, from the page); false if none.
bool student_waiting_call(ledger::WaitingCall& out);
// The student process's system-call filter (link::FilterCode), as the side
// keeps it, waiting for that process to say it; On at once if it ended
// before saying it (none of its code runs after). The wait has no limit of
// its own: a process stuck before its word (code before main that never
// returns) is the runner's to stop, by its start-up limit, which counts the
// time the job could have run; a clock here would run out first on a busy
// host, and the job would plan cases its student process never reaches.
link::FilterCode student_filter();
// Whether the side saw the student's process end.
bool student_gone();

// What a student call returned (its values), or what it threw, thrown here.
std::vector<char> returned_values(const std::string& name, const std::vector<char>& arguments, bool marked,
                                  std::int64_t key = 0);

// One call of the function whose declaration is F: a student call from the
// harness, or an upcall from the student's process.
enum class Caller { Harness, Access, Student };
template <Caller C, class F>
struct Typed;
template <Caller C, class R, class... A>
struct Typed<C, R(A...)> {
  template <class... Given>
  static R call(const char* name, std::int64_t key, const Given&... given) {
    std::vector<char> values;
    {  // the arguments go before the result is made of the values
      const std::vector<char> arguments = Arguments<A...>::of(given...);
      values = C == Caller::Student ? upcall_values(name, arguments)
                                    : returned_values(name, arguments, C == Caller::Harness, key);
    }
    if constexpr (!std::is_void_v<R>) return result_of<R>(values);
  }
};

// An upcall of the harness's function whose declaration is F, by name, from the student's process.
template <class F, class... Given>
auto upcall(const char* name, const Given&... given) {
  return Typed<Caller::Student, F>::call(name, 0, given...);
}

// A call of the function whose declaration is F, by name, from the harness.
template <class F, class... Given>
auto remote(const char* name, const Given&... given) {
  return Typed<Caller::Harness, F>::call(name, 0, given...);
}

// The same, with the call's key argument for the account (a parameter's
// index: the side keeps it beside each iallreduce the call starts).
template <class F, class... Given>
auto remote_keyed(const char* name, std::int64_t key, const Given&... given) {
  return Typed<Caller::Harness, F>::call(name, key, given...);
}

// The call that ends a case in the student's process: its objects go.
inline constexpr const char* kEndOfCase = "kit::end_of_case";
void end_of_case();

// The kit's own access to an object of the student's process (a field read
// or set, the framework's constructor), by name: not a student call, so
// the account marks no return for it (its requests it still counts).
template <class F, class... Given>
auto access(const char* name, const Given&... given) {
  return Typed<Caller::Access, F>::call(name, 0, given...);
}

}  // namespace dtrain::calls
