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
// of call_values.h (Value<T> below); a Communicator& travels as the side's
// number for it, which names the same communicator in both processes.
//
//   harness:            remote<decltype(dtrain::split_data)>("split_data", x, y, 2, 2, 0)
//   student's process:  serve_calls({served("split_data", &dtrain::split_data), ...})
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "call_values.h"
#include "comm.h"
#include "comm_link.h"
#include "comm_runtime.h"
#include "func_impl.h"
#include "zero_dp_stage3.h"
#include "tensor.h"

namespace dtrain::calls {

// The communicators a call's arguments borrowed, alive for the call.
using Borrowed = std::deque<Communicator>;

// How one type travels: put (writes it) and get (reads it back).
template <class T, class = void>
struct Value;

template <>
struct Value<int> {
  static void put(Writer& w, int v) { w.put(v); }
  static int get(Reader& r, Borrowed&) {
    const std::int64_t v = r.integer();
    if (v < INT32_MIN || v > INT32_MAX) throw BadValues("an int out of range");
    return static_cast<int>(v);
  }
};
template <>
struct Value<long> {
  static void put(Writer& w, long v) { w.put(static_cast<std::int64_t>(v)); }
  static long get(Reader& r, Borrowed&) { return static_cast<long>(r.integer()); }
};
template <>
struct Value<bool> {
  static void put(Writer& w, bool v) { w.put(v); }
  static bool get(Reader& r, Borrowed&) { return r.integer() != 0; }
};
template <>
struct Value<double> {
  static void put(Writer& w, double v) { w.put(v); }
  static double get(Reader& r, Borrowed&) { return r.real(); }
};
template <>
struct Value<Matrix> {
  static void put(Writer& w, const Matrix& v) { w.put(v); }
  static Matrix get(Reader& r, Borrowed&) { return r.matrix(); }
};
template <>
struct Value<Vector> {
  static void put(Writer& w, const Vector& v) { w.put(v); }
  static Vector get(Reader& r, Borrowed&) { return r.vector(); }
};
template <>
struct Value<Labels> {
  static void put(Writer& w, const Labels& v) { w.put(v); }
  static Labels get(Reader& r, Borrowed&) { return r.labels(); }
};
// The harness names a communicator in a message by the name it had when
// the harness last passed it to a call ("mp_comm"), by the side's number.
void note_comm_name(const Communicator& c);

// A communicator by the side's number, borrowed once and kept: an object
// of the student's may hold a reference to it past the call (the ZeRO layer).
Communicator& borrowed(std::int32_t side_number);

template <>
struct Value<Communicator> {
  static void put(Writer& w, const Communicator& c) {
    note_comm_name(c);
    w.comm(CommAccess::side_number(c));
  }
  static Communicator& get(Reader& r, Borrowed&) { return borrowed(r.comm()); }
};

// An object of the student's code (a ZeRO layer, an optimizer) lives in the
// student's process, under a number; the harness holds the number. A
// function that makes one returns Object<T> with `held` set, and the
// student's process numbers it as it travels; on the harness's end
// `held` stays empty. A parameter T& travels as the number.
template <class T>
struct Object {
  std::int64_t id = 0;
  std::shared_ptr<T> held;
};

std::int64_t next_object_id();
template <class T>
std::map<std::int64_t, std::shared_ptr<T>>& objects() {
  static std::map<std::int64_t, std::shared_ptr<T>>& table = *new std::map<std::int64_t, std::shared_ptr<T>>;
  return table;
}

template <class T>
struct Value<Object<T>> {
  static void put(Writer& w, const Object<T>& o) {
    std::int64_t id = o.id;
    if (id == 0 && o.held) objects<T>()[id = next_object_id()] = o.held;
    w.object(id);
  }
  // In the student's process, `held` is the object of that number (empty if none).
  static Object<T> get(Reader& r, Borrowed&) {
    Object<T> o{r.object(), {}};
    const auto found = objects<T>().find(o.id);
    if (found != objects<T>().end()) o.held = found->second;
    return o;
  }
};

// The types whose parameters travel as an object's number.
template <class T>
struct HeldObject {
  static void put(Writer& w, const Object<T>& o) { w.object(o.id); }
  static T& get(Reader& r, Borrowed&) {
    const auto found = objects<T>().find(r.object());
    if (found == objects<T>().end()) throw BadValues("no object of that number in the student's process");
    return *found->second;
  }
};
template <>
struct Value<ZeroDPStage3FCLayer> : HeldObject<ZeroDPStage3FCLayer> {};
template <>
struct Value<ZeroDPAdam> : HeldObject<ZeroDPAdam> {};
template <class A, class B>
struct Value<std::pair<A, B>> {
  static void put(Writer& w, const std::pair<A, B>& v) {
    Value<A>::put(w, v.first);
    Value<B>::put(w, v.second);
  }
  static std::pair<A, B> get(Reader& r, Borrowed& borrowed) {
    A a = Value<A>::get(r, borrowed);
    return {std::move(a), Value<B>::get(r, borrowed)};
  }
};
template <>
struct Value<std::string> {
  static void put(Writer& w, const std::string& v) { w.text(v); }
  static std::string get(Reader& r, Borrowed&) { return r.text(); }
};
template <class T>
struct Value<std::vector<T>> {
  static void put(Writer& w, const std::vector<T>& v) {
    w.put(static_cast<std::int64_t>(v.size()));
    for (const T& item : v) Value<T>::put(w, item);
  }
  static std::vector<T> get(Reader& r, Borrowed& borrowed) {
    const std::int64_t n = r.integer();
    if (n < 0 || n > 4096) throw BadValues("a list's length out of range");
    std::vector<T> out;
    for (std::int64_t i = 0; i < n; ++i) out.push_back(Value<T>::get(r, borrowed));
    return out;
  }
};

// get_info's communicators are the student's process's: they stay alive
// there (served_keep) and are borrowed here.
template <>
struct Value<ParallelInfo> {
  static void put(Writer& w, const ParallelInfo& v) {
    w.put(v.mp_idx);
    w.put(v.dp_idx);
    Value<Communicator>::put(w, v.mp_comm);
    Value<Communicator>::put(w, v.dp_comm);
    w.put(v.part_in_dim);
    w.put(v.part_out_dim);
  }
  static ParallelInfo get(Reader& r, Borrowed& borrowed) {
    const int mp_idx = Value<int>::get(r, borrowed), dp_idx = Value<int>::get(r, borrowed);
    Communicator mp_comm = CommAccess::borrow(r.comm(), "mp_comm");
    Communicator dp_comm = CommAccess::borrow(r.comm(), "dp_comm");
    note_comm_name(mp_comm);
    note_comm_name(dp_comm);
    const int in = Value<int>::get(r, borrowed);
    return ParallelInfo{mp_idx, dp_idx, std::move(mp_comm), std::move(dp_comm), in, Value<int>::get(r, borrowed)};
  }
};

// What a result leaves alive in the student's process after the call (the
// communicators get_info made, which the harness goes on using).
template <class T>
void keep_alive(T&) {}
void keep_alive(ParallelInfo& info);

// A parameter as the student's process holds it during the call: what its
// Value reads, by reference where that is a reference (a communicator, an
// object), else by value.
template <class A>
using Held = decltype(Value<std::decay_t<A>>::get(std::declval<Reader&>(), std::declval<Borrowed&>()));

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
std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments);

