// ring_served.cpp: Part 11's functions as the student's process of the
// driven mode serves them (framework/calls/driven.h), registered by the
// part's own file.
#include "driven.h"
#include "ring_collectives.h"

KIT_SERVED("naive_allreduce", &dtrain::naive_allreduce);
KIT_SERVED("ring_allreduce", &dtrain::ring_allreduce);
