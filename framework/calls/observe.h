// observe.h: the evidence a case leaves for the judge. The test harness
// installs a sink; the student-call wrappers (student_calls.h, and each
// extension part's calls header) hand it what each student function
// returned. The judge (kit/judge.py), a process that runs no student code, compares that
// evidence with values recorded from the reference: no process that runs
// student code decides that a case passed. Outside the test harness (the
// trainers) there is no sink and observing costs a branch.
#pragma once

#include <initializer_list>
#include <string>

#include "tensor.h"

namespace dtrain {

// label: what was returned ("split_data.x"); values: `count` doubles in
// storage order of a (rows, cols) result. The sink numbers repeated labels.
using ObservationSink = void (*)(const std::string& label, long rows, long cols, const double* values);

void set_observation_sink(ObservationSink sink);
bool observing();

void observe(const std::string& label, const Matrix& m);
void observe(const std::string& label, const Vector& v);   // as one row
void observe(const std::string& label, const Labels& v);   // as one row
void observe(const std::string& label, std::initializer_list<double> values);  // as one row

// A rule the kit checks on every call (zero_rules.h) was broken: the test
// harness's sink fails the running case with `what`; without one (a trainer)
// it throws std::runtime_error(what).
using RuleSink = void (*)(const std::string& what);
RuleSink set_rule_sink(RuleSink sink);  // returns the one it replaces
void rule_broken(const std::string& what);
bool under_test();  // a rule sink is installed

}  // namespace dtrain
