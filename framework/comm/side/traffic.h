// traffic.h: the MPI side's own account of what its rank moved, case by
// case: every collective and point-to-point message of doubles it carried
// for the child, by operation, element count and communicator size. The
// child names the cases (link::Kind::Case); it can name them wrongly, but
// it cannot leave a call out of the account, nor add one: the side writes
// what it did. Each case's account leaves the side once, as a record on a
// channel of its own (kit/launch.py reads it; records.h has the format).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace dtrain::side {

class Traffic {
 public:
  // fd: the channel, write-only; -1: keep no record (a run outside the runner).
  void open(int fd, int rank);
  // The case the child now runs ("": none); the account of the one before it goes out.
  void begin_case(const std::string& name);
  // One operation carried: `op` as the ledger names it, `count` its elements
  // (as LedgerEntry::count), `ranks` its communicator's size.
  void note(const char* op, long count, int ranks);
  // The account of the case now running goes out (at the end, or before an abort).
  void flush();

 private:
  std::mutex mu_;  // the control thread flushes before an abort
  int fd_ = -1, rank_ = 0;
  std::string case_;
  bool in_case_ = false;
  std::map<std::tuple<std::string, long, int>, long> calls_;  // (op, count, ranks) -> how many
  long overflow_ = 0;  // calls past the record's cap, counted only
};

}  // namespace dtrain::side
