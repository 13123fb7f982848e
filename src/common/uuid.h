// Identifiers the API server would assign: a pod without metadata.uid gets
// one here, so status, events and recovery can tell two runs of the same
// pod name apart.
#pragma once

#include <string>

namespace podvisor {

// An RFC 4122 version 4 UUID ("xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx")
// from getrandom(2). Without entropy (very early boot as PID 1 of a VM) it
// falls back to the wall clock rather than blocking the pod's start.
std::string RandomUuid();

}  // namespace podvisor
