// compress_served.cpp: Part 14's functions as the student's process of the
// driven mode serves them (framework/calls/driven.h), registered by the
// part's own file.
#include "compress_forms.h"
#include "driven.h"

KIT_SERVED("topk", &dtrain::topk);
KIT_SERVED("compress_with_feedback", &dtrain::calls::compress::compress_with_feedback);
KIT_SERVED("sparse_allreduce_mean", &dtrain::sparse_allreduce_mean);
