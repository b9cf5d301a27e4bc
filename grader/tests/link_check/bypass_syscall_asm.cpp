// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: contains the instruction syscall
// The static check refuses the asm token; the object must be refused too.
long raw_getpid() { long r; __asm__ volatile("mov $39, %%eax; syscall" : "=a"(r) : : "rcx", "r11", "memory"); return r; }
