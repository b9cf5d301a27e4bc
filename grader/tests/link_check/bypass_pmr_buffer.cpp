// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses std::pmr::
// refused: static or thread-local storage
#include <memory_resource>
#include <vector>
std::vector<double, std::pmr::polymorphic_allocator<double>>* keep() {
  static char buffer[2 << 20];
  static std::pmr::monotonic_buffer_resource pool(buffer, sizeof buffer);
  static std::pmr::vector<double> kept(&pool);
  return &kept;
}
