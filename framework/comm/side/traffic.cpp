// traffic.cpp: see traffic.h.
#include "traffic.h"

#include <unistd.h>

#include <cerrno>
#include <vector>

#include "records.h"

namespace dtrain::side {

namespace {
// Distinct (op, count, ranks) kinds a case's record lists; every call past
// them is counted. No case of the kit's makes more than a few dozen.
constexpr std::size_t kMostKinds = 256;
}  // namespace

void Traffic::open(int fd, int rank) {
  fd_ = fd;
  rank_ = rank;
}

void Traffic::begin_case(const std::string& name) {
  flush();
  const std::lock_guard<std::mutex> lock(mu_);
  case_ = name;
  in_case_ = !name.empty();
}

void Traffic::note(const char* op, long count, int ranks) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!in_case_) return;  // the harness's own traffic before the first case
  const auto key = std::make_tuple(std::string(op), count, ranks);
  const auto at = calls_.find(key);
  if (at != calls_.end()) {
    ++at->second;
  } else if (calls_.size() < kMostKinds) {
    calls_.emplace(key, 1);
  } else {
    ++overflow_;
  }
}

void Traffic::flush() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!in_case_) return;
  std::vector<records::TrafficCall> calls;
  for (const auto& [key, times] : calls_) calls.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), times});
  const std::string line = records::traffic(case_, rank_, calls, overflow_) + "\n";
  calls_.clear();
  overflow_ = 0;
  in_case_ = false;
  if (fd_ < 0) return;
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the runner is gone
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace dtrain::side