// What the student's process of this rank is doing now, in the roll-call's
// words (rank_state.h), from the side's page (side_page.h); "" where this
// process has no page (outside the driven mode).
std::string student_state();
// The student process's system-call filter (link::FilterCode), as the side
// keeps it, waiting up to `seconds` for that process to say it.
link::FilterCode student_filter(double seconds);

// A function's arguments as values, each as its parameter's type travels;
// and what it returned, read back whole.
template <class... A>
struct Arguments {
  template <class... Given>
  static std::vector<char> of(const Given&... given) {
    static_assert(sizeof...(Given) == sizeof...(A), "a call takes the function's parameters");
    Writer w;
    (Value<std::decay_t<A>>::put(w, given), ...);
    return w.take();
  }
};
template <class R>
R result_of(const std::vector<char>& values) {
  Reader r(values);
  Borrowed borrowed;
  R result = Value<std::decay_t<R>>::get(r, borrowed);
  if (!r.done()) throw BadValues("more values than the function returns");
  return result;
}

// What a student call returned (its values), or what it threw, thrown here.
std::vector<char> returned_values(const std::string& name, const std::vector<char>& arguments);

// One call of the function whose declaration is F: a student call from the
// harness, or an upcall from the student's process.
enum class Caller { Harness, Student };
template <Caller C, class F>
struct Typed;
template <Caller C, class R, class... A>
struct Typed<C, R(A...)> {
  template <class... Given>
  static R call(const char* name, const Given&... given) {
    const std::vector<char> arguments = Arguments<A...>::of(given...);
    const std::vector<char> values =
        C == Caller::Harness ? returned_values(name, arguments) : upcall_values(name, arguments);
    if constexpr (!std::is_void_v<R>) return result_of<R>(values);
  }
};

// An upcall of the harness's function whose declaration is F, by name, from the student's process.
template <class F, class... Given>
auto upcall(const char* name, const Given&... given) {
  return Typed<Caller::Student, F>::call(name, given...);
}

// A call of the function whose declaration is F, by name, from the harness.
template <class F, class... Given>
auto remote(const char* name, const Given&... given) {
  return Typed<Caller::Harness, F>::call(name, given...);
}

}  // namespace dtrain::calls
