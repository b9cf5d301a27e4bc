// Honest code the link check must accept: printing with printf and with
// <iostream> (whose GCC 12 static initializer is the one allowed).
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
#include <cinttypes>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "tensor.h"

namespace dtrain {

void honest_printing(const Matrix& m, int rank) {
  std::printf("rank %d: %ld x %ld\n", rank, static_cast<long>(m.rows()), static_cast<long>(m.cols()));
  std::fprintf(stderr, "warning on rank %d\n", rank);
  std::puts("done");
  std::fflush(stdout);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f", m.size() ? m(0, 0) : 0.0);
  std::cout << "rank " << rank << ": " << std::setprecision(4) << std::fixed << m.sum() << " " << buffer << std::endl;
  std::cerr << m << '\n';
  std::ostringstream out;
  out << m.transpose();
  std::cout << out.str() << std::flush;
  std::printf("%" PRId64 "\n", static_cast<std::int64_t>(rank));
}

}  // namespace dtrain
