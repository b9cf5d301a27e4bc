// A bypass of the identifier rules the link check must refuse.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
// refused: uses std::thread::_M_start_thread
// The heap watch looks at the calling thread's allocations.
#include <thread>
#include <vector>
std::vector<double>* keep() {
  std::vector<double>* kept = nullptr;
  std::thread([&] { kept = new std::vector<double>(784 * 256); }).join();
  return kept;
}
