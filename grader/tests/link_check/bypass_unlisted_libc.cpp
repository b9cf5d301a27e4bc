// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses open64
// refused: uses mkfifo
// refused: uses symlinkat
// refused: uses remove
// refused: uses glob
// refused: uses process_vm_readv
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <cstdio>
int touch_everything(char* buf) {
  int fd = open64("/tmp/x", O_RDONLY);
  mkfifo("/tmp/fifo", 0600);
  symlinkat("/etc/passwd", AT_FDCWD, "/tmp/link");
  std::remove("/tmp/x");
  glob_t g;
  glob("/tmp/*", 0, nullptr, &g);
  iovec local{buf, 8}, remote{nullptr, 8};
  return fd + static_cast<int>(process_vm_readv(1, &local, 1, &remote, 1, 0));
}
