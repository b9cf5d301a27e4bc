// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses mmap64
// refused: uses mremap
#include <sys/mman.h>
void* keep(unsigned long n) {
  void* p = mmap64(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return mremap(p, n, 2 * n, MREMAP_MAYMOVE);
}
