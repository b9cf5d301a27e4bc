// tensor.cpp: the failure path of tensor.h's Eigen checks.
#include "tensor.h"

#include <cstring>
#include <stdexcept>

namespace dtrain::detail {

void eigen_check_failed(const char* condition, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  throw std::logic_error(std::string("Eigen check failed: ") + condition + " (" + (base ? base + 1 : file) + ":" +
                         std::to_string(line) + "); usually two matrices of the wrong shapes, or an index out of range");
}

}  // namespace dtrain::detail
