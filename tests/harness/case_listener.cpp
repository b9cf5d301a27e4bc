// case_listener.cpp: the per-case protocol of the test binary (case_listener.h).
#include "case_listener.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "abort_records.h"
#include "comm_runtime.h"
#include "harness.h"
#include "job.h"
#include "observations.h"
#include "reaper.h"
#include "records.h"
#include "trace.h"
#include "watchdog.h"
#ifdef KIT_DRIVEN
#include "driven.h"
#endif

namespace harness {

namespace {

// gtest reports an exception as: C++ exception with description "..." thrown
// in the test body. The description is the message; say where it came from:
// the student function it left (`thrown_from`), unless the message names it.
std::string without_gtest_wrapper(const std::string& message, const std::string& thrown_from) {
  const std::string head = "C++ exception with description \"", tail = "\" thrown in the test body.";
  if (message.rfind(head, 0) != 0 || message.size() < head.size() + tail.size() ||
      message.compare(message.size() - tail.size(), tail.size(), tail) != 0)
    return message;
  const std::string what = message.substr(head.size(), message.size() - head.size() - tail.size());
  const std::string function = thrown_from.substr(0, thrown_from.find(' '));
  if (thrown_from.empty() || what.find(function) != std::string::npos) return "exception: " + what;
  return "exception in " + thrown_from + ": " + what;
}

// gtest appends the SCOPED_TRACE notes a failure happened under as lines
// "FILE:LINE: NOTE" after "Google Test trace:". Returns the message without
// them, and the notes as ", NOTE, NOTE" to follow the failure's place, so
// that each failure stays one short block.
std::pair<std::string, std::string> without_trace(const std::string& message) {
  const std::string marker = "\nGoogle Test trace:\n";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return {message, ""};
  std::string notes, line;
  std::stringstream lines(message.substr(at + marker.size()));
  while (std::getline(lines, line)) {
    const size_t note = line.find(": ");
    if (!line.empty()) notes += ", " + (note == std::string::npos ? line : line.substr(note + 2));
  }
  return {message.substr(0, at), notes};
}

// A rank's failures in one case go to the runner as one text, parted by a
// blank line (kit/outcomes.py's CaseOutcome.summary shows the first and counts
// the rest): inside a failure no line is blank.
std::string one_block(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (size_t at = text.find("\n\n"); at != std::string::npos; at = text.find("\n\n", at)) text.erase(at, 1);
  return text;
}

class MpiCaseListener : public ::testing::EmptyTestEventListener {
 public:
  // `groups`: for each rank count the cases need, the communicator of ranks
  // 0..n-1 (a rank runs only the cases whose group it belongs to).
  MpiCaseListener(dtrain::Communicator& world, std::map<int, dtrain::Communicator>& groups, CaseLimits limits,
                  CaseTally& tally)
      : world_(world), groups_(groups), limits_(std::move(limits)),
        trace_dir_(job().trace_dir), tally_(tally) {}

