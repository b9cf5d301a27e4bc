// driven_harness.cpp: the harness's end of a driven call (driven.h): each
// call and the upcalls it runs, and the side's findings put in words. What
// the student's process does, from the side's page: driven_page.cpp.
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "call_answer.h"
#include "comm_internal.h"
#include "crash_words.h"
#include "driven.h"
#include "driven_names.h"
#include "observe.h"

namespace dtrain::calls {

namespace {

// The harness runs an upcall: the outcome (an Int), then its values.
std::vector<char> run_upcall(const std::string& data) {
  // Whatever the upcall brings (arguments too large for this process's
  // memory, a name nobody serves), it is answered with an outcome: the
  // side waits for a Resume, and the student's process for its answer.
  Writer out;
  try {
    Reader in(data.data(), data.size());
    const std::string name = in.text();
    const Served* f = nullptr;
    for (const Served& s : upcallable())
      if (name == s.name) f = &s;
    if (f == nullptr) {
      out.put(static_cast<std::int64_t>(Outcome::Unknown));
      return out.take();
    }
    std::vector<char> values = f->invoke(in);
    out.put(static_cast<std::int64_t>(Outcome::Returned));
    std::vector<char> head = out.take();
    head.insert(head.end(), values.begin(), values.end());
    return head;
  } catch (const std::invalid_argument& e) {
    out = Writer();
    out.put(static_cast<std::int64_t>(Outcome::ThrewInvalid));
    out.text(e.what());
  } catch (const std::exception& e) {
    out = Writer();
    out.put(static_cast<std::int64_t>(Outcome::Threw));
    out.text(e.what());
  }
  return out.take();
}

}  // namespace

std::vector<char> returned_values(const std::string& name, const std::vector<char>& arguments, bool marked,
                                  std::int64_t key) {
  auto [outcome, values] = call(name, arguments, marked, key);
  if (outcome == Outcome::ThrewInvalid) throw std::invalid_argument(Reader(values).text());
  if (outcome == Outcome::Threw) throw std::runtime_error(Reader(values).text());
  if (outcome == Outcome::CheckFailed) {  // worded here, where the StudentScope knows the call's arguments
    Reader in(values);
    throw StudentCheckFailed(get_check_failure(in));
  }
  if (outcome == Outcome::Gone) process_gone("ended before " + name);
  if (outcome != Outcome::Returned) throw std::logic_error("the student's process has no " + name);
  return std::move(values);
}

namespace {

// The side's findings of one call (Ops::take_findings; link::Finding): each
// disagreement in the words the ledger would have used in the student's
// process, and how that process ended if it did.
struct Found {
  std::string disagreements;
  std::string ended;  // "" if it did not
  std::string strays;  // "" if it left none
  std::string unlogged;  // "" if the side logged every request of the call
  std::vector<ledger::LoggedCall> requests;  // what the call did, as the ledger would have logged it
};

// A Request finding's event is the ledger's, code for code.
static_assert(static_cast<int>(ledger::LoggedCall::Event::Call) == static_cast<int>(link::RequestEvent::Call) &&
              static_cast<int>(ledger::LoggedCall::Event::Waited) == static_cast<int>(link::RequestEvent::Waited) &&
              static_cast<int>(ledger::LoggedCall::Event::Tested) == static_cast<int>(link::RequestEvent::Tested) &&
              static_cast<int>(ledger::LoggedCall::Event::TestedRunning) ==
                  static_cast<int>(link::RequestEvent::TestedRunning));

Found read_findings(const std::vector<std::int64_t>& f, const std::string& function) {
  Found out;
  for (std::size_t at = 0; at < f.size();) {
    const auto kind = static_cast<link::Finding>(f[at]);
    if (kind == link::Finding::Ended && at + 1 + link::kEndedFields <= f.size()) {
      const int code = static_cast<int>(f[at + 2]);
      out.ended = f[at + 1] != 0 ? std::string(crash_words(code)) + " in " + function : kExitedWords;
      at += 1 + link::kEndedFields;
      continue;
    }
    if (kind == link::Finding::Request && at + 1 + link::kRequestFields <= f.size()) {
      // kit/link.py's fields: event, op, comm, dest, source, count, request, failed_tests, send_tag, recv_tag, first, sum
      const std::int64_t* r = &f[at + 1];
      if (r[0] < 0 || r[0] > static_cast<std::int64_t>(link::RequestEvent::TestedRunning) || r[1] < 0 ||
          r[1] >= static_cast<std::int64_t>(sizeof facts::kOpNames / sizeof *facts::kOpNames))
        break;
      ledger::LoggedCall c{static_cast<ledger::LoggedCall::Event>(r[0]), static_cast<facts::OpCode>(r[1]),
                           static_cast<long>(r[5]), comm_called_by_number(static_cast<std::int32_t>(r[2]))};
      c.dest = static_cast<int>(r[3]);
      c.source = static_cast<int>(r[4]);
      c.request = static_cast<long>(r[6]);
      c.failed_tests = static_cast<int>(r[7]);
      c.send_tag = static_cast<int>(r[8]);
      c.recv_tag = static_cast<int>(r[9]);
      std::memcpy(&c.first, &r[10], sizeof c.first);
      std::memcpy(&c.sum, &r[11], sizeof c.sum);
      out.requests.push_back(std::move(c));
      at += 1 + link::kRequestFields;
      continue;
    }
    if (kind == link::Finding::Unlogged && at + 1 + link::kUnloggedFields <= f.size()) {
      out.unlogged = std::to_string(f[at + 1]) + " more requests of the communicator than the " +
                     std::to_string(link::kMostLoggedRequests) + " the kit logs in one call, so its checks can't "
                     "see them all (an honest call makes a few dozen)";
      at += 1 + link::kUnloggedFields;
      continue;
    }
    if (kind == link::Finding::Strays && at + 1 + link::kStraysFields <= f.size()) {
      out.strays = "the case started " + std::to_string(f[at + 1]) + " process(es) and left them running; they were "
                   "killed (code under test may not start processes)";
      at += 1 + link::kStraysFields;
      continue;
    }
    if (kind != link::Finding::Disagreement || at + 1 + link::kDisagreementFields > f.size()) break;
    const auto comm = static_cast<std::int32_t>(f[at + 1]);
    const long seq = static_cast<long>(f[at + 2]);
    const int n = static_cast<int>(f[at + 3]);
    const std::size_t rows = static_cast<std::size_t>(n) * link::kAgreeFields;
    const std::size_t first = at + 1 + link::kDisagreementFields;
    if (n < 2 || first + rows > f.size()) break;  // the side's own numbers: never, short of a broken side
    const std::string comm_name = comm_called_by_number(comm);
    if (!out.disagreements.empty()) out.disagreements += "\n";
    out.disagreements +=
        comm_detail::disagreement_text(f.data() + first, n, seq, comm_name, function.c_str(), function_called);
    at = first + rows;
  }
  return out;
}

}  // namespace

void end_of_case() { returned_values(kEndOfCase, {}, false); }

namespace {
bool g_memory_unread = false;  // a MemoryUnread lives
}  // namespace

MemoryUnread::MemoryUnread() : was_(std::exchange(g_memory_unread, true)) {}
MemoryUnread::~MemoryUnread() { g_memory_unread = was_; }

std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments, bool marked,
                                           std::int64_t key) {
  note_called_name(name);
  std::vector<char> data(name.begin(), name.end());
  data.insert(data.end(), arguments.begin(), arguments.end());
  link::Header h = link::request(link::Kind::Call);
  h.ask.call.name_bytes = static_cast<std::int64_t>(name.size());
  h.ask.call.marked = marked ? 1 : 0;
  h.ask.call.argument = key;
  h.ask.call.reads_memory = g_memory_unread ? 0 : 1;
  std::vector<std::int64_t> findings;  // the side's, across the call's upcalls
  std::string back;
  for (;;) {
    h.in_bytes = data.size();
    const link::Reply reply = link::call(h, data.data(), nullptr, 0, &back);
    const std::int64_t outcome = reply.answer.call.outcome;
    const auto side_bytes = static_cast<std::size_t>(reply.answer.call.side_bytes);
    if (outcome < static_cast<std::int64_t>(Outcome::Gone) || outcome > static_cast<std::int64_t>(Outcome::Upcall) ||
        side_bytes > back.size() || side_bytes % sizeof(std::int64_t) != 0)
      throw BadValues("a call's answer the side never writes");
    const std::size_t had = findings.size();
    findings.resize(had + side_bytes / sizeof(std::int64_t));
    if (side_bytes > 0) std::memcpy(findings.data() + had, back.data(), side_bytes);
    back.erase(0, side_bytes);
    if (static_cast<Outcome>(outcome) != Outcome::Upcall) {
      if (static_cast<Outcome>(outcome) != Outcome::Gone) {
        // The student's process's memory refusal in the call (call_answer.h),
        // told with the case's other failures as the in-process harness tells it.
        Reader head(back.data(), back.size());
        heap_budget::keep(get_refusal(head));
        if (const std::int64_t broken = get_rules(head); broken > 0) rule_broken(rules_text(broken));
        back.erase(0, back.size() - head.remaining());
      }
      if (!findings.empty()) {
        const Found found = read_findings(findings, name);
        if (!found.ended.empty()) process_gone(found.ended);
        if (!found.disagreements.empty()) throw CollectiveMismatch(found.disagreements);
        if (!found.requests.empty()) ledger::log_calls(found.requests);
        if (!found.strays.empty()) throw std::runtime_error(found.strays);
        if (!found.unlogged.empty()) throw std::runtime_error(name + " made " + found.unlogged);
      }
      return {static_cast<Outcome>(outcome), std::vector<char>(back.begin(), back.end())};
    }
    // The student's code called a function of the harness's: run it here, and go on.
    data = run_upcall(back);
    back.clear();
    h = link::request(link::Kind::Resume);
  }
}

}  // namespace dtrain::calls
