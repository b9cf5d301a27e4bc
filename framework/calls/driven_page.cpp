// driven_page.cpp: what the harness knows of the student's process beyond
// a call's answer (driven.h): what it does now, from its side's page (the
// roll-call's words, the call it waits in, its filter, whether it ended),
// and the names the harness gave the functions and communicators it handed
// it (driven_names.h).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "comm_internal.h"
#include "driven.h"
#include "driven_names.h"
#include "function_id.h"
#include "rank_state.h"
#include "side_page.h"

namespace dtrain::calls {

namespace {

std::map<std::int32_t, std::string>& comm_names() {
  static std::map<std::int32_t, std::string>& names = *new std::map<std::int32_t, std::string>;
  return names;
}

std::map<std::int64_t, std::string>& called_names() {
  static std::map<std::int64_t, std::string>& names = *new std::map<std::int64_t, std::string>;
  return names;
}

}  // namespace

void note_called_name(const std::string& name) { called_names().emplace(function_id(name.c_str()), name); }

std::string function_called(std::int64_t id) {
  const auto found = called_names().find(id);
  return found == called_names().end() ? std::string() : found->second;
}

std::string comm_called_by_number(std::int32_t comm) {
  const auto named = comm_names().find(comm);
  return named != comm_names().end() ? named->second : "a communicator the call made";
}

void note_comm_name(const Communicator& c) { comm_names()[CommAccess::side_number(c)] = CommAccess::name(c); }

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

link::FilterCode student_filter() {
  const side_page::Page* page = the_page();
  if (page == nullptr) return link::FilterCode::Unknown;
  for (;;) {
    side_page::Page p;
    if (side_page::read(*page, p) && p.student_filter != 0) {
      const auto code = static_cast<link::FilterCode>(p.student_filter);
      return code == link::FilterCode::On || code == link::FilterCode::OffAsked ? code : link::FilterCode::OffRefused;
    }
    // Ended before its first word (code before main that exits): it runs
    // none of the cases' code, which fail as calls to a process that is
    // gone; waiting out the limit would only make the job late.
    if (side_page::read(*page, p) && p.student_gone != 0) return link::FilterCode::On;
    ::usleep(10000);
  }
}

bool student_gone() {
  const side_page::Page* page = the_page();
  side_page::Page p;
  return page != nullptr && side_page::read(*page, p) && p.student_gone != 0;
}

}  // namespace dtrain::calls
