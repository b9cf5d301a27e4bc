// watchdog.h: each rank's watchdog over the running case. When the case runs
// out of time (or, after this rank failed, out of its short grace), it calls
// the roll: it records what this rank is doing (its ledger's state), and
// every other rank of the case, which watches the roll-call board (job.h),
// answers the same way at once. Only when every rank of the case has answered (or
// kRollCallWaitSeconds have passed) does a rank end the job, so no rank's
// answer can be lost to the others ending first, whatever the load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace harness {

class Watchdog {
 public:
  static constexpr double kPollSeconds = 0.05;
  static constexpr double kRollCallWaitSeconds = 20.0;

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The case begins: it may take `seconds` on `ranks` ranks.
  void arm(double seconds, const std::string& case_name, int ranks);
  // After a local failure the other ranks may be waiting for this one in a
  // collective forever; give them a short grace to join the outcome meeting.
  void shorten(double seconds, const std::string& failure);
  // This rank finished the case's code and now waits for the others.
  void body_done();
  // The case is over on this rank.
  void disarm();

 private:
  using Clock = std::chrono::steady_clock;

  void open_window(double seconds);
  bool due();
  const std::set<int>& answered();
  std::string state() const;
  [[noreturn]] void roll_call(std::unique_lock<std::mutex>& lock);
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, failed_ = false, body_done_ = false, quit_ = false;
  Clock::time_point started_, deadline_, window_from_;  // the window: the case's limit, or the grace after a failure
  Clock::time_point last_look_;
  double window_seconds_ = 0, could_run_ = 0;
  const double cores_;  // the host's cores, for its load
  const double cpus_;   // what the job may use at once: --cpus (a container's quota), else the cores
  std::string case_;
  std::string failure_;  // the first line of this rank's first failure in the case
  int ranks_ = 1;
  std::set<int> answered_;
  std::thread thread_;   // last: it starts in the constructor and runs loop()
};

}  // namespace harness
