// driven_harness.cpp: the harness's end of a driven call (driven.h): each
// call and the upcalls it runs, the side's findings put in words, and what
// the student's process does, from the side's page.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <utility>

#include "call_answer.h"
#include "comm_internal.h"
#include "crash_words.h"
#include "driven.h"
#include "function_id.h"
#include "observe.h"
#include "rank_state.h"
#include "side_page.h"

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

std::map<std::int32_t, std::string>& comm_names() {
  static std::map<std::int32_t, std::string>& names = *new std::map<std::int32_t, std::string>;
  return names;
}

// A communicator by the side's number, as the harness named it.
std::string comm_called_by_number(std::int32_t comm) {
  const auto named = comm_names().find(comm);
  return named != comm_names().end() ? named->second : "a communicator the call made";
}

std::map<std::int64_t, std::string>& called_names() {
  static std::map<std::int64_t, std::string>& names = *new std::map<std::int64_t, std::string>;
  return names;
}

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
    out.disagreements += comm_detail::disagreement_text(f.data() + first, n, seq, comm_name, function.c_str(),
                                                        [](std::int64_t id) {
                                                          const auto found = called_names().find(id);
                                                          return found == called_names().end() ? std::string()
                                                                                               : found->second;
                                                        });
    at = first + rows;
  }
  return out;
}

}  // namespace

namespace {

const side_page::Page* the_page() {
  static const side_page::Page* page = [] {
    const char* fd = std::getenv(side_page::kEnvVariable);
    if (fd == nullptr) return static_cast<const side_page::Page*>(nullptr);
    void* at = mmap(nullptr, sizeof(side_page::Page), PROT_READ, MAP_SHARED, std::atoi(fd), 0);
    return at == MAP_FAILED ? nullptr : static_cast<const side_page::Page*>(at);
  }();
  return page;
}

std::string function_called(std::int64_t id) {
  const auto found = called_names().find(id);
  return found == called_names().end() ? std::string() : found->second;
}

// A communicator by the side's number: the name the harness passed it
// under, or the split of the student's that made it.
std::string comm_called(const side_page::Page& p, std::int64_t comm, int depth = 0) {
  const auto named = comm_names().find(static_cast<std::int32_t>(comm));
  if (named != comm_names().end()) return named->second;
  for (std::int64_t i = 0; i < p.comms && i < side_page::kMostComms && depth < 8; ++i) {
    const side_page::Comm& c = p.per_comm[i];
    if (c.comm == comm && c.parent >= 0)
      return "split(color " + std::to_string(c.color) + ", key " + std::to_string(c.key) + ") of " +
             comm_called(p, c.parent, depth + 1);
  }
  return "a communicator";
}

}  // namespace

std::string student_state() {
  const side_page::Page* page = the_page();
  side_page::Page p;
  if (page == nullptr || !side_page::read(*page, p)) return "";
  auto op_of = [](std::int64_t op) {
    return op >= 1 && op < static_cast<std::int64_t>(sizeof facts::kOpNames / sizeof *facts::kOpNames)
               ? static_cast<facts::OpCode>(op) : facts::kAllreduce;
  };
  RankState s;
  s.active = p.active != 0;
  s.op = op_of(p.op);
  s.seq = static_cast<long>(p.seq);
  s.count = static_cast<long>(p.count);
  s.comm = comm_called(p, p.comm);
  s.function = function_called(p.function);
  s.to = static_cast<int>(p.to), s.to_local = static_cast<int>(p.to_local), s.send_tag = static_cast<int>(p.send_tag);
  s.from = static_cast<int>(p.from), s.from_local = static_cast<int>(p.from_local), s.recv_tag = static_cast<int>(p.recv_tag);
  for (std::int64_t i = 0; i < p.requests && i < side_page::kMostRequests; ++i) {
    const side_page::Request& r = p.request[i];
    const RequestView view{op_of(r.op), static_cast<long>(r.seq), static_cast<long>(r.count), comm_called(p, r.comm),
                           function_called(r.function)};
    if (p.active != 0 && r.id == p.waited) {
      s.in_wait = true;
      s.waited = view;
    } else {
      s.unwaited.push_back(view);
    }
  }
  for (std::int64_t i = 0; i < p.comms && i < side_page::kMostComms; ++i) {
    const side_page::Comm& c = p.per_comm[i];
    if (c.collectives + c.point_to_point > 0)
      s.per_comm.push_back({comm_called(p, c.comm), static_cast<long>(c.collectives), static_cast<long>(c.point_to_point)});
  }
  return state_text(s);
}

bool student_waiting_call(ledger::WaitingCall& out) {
  const side_page::Page* page = the_page();
  side_page::Page p;
  if (page == nullptr || !side_page::read(*page, p) || p.active == 0) return false;
  if (p.op < 1 || p.op >= static_cast<std::int64_t>(sizeof facts::kOpNames / sizeof *facts::kOpNames)) return false;
  out = {static_cast<facts::OpCode>(p.op), static_cast<int>(p.to), static_cast<int>(p.send_tag),
         static_cast<int>(p.from), static_cast<int>(p.recv_tag), static_cast<long>(p.seq),
         static_cast<long>(p.count), static_cast<long>(p.group)};
  return true;
}

void (*g_gone_handler)(const std::string&) = nullptr;

void on_process_gone(void (*handler)(const std::string& why)) { g_gone_handler = handler; }

[[noreturn]] void process_gone(const std::string& why) {
  if (g_gone_handler != nullptr) g_gone_handler(why);
  throw ProcessGone("the student's process " + why);
}

link::FilterCode student_filter(double seconds) {
  const side_page::Page* page = the_page();
  if (page == nullptr) return link::FilterCode::Unknown;
  for (int waited = 0;; ++waited) {
    side_page::Page p;
    if (side_page::read(*page, p) && p.student_filter != 0) {
      const auto code = static_cast<link::FilterCode>(p.student_filter);
      return code == link::FilterCode::On || code == link::FilterCode::OffAsked ? code : link::FilterCode::OffRefused;
    }
    // Ended before its first word (code before main that exits): it runs
    // none of the cases' code, which fail as calls to a process that is
    // gone; waiting out the limit would only make the job late.
    if (side_page::read(*page, p) && p.student_gone != 0) return link::FilterCode::On;
    if (waited * 0.01 >= seconds) return link::FilterCode::Unknown;
    ::usleep(10000);
  }
}

bool student_gone() {
  const side_page::Page* page = the_page();
  side_page::Page p;
  return page != nullptr && side_page::read(*page, p) && p.student_gone != 0;
}

void note_comm_name(const Communicator& c) { comm_names()[CommAccess::side_number(c)] = CommAccess::name(c); }

void end_of_case() { returned_values(kEndOfCase, {}, false); }

namespace {
bool g_memory_unread = false;  // a MemoryUnread lives
}  // namespace

MemoryUnread::MemoryUnread() : was_(std::exchange(g_memory_unread, true)) {}
MemoryUnread::~MemoryUnread() { g_memory_unread = was_; }

std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments, bool marked,
                                           std::int64_t key) {
  called_names().emplace(function_id(name.c_str()), name);
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
