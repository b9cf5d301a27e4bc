// Honest code the link check must accept: throwing, catching and defining
// exceptions, the kit's CollectiveMismatch among them.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
#include <cassert>
#include <exception>
#include <stdexcept>
#include <string>

#include "comm.h"
#include "not_implemented.h"

namespace dtrain {
namespace {

class ShapeError : public std::runtime_error {
 public:
  explicit ShapeError(const std::string& what) : std::runtime_error("shape: " + what) {}
};

struct Base {
  virtual ~Base() = default;
  virtual int value() const = 0;
};
struct Derived : Base {
  int value() const override { return 3; }
};

}  // namespace

int honest_exceptions(Communicator& comm, int n) {
  assert(n >= 0);
  std::exception_ptr saved;
  try {
    if (n == 1) throw ShapeError("n is one");
    if (n == 2) throw std::invalid_argument("n is two");
    if (n == 3) throw std::out_of_range("n is three");
    if (n == 4) throw NotImplemented("honest_exceptions", "none");
    if (n == 5) comm.barrier();
  } catch (const CollectiveMismatch& e) {
    throw std::logic_error(std::string("mismatch: ") + e.what());
  } catch (const ShapeError& e) {
    saved = std::current_exception();
  } catch (const std::exception& e) {
    if (std::string(e.what()).empty()) throw;
  } catch (...) {
    return -1;
  }
  if (saved && n > 10) std::rethrow_exception(saved);
  Derived d;
  const Base& b = d;
  if (dynamic_cast<const Derived*>(&b) == nullptr) throw std::runtime_error("no");
  return b.value() + comm.rank();
}

}  // namespace dtrain
