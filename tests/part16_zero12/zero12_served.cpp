// zero12_served.cpp: Part 16's optimizers as the student's process of the
// driven mode serves them (framework/calls/driven.h), registered by the
// part's own file.
#include "driven.h"
#include "zero12_forms.h"

using namespace dtrain;
using namespace dtrain::calls;

KIT_SERVED("Zero1Adam::Zero1Adam", &zero12::make<Zero1Adam>);
KIT_SERVED("Zero1Adam::step", &zero12::step<Zero1Adam>);
KIT_SERVED("Zero1Adam::state", &zero12::state<Zero1Adam>);
KIT_SERVED("Zero2Adam::Zero2Adam", &zero12::make<Zero2Adam>);
KIT_SERVED("Zero2Adam::step", &zero12::step<Zero2Adam>);
KIT_SERVED("Zero2Adam::state", &zero12::state<Zero2Adam>);
