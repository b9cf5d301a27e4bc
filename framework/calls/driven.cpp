// driven.cpp: both ends of a driven student call (driven.h).
#include "driven.h"

#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "comm_internal.h"
#include "function_id.h"

namespace dtrain::calls {

void keep_alive(ParallelInfo& info) {
  // Never freed: the harness may use them for the rest of the job, and
  // the process ends with the job.
  static std::deque<Communicator>& kept = *new std::deque<Communicator>;
  kept.push_back(std::move(info.mp_comm));
  kept.push_back(std::move(info.dp_comm));
}

int serve_calls(const std::vector<Served>& functions) {
  Outcome outcome = Outcome::Returned;
  std::vector<char> values;  // the last call's, or none before the first
  for (;;) {
    link::Header h = link::request(link::Kind::Serve);
    h.ask.serve.outcome = static_cast<std::int64_t>(outcome);
    h.in_bytes = values.size();
    std::string next;
    const link::Reply reply = link::call(h, values.data(), nullptr, 0, &next);
    if (next.empty()) return 0;  // no call: the program ends
    const auto name_bytes = static_cast<std::size_t>(reply.answer.serve.name_bytes);
    if (name_bytes > next.size()) return 70;  // a broken side
    const std::string name = next.substr(0, name_bytes);
    Reader in(next.data() + name_bytes, next.size() - name_bytes);
    const Served* f = nullptr;
    for (const Served& s : functions)
      if (name == s.name) f = &s;
    Writer thrown;
    try {
      if (f == nullptr) {
        outcome = Outcome::Unknown;
        values.clear();
        continue;
      }
      values = f->invoke(in);
      outcome = Outcome::Returned;
      continue;
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

namespace {

std::map<std::int32_t, std::string>& comm_names() {
  static std::map<std::int32_t, std::string>& names = *new std::map<std::int32_t, std::string>;
  return names;
}

std::map<std::int64_t, std::string>& called_names() {
  static std::map<std::int64_t, std::string>& names = *new std::map<std::int64_t, std::string>;
  return names;
}

// The side's findings of one call (Ops::take_findings): each disagreement
// as the message the ledger would have written in the student's process.
std::string describe_findings(const std::vector<std::int64_t>& f, const std::string& function) {
  std::string out;
  for (std::size_t at = 0; at + 3 <= f.size();) {
    const auto comm = static_cast<std::int32_t>(f[at]);
    const long seq = static_cast<long>(f[at + 1]);
    const int n = static_cast<int>(f[at + 2]);
    const std::size_t rows = static_cast<std::size_t>(n) * link::kAgreeFields;
    if (n < 2 || at + 3 + rows > f.size()) break;  // the side's own numbers: never, short of a broken side
    const auto named = comm_names().find(comm);
    const std::string comm_name = named != comm_names().end() ? named->second : "a communicator the call made";
    if (!out.empty()) out += "\n";
    out += comm_detail::disagreement_text(f.data() + at + 3, n, seq, comm_name, function.c_str(), [](std::int64_t id) {
      const auto found = called_names().find(id);
      return found == called_names().end() ? std::string() : found->second;
    });
    at += 3 + rows;
  }
  return out;
}

}  // namespace

void note_comm_name(const Communicator& c) { comm_names()[CommAccess::side_number(c)] = CommAccess::name(c); }

std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments) {
  called_names().emplace(function_id(name.c_str()), name);
  std::vector<char> data(name.begin(), name.end());
  data.insert(data.end(), arguments.begin(), arguments.end());
  link::Header h = link::request(link::Kind::Call);
  h.ask.call.name_bytes = static_cast<std::int64_t>(name.size());
  h.in_bytes = data.size();
  std::string back;
  const link::Reply reply = link::call(h, data.data(), nullptr, 0, &back);
  const std::int64_t outcome = reply.answer.call.outcome;
  const auto side_bytes = static_cast<std::size_t>(reply.answer.call.side_bytes);
  if (outcome < static_cast<std::int64_t>(Outcome::Gone) || outcome > static_cast<std::int64_t>(Outcome::Unknown) ||
      side_bytes > back.size() || side_bytes % sizeof(std::int64_t) != 0)
    throw BadValues("a call's answer the side never writes");
  if (side_bytes > 0) {
    std::vector<std::int64_t> findings(side_bytes / sizeof(std::int64_t));
    std::memcpy(findings.data(), back.data(), side_bytes);
    throw CollectiveMismatch(describe_findings(findings, name));
  }
  return {static_cast<Outcome>(outcome), std::vector<char>(back.begin(), back.end())};
}

}  // namespace dtrain::calls
