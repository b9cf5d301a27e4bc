// call_types.h: how each parameter and result type of a driven call
// (driven.h) travels, as values of call_values.h: put writes one, get reads
// it back, the same template at both ends. A communicator travels as the
// side's number for it; an object of the student's code as the number the
// student's process holds it under.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "call_values.h"
#include "comm.h"
#include "comm_runtime.h"
#include "func_impl.h"
#include "tensor.h"
#include "zero_dp_stage3.h"

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
// The harness says its members (by world rank) with it, so that the student's
// process asks the side nothing the call's account would hold.
Communicator& borrowed(std::int32_t side_number, std::vector<int> members);

template <>
struct Value<Communicator> {
  static void put(Writer& w, const Communicator& c) {
    note_comm_name(c);
    w.comm(CommAccess::side_number(c));
    const std::vector<int>& members = CommAccess::members(c);
    w.put(static_cast<std::int64_t>(members.size()));
    for (int m : members) w.put(m);
  }
  static Communicator& get(Reader& r, Borrowed&) {
    const std::int32_t number = r.comm();
    const std::int64_t n = r.integer();
    if (n < 0 || n > 4096) throw BadValues("a communicator's size out of range");
    std::vector<int> members;
    for (std::int64_t i = 0; i < n; ++i) members.push_back(static_cast<int>(r.integer()));
    return borrowed(number, std::move(members));
  }
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
// Every table of objects is emptied when a case ends (drop_objects): no
// object outlives the case that made it, as in one process, so what one
// case's objects hold never counts in the next one's memory.
void on_drop(void (*clear)());
void drop_objects();
template <class T>
std::map<std::int64_t, std::shared_ptr<T>>& objects() {
  static std::map<std::int64_t, std::shared_ptr<T>>& table = [] {
    on_drop([] { objects<T>().clear(); });
    return std::ref(*new std::map<std::int64_t, std::shared_ptr<T>>);
  }();
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
    // By number alone: the harness asks its side for their members, never the student's process.
    w.comm(CommAccess::side_number(v.mp_comm));
    w.comm(CommAccess::side_number(v.dp_comm));
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

// A function's arguments as values, each as its parameter's type travels;
// and what it returned, read back whole.
template <class... A>
struct Arguments {
  template <class... Given>
  static std::vector<char> of(const Given&... given) {
    static_assert(sizeof...(Given) == sizeof...(A), "a call takes the function's parameters");
    Writer count = Writer::counting();
    (Value<std::decay_t<A>>::put(count, given), ...);
    Writer w;
    w.reserve(count.size());
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

}  // namespace dtrain::calls
