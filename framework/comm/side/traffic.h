// traffic.h: the MPI side's own account of what its rank moved, case by
// case: every collective and point-to-point message of doubles it carried
// for the child, by operation, element count and communicator size. The
// child names the cases (link::Kind::Case); it can name them wrongly, but
// it cannot leave a call out of the account, nor add one: the side writes
// what it did. Every other request it carried goes in too, the kit's own
// (kit/facts.py, KIT_REQUESTS), and what it carried after the case ended,
// until the next began, is the case's "after" account. Each account leaves
// the side once, as a record on a channel of its own (kit/launch.py reads
// it; records.h has the format).
//
// It also places what the child did by the student call it did it in. The
// framework marks every student call while a case runs (link::Kind::Enter
// and Return, from StudentScope): the side keeps the calls open, innermost
// last, and writes, as MARK@FUNCTION entries (kit/facts.py, CALL_MARKS):
//   ("returned@F", 0, 0)          times each return of F;
//   ("held@F", KiB, 0)            once: the most the child's memory, as the
//                                 kernel counts it, stood at any return of
//                                 F beyond what it held when its first case
//                                 began (anonymous and shared pages, so no
//                                 allocator, address or field decides it);
//                                 under an emulator ("emulated", 0, 0) instead;
//   ("started_in@F", elements, argument)  per iallreduce begun in F;
//   ("waited_in@F", 0, 0)         per wait begun in F;
//   ("tested_running_in@F", n, 0) per request that n tests in one call of F
//                                 found still running (n at most a cap).
// Requests outside every call go to F = "framework"; a return with no call
// open, a call past the deepest nesting or a name that breaks the rules is
// ("unpaired", 0, 0), which no reference's account holds. The side knows no
// part: a part's rules (kit/rules/) read the marks they need, and the judge
// compares the returns with the reference's, whatever their function.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kit_facts.h"  // generated from kit/facts.py

namespace dtrain::side {

// Whether process `pid` runs under an emulator (qemu's user mode, as the
// kit's arm64 check runs it), by the executable the kernel names for it.
bool emulated(int pid);

class Traffic {
 public:
  // fd: the channel, write-only; -1: keep no record (a run outside the runner).
  void open(int fd, int rank);
  // The case the child now runs; "" ends it. The case's account goes out at
  // its end; what the side carries after it, until the next case begins or
  // the program ends, goes out then as the case's "after" account, so that
  // no request of a case's code escapes every account by ending it early.
  void begin_case(const std::string& name);
  // One operation carried: `count` its elements (as LedgerEntry::count),
  // `ranks` its communicator's size; or one of the kit's own requests.
  void note(facts::OpCode op, long count, int ranks);
  void request(facts::KitRequest r, long count, int ranks);
  // The child whose memory returned() measures; called right after the
  // fork, while its pid can't name another process.
  void watch(int child_pid);
  // A student call begins: `name` as the framework wrote it ("" if the link's
  // rules were broken), `argument` its key argument (a parameter's index, say).
  void enter(const std::string& name, long argument);
  // The innermost open call returns (`name`, as it was entered): the child's
  // memory now is read, unless the harness asked for no reading (a call of a
  // case no memory rule judges: link.py, Call's `reads_memory`).
  void returned(const std::string& name, bool read_memory = true);
  // What no honest program does (a request of the harness's kind from the
  // student's process, or one outside every call, in the driven mode): an
  // "unpaired" entry, which no reference's account holds.
  void unplanned();
  // An iallreduce of `count` elements began; a wait began; a test found request `id` still running.
  void started(long count);
  void waited();
  void tested_running(long id);
  // Every account still held goes out (at the end, or before an abort).
  void flush();

 private:
  std::mutex mu_;  // the control thread flushes before an abort
  int fd_ = -1, rank_ = 0;
  std::string case_;
  bool in_case_ = false;
  bool after_ = false;  // case_ has ended and no other has begun: calls go into its after account
  using Calls = std::map<std::tuple<std::string, long, int>, long>;  // (op, count, ranks) -> how many
  Calls calls_, after_calls_;
  long overflow_ = 0, after_overflow_ = 0;  // calls past a record's cap, counted only
  int child_pid_ = -1;
  int emulated_ = -1;       // under an emulator, whose memory is no figure of the child's (-1: not known yet)
  int status_fd_ = -1;     // the child's /proc/PID/status
  long baseline_kib_ = -1;  // its memory when its first case began
  struct OpenCall {
    std::string name;                    // as the account writes it ("?" when it broke the rules)
    long argument;
    std::map<long, long> tests_running;  // request -> tests that found it running, in this call
  };
  std::vector<OpenCall> open_;         // the child's student calls now running, innermost last
  std::map<std::string, long> held_;   // function -> the most held at its returns in this case (KiB)

  std::string mark(const char* what, const std::string& function) const;
  void add(const std::string& op, long count, int ranks);  // with mu_ held
  void flush_case();   // with mu_ held
  void flush_after();  // with mu_ held
  void write(const std::string& line);
};

// The memory a process's status file (/proc/PID/status, read from `fd`)
// gives, anonymous and shared, in KiB; -1 if it can't be read.
long resident_kib(int fd);

}  // namespace dtrain::side
