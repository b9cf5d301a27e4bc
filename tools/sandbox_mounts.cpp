// tools/sandbox_mounts: the grader's mounts for one sandboxed command, made in
// the command's fresh namespaces as root, then the command itself.
//   unshare --mount --net --pid --ipc --mount-proc --fork --
//     build/sandbox_mounts lo tmpfs ro,size=64k,mode=755,nosuid,nodev /home ... -- prlimit ... setpriv ... CMD
// (one command line)
// grader/namespaces.py writes the plan; each step is one of
//   lo                      bring the loopback interface up
//   tmpfs OPTIONS TARGET    an empty tmpfs (ro, nosuid, nodev and noexec are flags, the rest its data)
//   mkdir PATH              PATH and its missing parents, mode 0755
//   bind FROM TO            FROM shown at TO (not recursive)
//   remount-ro OPTIONS AT   the tmpfs mounted at AT with OPTIONS, now read-only
//   move FROM TO            the mount at FROM moved to TO
//
// Why a program and not a shell script of mount(8) calls: a grading starts
// about seven sandboxed commands (the probe, each file's compile, each test
// job), each with some fifty mounts, and one mount(8) costs about 1.4 ms of
// CPU (its libraries, its parsing): 0.5 s of every grading went to them.
// The first step that fails ends the program (exit 71), naming the step,
// before any command runs: a half-made sandbox runs nothing.
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kFailed = 71;  // EX_OSERR: the grader's own setup failed

[[noreturn]] void fail(const std::string& step, int error) {
  std::fprintf(stderr, "sandbox_mounts: %s: %s\n", step.c_str(), std::strerror(error));
  std::exit(kFailed);
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "sandbox_mounts: %s (usage: sandbox_mounts STEP... -- COMMAND...)\n", why.c_str());
  std::exit(2);
}

// mount(8)'s option list split as the kernel takes it: per-mount flags, and
// the file system's own options (size=, mode=) as its data.
struct Options {
  unsigned long flags = 0;
  std::string data;
};

Options parse_options(const std::string& list) {
  Options options;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string word = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (word == "ro") {
      options.flags |= MS_RDONLY;
    } else if (word == "nosuid") {
      options.flags |= MS_NOSUID;
    } else if (word == "nodev") {
      options.flags |= MS_NODEV;
    } else if (word == "noexec") {
      options.flags |= MS_NOEXEC;
    } else if (!word.empty()) {
      options.data += (options.data.empty() ? "" : ",") + word;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return options;
}

void loopback_up() {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("lo: socket", errno);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(fd, SIOCGIFFLAGS, &request) != 0) fail("lo: SIOCGIFFLAGS", errno);
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
  if (ioctl(fd, SIOCSIFFLAGS, &request) != 0) fail("lo: SIOCSIFFLAGS", errno);
  close(fd);
}

void make_dirs(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + prefix, errno);
    if (slash == std::string::npos) return;
  }
}

void mount_or_fail(const std::string& step, const char* source, const std::string& target, const char* type,
                   unsigned long flags, const std::string& data) {
  if (mount(source, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) != 0) fail(step, errno);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  size_t i = 0;
  auto take = [&](const std::string& step) -> const std::string& {
    if (i >= args.size() || args[i] == "--") usage(step + " needs more arguments");
    return args[i++];
  };
  umask(022);
  while (i < args.size() && args[i] != "--") {
    const std::string step = args[i++];
    if (step == "lo") {
      loopback_up();
    } else if (step == "tmpfs") {
      const Options options = parse_options(take(step));
      const std::string& target = take(step);
      mount_or_fail("tmpfs on " + target, "kit-cover", target, "tmpfs", options.flags, options.data);
    } else if (step == "mkdir") {
      make_dirs(take(step));
    } else if (step == "bind") {
      const std::string& from = take(step);
      const std::string& to = take(step);
      mount_or_fail("bind " + from + " to " + to, from.c_str(), to, nullptr, MS_BIND, "");
    } else if (step == "remount-ro") {
      // A remount sets every per-mount flag anew: the tmpfs's own are given again.
      const Options options = parse_options(take(step));
      const std::string& at = take(step);
      mount_or_fail("remount-ro " + at, nullptr, at, nullptr, MS_REMOUNT | MS_RDONLY | options.flags, "");
    } else if (step == "move") {
      const std::string& from = take(step);
      const std::string& to = take(step);
      mount_or_fail("move " + from + " to " + to, from.c_str(), to, nullptr, MS_MOVE, "");
    } else {
      usage("unknown step '" + step + "'");
    }
  }
  if (i + 1 >= args.size()) usage("no command after --");
  execvp(argv[i + 2], argv + i + 2);
  fail(std::string("cannot run ") + argv[i + 2], errno);
}
