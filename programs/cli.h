// cli.h: the flag parser of the kit's programs. Every rank parses the same
// arguments, so every rank reaches the same verdict and none is left waiting.
//
//   Flags flags("zero_dp_train", "Trains the ZeRO-3 MLP.");
//   int dp = flags.add_int("--dp_size", 1, "data-parallel size (= ranks)");
//   if (const int status = flags.parse(argc, argv, rank); status >= 0) return status;
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace dtrain {

class Flags {
 public:
  Flags(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  int& add_int(const std::string& name, int value, const std::string& help) {
    return add<int>(name, value, help, "N").value;
  }
  double& add_double(const std::string& name, double value, const std::string& help) {
    return add<double>(name, value, help, "X").value;
  }
  std::string& add_string(const std::string& name, std::string value, const std::string& help) {
    return add<std::string>(name, std::move(value), help, "TEXT").value;
  }
  bool& add_switch(const std::string& name, const std::string& help) { return add<bool>(name, false, help, "").value; }

  // -1: go on. Otherwise the caller returns this status: 0 after --help,
  // 2 after a bad flag (with a usage line on rank 0's stderr).
  int parse(int argc, char** argv, int rank) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        if (rank == 0) print_help();
        return 0;
      }
      std::string value;
      const size_t eq = arg.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
      Option* option = find(arg);
      if (!option) return fail(rank, "unknown flag '" + arg + "'");
      if (option->is_switch()) {
        if (inline_value) return fail(rank, arg + " takes no value");
        option->set("");
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= argc) return fail(rank, arg + " needs a value");
        value = argv[++i];
      }
      if (!option->set(value)) return fail(rank, arg + " needs " + option->kind() + ", got '" + value + "'");
    }
    return -1;
  }

  std::string usage() const {
    std::string line = "usage: " + program_;
    for (const auto& o : options_) line += " [" + o->name + (o->is_switch() ? "" : " " + o->metavar) + "]";
    return line;
  }

 private:
  struct Option {
    std::string name, help, metavar;
    virtual ~Option() = default;
    virtual bool set(const std::string& text) = 0;
    virtual bool is_switch() const { return false; }
    virtual std::string kind() const = 0;
    virtual std::string shown() const = 0;
  };
  template <typename T>
  struct Typed : Option {
    T value;
    explicit Typed(T v) : value(std::move(v)) {}
    bool set(const std::string& text) override;
    bool is_switch() const override { return std::is_same<T, bool>::value; }
    std::string kind() const override;
    std::string shown() const override;
  };

  template <typename T>
  Typed<T>& add(const std::string& name, T value, const std::string& help, const std::string& metavar) {
    auto option = std::make_unique<Typed<T>>(std::move(value));
    option->name = name;
    option->help = help;
    option->metavar = metavar;
    Typed<T>& ref = *option;
    options_.push_back(std::move(option));
    return ref;
  }

  Option* find(const std::string& name) {
    for (auto& o : options_)
      if (o->name == name) return o.get();
    return nullptr;
  }

  int fail(int rank, const std::string& why) const {
    if (rank == 0) std::fprintf(stderr, "%s: %s\n%s\n(--help lists every flag)\n", program_.c_str(), why.c_str(), usage().c_str());
    return 2;
  }

  void print_help() const {
    std::printf("%s\n%s\n\n", summary_.c_str(), usage().c_str());
    for (const auto& o : options_) {
      const std::string left = o->name + (o->is_switch() ? "" : " " + o->metavar);
      std::printf("  %-24s %s%s\n", left.c_str(), o->help.c_str(), o->shown().c_str());
    }
  }

  std::string program_, summary_;
  std::vector<std::unique_ptr<Option>> options_;
};

template <>
inline bool Flags::Typed<int>::set(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < -2147483647L || v > 2147483647L) return false;
  value = static_cast<int>(v);
  return true;
}
template <>
inline bool Flags::Typed<double>::set(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return false;
  value = v;
  return true;
}
template <>
inline bool Flags::Typed<std::string>::set(const std::string& text) {
  value = text;
  return true;
}
template <>
inline bool Flags::Typed<bool>::set(const std::string&) {
  value = true;
  return true;
}
template <> inline std::string Flags::Typed<int>::kind() const { return "a whole number"; }
template <> inline std::string Flags::Typed<double>::kind() const { return "a number"; }
template <> inline std::string Flags::Typed<std::string>::kind() const { return "a value"; }
template <> inline std::string Flags::Typed<bool>::kind() const { return "nothing"; }
template <> inline std::string Flags::Typed<int>::shown() const { return " (default " + std::to_string(value) + ")"; }
template <> inline std::string Flags::Typed<double>::shown() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, " (default %g)", value);
  return buf;
}
template <> inline std::string Flags::Typed<std::string>::shown() const {
  return value.empty() ? "" : " (default " + value + ")";
}
template <> inline std::string Flags::Typed<bool>::shown() const { return ""; }

}  // namespace dtrain
