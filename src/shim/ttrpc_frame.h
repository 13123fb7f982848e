// ttrpc's framing, as containerd's ttrpc (channel.go) puts messages on a
// unix socket: a 10-byte header (payload length, uint32 big-endian; stream
// id, uint32 big-endian; type, 1 request or 2 response; flags, reserved)
// then the payload, a protobuf Request or Response (ttrpc.proto).
//
// A message longer than 4 MiB is refused as ttrpc refuses it: the reader
// reports it (the server answers RESOURCE_EXHAUSTED on that stream) and
// skips its payload as it arrives, so a peer announcing 4 GiB makes us
// hold at most one read's worth of it, never the whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podvisor::shim {

inline constexpr std::size_t kFrameHeaderSize = 10;
inline constexpr uint32_t kMaxMessageLength = 4u << 20;  // ttrpc's messageLengthMax

enum class FrameType : uint8_t { kRequest = 1, kResponse = 2 };

struct FrameHeader {
  uint32_t length = 0;
  uint32_t stream_id = 0;
  uint8_t type = 0;
  uint8_t flags = 0;
};

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]);
FrameHeader DecodeFrameHeader(const uint8_t in[kFrameHeaderSize]);

// Header and payload; `payload` must not exceed kMaxMessageLength (the
// caller answers with an error instead of sending a longer message).
std::string EncodeFrame(uint32_t stream_id, FrameType type, std::string_view payload);

struct Frame {
  FrameHeader header;
  std::string payload;  // empty when `oversized`
  bool oversized = false;
};

// Cuts a byte stream into frames, however it is split across reads.
class FrameReader {
 public:
  // Consumes all of `data`; appends every frame it completes to `out`. An
  // oversized frame is appended (oversized = true) as soon as its header
  // is complete, and its payload is then skipped.
  void Feed(std::string_view data, std::vector<Frame>& out);

  // Bytes of an incomplete frame held (for tests: bounded by 4 MiB + 10).
  std::size_t buffered() const {
    return in_payload_ ? kFrameHeaderSize + payload_.size() : header_fill_;
  }

 private:
  uint8_t header_[kFrameHeaderSize] = {};
  std::size_t header_fill_ = 0;
  bool in_payload_ = false;
  FrameHeader current_;
  std::string payload_;
  uint64_t skip_left_ = 0;  // of an oversized payload
};

}  // namespace podvisor::shim
