#include "common/uuid.h"

#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace podvisor {

std::string RandomUuid() {
  unsigned char b[16] = {};
  // GRND_NONBLOCK: an init that waits for the entropy pool can hang a VM
  // boot for minutes; a time-based value still tells pods apart.
  if (::getrandom(b, sizeof b, GRND_NONBLOCK) != sizeof b) {
    auto t = std::chrono::system_clock::now().time_since_epoch().count();
    std::memcpy(b, &t, sizeof t);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

}  // namespace podvisor
