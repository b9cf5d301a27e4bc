// job.cpp: this process's place in the test job (job.h).
#include "job.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace harness {

Job& job() {
  // Never destroyed: the watchdog thread may read it while exit() runs the
  // destructors of statics (a case that calls exit()).
  static Job& state = *new Job;
  return state;
}

std::string open_channel(const std::string& dir, int rank) {
  const std::string path = dir + "/rank" + std::to_string(rank);
  // Non-blocking to open: with no reader (no runner) the open fails at once
  // instead of waiting for ever. Then blocking, so a record is never lost to
  // a full pipe: the runner drains it as it comes.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "cannot open the record channel '" + path + "': " + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    return "'" + path + "' is not a record channel (a FIFO the runner made)";
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const std::string board_path = dir + "/rollcall";
  const int board_fd = ::open(board_path.c_str(), O_RDWR | O_CLOEXEC);
  if (board_fd < 0) {
    ::close(fd);
    return "cannot open the roll-call board '" + board_path + "': " + std::strerror(errno);
  }
  void* board = ::mmap(nullptr, kBoardSlots * sizeof(std::uint32_t), PROT_READ | PROT_WRITE, MAP_SHARED, board_fd, 0);
  ::close(board_fd);
  if (board == MAP_FAILED) {
    ::close(fd);
    return "cannot map the roll-call board '" + board_path + "': " + std::strerror(errno);
  }
  job().results_fd = fd;
  job().results_dir = dir;
  job().board = static_cast<std::uint32_t*>(board);
  return "";
}

void write_record(const std::string& line) {
  if (job().results_fd < 0) return;
  static std::mutex& mu = *new std::mutex;  // never destroyed, as job()
  const std::string text = line + "\n";
  std::lock_guard<std::mutex> lock(mu);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(job().results_fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the runner is gone: nobody is left to read it
    done += static_cast<size_t>(n);
  }
}

}  // namespace harness
