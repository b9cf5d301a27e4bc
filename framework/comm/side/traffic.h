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
// The account also holds what the child's memory was, as the kernel counts
// it, each time a call the rules watch returned (link::Kind::Checkpoint):
// ("checkpoint", 0, 0) times the number of such moments, and ("held", KiB,
// 0) once, the most the child held at any of them beyond what it held when
// its first case began. Anonymous and shared pages both count, wherever
// the child's code put them, so no allocator, address or field of an
// object decides the figure. kit/traffic.py compares it with the
// reference's. Under an emulator, ("emulated", 0, 0) stands in its place.
//
// And it places Part 13's requests by the student call that made them, as
// the framework tells the side (link::Kind::DdpCall): ("grad_ready", 0, 0)
// and ("finish", 0, 0) times each call; ("started", elements, where) per
// iallreduce, where is kDdpInFinish, kDdpInGradReady + p for
// grad_ready(p), or 0 for neither (kit/facts.py); ("waited_in_grad_ready", 0, 0) per wait() there, and
// ("test_loop_in_grad_ready", 0, 0) per request tested more than
// kDdpMostTestsInOneCall times in one grad_ready call while it ran. The
// reference's account of a case has the same entries, so its order of
// events is judged as its traffic is. The child's code could tell the side
// of a call that isn't there, but not take back one the framework told:
// the calls are counted.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

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
  // The child whose memory checkpoint() measures; called right after the
  // fork, while its pid can't name another process.
  void watch(int child_pid);
  // A call the rules watch returned: the child's memory now goes into the case's account.
  void checkpoint();
  // Part 13: the child is now in grad_ready(param) (call 1), in finish (2), or neither (0).
  void ddp_call(long call, long param);
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
  long checkpoints_ = 0, held_kib_ = 0;
  long ddp_where_ = 0;               // where Part 13's student code is, coded as in the account
  std::map<long, long> tests_here_;  // request -> tests that found it running, in this grad_ready call

  void add(const std::string& op, long count, int ranks);  // with mu_ held
  void flush_case();   // with mu_ held
  void flush_after();  // with mu_ held
  void write(const std::string& line);
};

// The memory a process's status file (/proc/PID/status, read from `fd`)
// gives, anonymous and shared, in KiB; -1 if it can't be read.
long resident_kib(int fd);

}  // namespace dtrain::side
