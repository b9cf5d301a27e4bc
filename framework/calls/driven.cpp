// driven.cpp: both ends of a driven student call (driven.h).
#include "driven.h"

#include <cstring>
#include <exception>
#include <string>

namespace dtrain::calls {

void keep_alive(ParallelInfo& info) {
  // Never freed: the harness may use them for the rest of the job, and
  // the process ends with the job.
  static std::deque<Communicator>& kept = *new std::deque<Communicator>;
  kept.push_back(std::move(info.mp_comm));
  kept.push_back(std::move(info.dp_comm));
}

int serve_calls(std::initializer_list<Served> functions) {
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

std::pair<Outcome, std::vector<char>> call(const std::string& name, const std::vector<char>& arguments) {
  std::vector<char> data(name.begin(), name.end());
  data.insert(data.end(), arguments.begin(), arguments.end());
  link::Header h = link::request(link::Kind::Call);
  h.ask.call.name_bytes = static_cast<std::int64_t>(name.size());
  h.in_bytes = data.size();
  std::string back;
  const link::Reply reply = link::call(h, data.data(), nullptr, 0, &back);
  const std::int64_t outcome = reply.answer.call.outcome;
  if (outcome < static_cast<std::int64_t>(Outcome::Gone) || outcome > static_cast<std::int64_t>(Outcome::Unknown))
    throw BadValues("a call's outcome of no known kind");
  return {static_cast<Outcome>(outcome), std::vector<char>(back.begin(), back.end())};
}

}  // namespace dtrain::calls
