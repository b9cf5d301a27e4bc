// driven_student.cpp: the student's process's end of a driven call
// (driven.h): its guards, the loop that carries out each call, the
// functions it serves, the objects and communicators it keeps, its upcalls.
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "call_answer.h"
#include "driven.h"
#include "heap_watch.h"
#include "layer_profiler.h"
#include "observe.h"
#include "parts_table.h"  // a rank's limits (kit/limits.py)
#include "platform.h"

namespace dtrain::calls {

Communicator& borrowed(std::int32_t side_number, std::vector<int> members) {
  static std::map<std::int32_t, Communicator>& kept = *new std::map<std::int32_t, Communicator>;
  auto found = kept.find(side_number);
  if (found == kept.end())
    found = kept.emplace(side_number, CommAccess::borrow(side_number, "comm", std::move(members))).first;
  return found->second;
}

std::vector<Served>& upcallable() {
  static std::vector<Served>& functions = *new std::vector<Served>;
  return functions;
}

std::vector<char> upcall_values(const std::string& name, const std::vector<char>& arguments) {
  Writer w;
  w.text(name);
  std::vector<char> data = w.take();
  data.insert(data.end(), arguments.begin(), arguments.end());
  link::Header h = link::request(link::Kind::Upcall);
  h.in_bytes = data.size();
  std::string back;
  link::call(h, data.data(), nullptr, 0, &back);
  // The harness's answer: an outcome, then its values (a Text if it threw).
  Reader r(back.data(), back.size());
  const auto outcome = static_cast<Outcome>(r.integer());
  const std::size_t at = back.size() - static_cast<std::size_t>(r.remaining());
  if (outcome == Outcome::ThrewInvalid) throw std::invalid_argument(r.text());
  if (outcome != Outcome::Returned) throw std::runtime_error(outcome == Outcome::Threw ? r.text() : "no such upcall: " + name);
  return std::vector<char>(back.begin() + static_cast<std::ptrdiff_t>(at), back.end());
}

std::vector<Served>& registered() {
  static std::vector<Served>& functions = *new std::vector<Served>;
  return functions;
}

std::int64_t next_object_id() {
  static std::int64_t next = 0;
  return ++next;
}

namespace {
std::vector<void (*)()>& droppers() {
  static std::vector<void (*)()>& clears = *new std::vector<void (*)()>;
  return clears;
}
}  // namespace

void on_drop(void (*clear)()) { droppers().push_back(clear); }

void drop_objects() {
  for (void (*clear)() : droppers()) clear();
  platform::release_free_memory();
}

void keep_alive(ParallelInfo& info) {
  // Never freed: the harness may use them for the rest of the job, and
  // the process ends with the job.
  static std::deque<Communicator>& kept = *new std::deque<Communicator>;
  kept.push_back(std::move(info.mp_comm));
  kept.push_back(std::move(info.dp_comm));
}

link::FilterCode guard_student_process(bool filter, bool allow_opening_files) {
  platform::set_thread_stack_size(harness::kThreadStackBytes);
  keep_big_blocks_for_reuse();
  heap_budget::set(harness::kRankHeapBudgetBytes);
  platform::limit_private_memory(harness::kStudentProcessDataLimitBytes);  // the rank's, less its harness's
  platform::limit_main_stack(harness::kRankStackLimitBytes);
  if (!filter) return link::FilterCode::OffAsked;
  const std::string refused = platform::restrict_system_calls(allow_opening_files);
  if (refused.empty()) return link::FilterCode::On;
  std::fprintf(stderr, "kit: the student's process: syscall filter: off (%s)\n", refused.c_str());
  return link::FilterCode::OffRefused;
}

namespace {
// The framework's rules a call broke (observe.h's rule_broken): their count
// goes with its answer, and the harness fails the case with its own words.
std::int64_t g_rules_broken = 0;
bool g_call_reads_memory = true;  // the call being carried out's (Serve's answer)
}  // namespace

bool call_reads_memory() { return g_call_reads_memory; }

int serve_calls(const std::vector<Served>& functions, link::FilterCode filter) {
  // The link's Hello now, outside every call, rather than in the first call
  // that uses a communicator: no call's account holds it.
  (void)Communicator::world();
  set_rule_sink([](const std::string&) { ++g_rules_broken; });
  Outcome outcome = Outcome::Returned;
  std::vector<char> values;  // the last call's, or none before the first
  for (bool first = true;; first = false) {
    link::Header h = link::request(link::Kind::Serve);
    h.ask.serve.outcome = static_cast<std::int64_t>(outcome);
    h.ask.serve.filter = first ? static_cast<std::int64_t>(filter) : 0;
    Writer head;  // call_answer.h: the memory budget's refusal in the call, the rules it broke, then its values
    put_refusal(head, heap_budget::take());
    put_rules(head, std::exchange(g_rules_broken, 0));
    std::vector<char> answer = head.take();
    answer.insert(answer.end(), values.begin(), values.end());
    h.in_bytes = answer.size();
    std::string next;
    const link::Reply reply = link::call(h, answer.data(), nullptr, 0, &next);
    if (next.empty()) return 0;  // no call: the program ends
    const auto name_bytes = static_cast<std::size_t>(reply.answer.serve.name_bytes);
    if (name_bytes > next.size()) return 70;  // a broken side
    const std::string name = next.substr(0, name_bytes);
    g_call_reads_memory = reply.answer.serve.reads_memory != 0;
    Reader in(next.data() + name_bytes, next.size() - name_bytes);
    const Served* f = nullptr;
    for (const Served& s : functions)
      if (name == s.name) f = &s;
    Writer thrown;
    if (name == kServedNames) {  // the kit's own question: which functions this process serves
      std::vector<std::string> names;
      for (const Served& s : functions) names.push_back(s.name);
      Writer out;
      Value<std::vector<std::string>>::put(out, names);
      values = out.take();
      outcome = Outcome::Returned;
      continue;
    }
    try {
      if (f == nullptr) {
        outcome = Outcome::Unknown;
        values.clear();
        continue;
      }
      const ServedScope scope(f->name);
      values = f->invoke(in);
      outcome = Outcome::Returned;
      continue;
    } catch (const StudentCheckFailed& e) {
      outcome = Outcome::CheckFailed;
      put_check_failure(thrown, e.failure());
    } catch (const std::invalid_argument& e) {
      outcome = Outcome::ThrewInvalid;
      thrown.text(e.what());
    } catch (const std::exception& e) {
      outcome = Outcome::Threw;
      thrown.text(e.what());
    } catch (...) {
      outcome = Outcome::Threw;
      thrown.text("an exception that is no std::exception");
    }
    values = thrown.take();
  }
}

}  // namespace dtrain::calls
