// decentral_served.cpp: Part 15's functions as the student's process of the
// driven mode serves them (framework/calls/driven.h), registered by the
// part's own file.
#include "decentral_forms.h"
#include "driven.h"

KIT_SERVED("gossip_mix", &dtrain::calls::decentral::gossip_mix);
KIT_SERVED("decentralized_sgd_step", &dtrain::calls::decentral::decentralized_sgd_step);
