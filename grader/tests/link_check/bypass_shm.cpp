// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses shmget
// refused: uses shmat
#include <sys/shm.h>
void* keep(unsigned long n) { return shmat(shmget(IPC_PRIVATE, n, IPC_CREAT | 0600), nullptr, 0); }