  void OnTestProgramStart(const ::testing::UnitTest& unit) override {
    if (job().rank != 0) return;
    std::vector<std::string> cases;
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const auto* suite = unit.GetTestSuite(i);
      for (int j = 0; j < suite->total_test_count(); ++j) {
        const auto* info = suite->GetTestInfo(j);
        if (info->should_run()) cases.push_back(std::string(info->test_suite_name()) + "." + info->name());
      }
    }
    write_record(records::plan(world_.size(), cases, job().syscall_filter));
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    name_ = std::string(info.test_suite_name()) + "." + info.name();
    messages_.clear();
    dtrain::heap_budget::take();  // a refusal between cases is no case's
    case_begins(name_);
    observations_begin(name_);
    const TableRun* run = run_of(name_);  // main checked that every selected case has one
    const double limit = limits_.seconds_for(run->filter, run->case_seconds);
    meeting_ = &groups_.at(run->ranks);
    // Ranks of the group may still be busy with cases of a smaller group: wait asleep.
    dtrain::CommAccess::rendezvous(*meeting_);
    start_ = dtrain::CommAccess::wall_time();
    case_world() = std::make_unique<dtrain::Communicator>(dtrain::CommAccess::duplicate(*meeting_));
    dtrain::CommAccess::set_name(*case_world(), "world");
    dtrain::ledger::begin_case();
    dtrain::CommAccess::account_case(name_);  // the MPI side's account of the traffic goes by case
    dtrain::ledger::take_thrown_from();  // an exception of an earlier case, caught there
    if (job().rank == 0) {
      std::printf("[ RUN      ] %s\n", name_.c_str());
      std::fflush(stdout);
    }
    watchdog_.arm(limit, name_, run->ranks);
  }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    const auto [message, notes] = without_trace(result.message());
    std::string where = notes.empty() ? "" : notes.substr(2) + ": ";
    if (result.file_name() && std::strcmp(result.file_name(), "unknown file") != 0)
      where = std::string(result.file_name()) + ":" + std::to_string(result.line_number()) + notes + ": ";
    const std::string what = without_gtest_wrapper(message, dtrain::ledger::take_thrown_from());
    const std::string text = one_block(where + what);
    tell_refusal();  // a refused block is the cause of what failed after it: its record comes first
    messages_ += (messages_.empty() ? "" : "\n\n") + text;
    write_record(records::rank_failure(name_, job().rank, text));
    watchdog_.shorten(kFailedGraceSeconds, what);
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    watchdog_.body_done();
    if (const int stray = end_stray_processes(); stray > 0) {
      const std::string text = "the case started " + std::to_string(stray) +
                               " process(es) and left them running; they were killed (code under test may not "
                               "start processes)";
      messages_ += std::string(messages_.empty() ? "" : "\n\n") + text;
      write_record(records::rank_failure(name_, job().rank, text));
    }
    tell_refusal();
    if (info.result()->Skipped() && messages_.empty()) {
      messages_ = "the case was skipped; a skipped case counts as failed";
      write_record(records::rank_failure(name_, job().rank, messages_));
    }
    // The max is a full synchronization: no rank leaves a case before every
    // rank has finished it, so a rank stuck in a collective is caught here.
    // Each rank's messages reach the runner as its own records (above and
    // OnTestPartResult), never as a collective: the verdict is all the ranks
    // share.
#ifdef KIT_DRIVEN
    dtrain::calls::end_of_case();  // the objects the case made in the student's process go with it
#endif
    dtrain::CommAccess::account_case("");  // the case's account leaves the side before the ranks meet
    const bool any_failed = dtrain::CommAccess::max_over_ranks(*meeting_, messages_.empty() ? 0 : 1) != 0;
    if (any_failed && !trace_dir_.empty())
      dtrain::write_trace(*meeting_, trace_dir_ + "/" + name_ + ".json", case_world()->bytes_transferred());
    watchdog_.disarm();
    case_world().reset();
    case_ends();
    observations_end();
    if (job().rank != 0) return;
    const double seconds = dtrain::CommAccess::wall_time() - start_;
    // Rank 0 shows its own messages; the runner shows every rank's, from their records.
    std::string shown;
    std::stringstream lines(messages_);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) shown += "    [rank 0] " + line + "\n";
    const bool ok = !any_failed;
    (ok ? tally_.passed : tally_.failed)++;
    write_record(records::result(name_, ok, seconds, {}));
    std::printf("%s%s%s (%.0f ms)\n", shown.c_str(), ok ? "[       OK ] " : "[  FAILED  ] ", name_.c_str(),
                seconds * 1000);
    std::fflush(stdout);
  }

 private:
  // The memory budget's refusal, if a block was refused since the last: the
  // cause goes first, in rank 0's words and in the rank's records.
  void tell_refusal() {
    const auto refusal = dtrain::heap_budget::take();
    if (!refusal.happened) return;
    char text[400];
    budget_refusal_text(text, sizeof text, refusal);
    messages_ = one_block(text) + std::string(messages_.empty() ? "" : "\n\n") + messages_;
    write_record(records::rank_failure(name_, job().rank, text));
  }

  dtrain::Communicator& world_;
  std::map<int, dtrain::Communicator>& groups_;
  dtrain::Communicator* meeting_ = nullptr;  // the running case's group, where its ranks meet afterwards
  CaseLimits limits_;
  std::string trace_dir_;
  Watchdog watchdog_;
  std::string name_, messages_;
  double start_ = 0;
  CaseTally& tally_;
};

}  // namespace

::testing::TestEventListener* new_case_listener(dtrain::Communicator& world,
                                                std::map<int, dtrain::Communicator>& groups, CaseLimits limits,
                                                CaseTally& tally) {
  return new MpiCaseListener(world, groups, std::move(limits), tally);
}

}  // namespace harness
