#include "shim/ttrpc_frame.h"

#include <algorithm>

namespace podvisor::shim {

namespace {

void PutBigEndian32(uint32_t value, uint8_t* out) {
  out[0] = static_cast<uint8_t>(value >> 24);
  out[1] = static_cast<uint8_t>(value >> 16);
  out[2] = static_cast<uint8_t>(value >> 8);
  out[3] = static_cast<uint8_t>(value);
}

uint32_t GetBigEndian32(const uint8_t* in) {
  return (static_cast<uint32_t>(in[0]) << 24) | (static_cast<uint32_t>(in[1]) << 16) |
         (static_cast<uint32_t>(in[2]) << 8) | static_cast<uint32_t>(in[3]);
}

}  // namespace

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]) {
  PutBigEndian32(header.length, out);
  PutBigEndian32(header.stream_id, out + 4);
  out[8] = header.type;
  out[9] = header.flags;
}

FrameHeader DecodeFrameHeader(const uint8_t in[kFrameHeaderSize]) {
  return FrameHeader{GetBigEndian32(in), GetBigEndian32(in + 4), in[8], in[9]};
}

std::string EncodeFrame(uint32_t stream_id, FrameType type, std::string_view payload) {
  uint8_t header[kFrameHeaderSize];
  EncodeFrameHeader(
      {static_cast<uint32_t>(payload.size()), stream_id, static_cast<uint8_t>(type), 0}, header);
  std::string out(reinterpret_cast<const char*>(header), kFrameHeaderSize);
  out.append(payload);
  return out;
}

void FrameReader::Feed(std::string_view data, std::vector<Frame>& out) {
  while (!data.empty()) {
    if (skip_left_ > 0) {
      std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(skip_left_, data.size()));
      skip_left_ -= n;
      data.remove_prefix(n);
      continue;
    }
    if (!in_payload_) {
      std::size_t n = std::min(kFrameHeaderSize - header_fill_, data.size());
      std::copy_n(data.data(), n, header_ + header_fill_);
      header_fill_ += n;
      data.remove_prefix(n);
      if (header_fill_ < kFrameHeaderSize) return;
      header_fill_ = 0;
      current_ = DecodeFrameHeader(header_);
      if (current_.length > kMaxMessageLength) {
        out.push_back(Frame{current_, {}, true});
        skip_left_ = current_.length;
        continue;
      }
      in_payload_ = true;
      payload_.clear();
      // Reserve only what has arrived: a header may lie about the length.
    }
    std::size_t n = std::min<std::size_t>(current_.length - payload_.size(), data.size());
    payload_.append(data.data(), n);
    data.remove_prefix(n);
    if (payload_.size() == current_.length) {
      out.push_back(Frame{current_, std::move(payload_), false});
      payload_.clear();
      in_payload_ = false;
    }
  }
  // A frame of length 0 completes with its header, even at the end of data.
  if (in_payload_ && current_.length == 0) {
    out.push_back(Frame{current_, {}, false});
    in_payload_ = false;
  }
}

}  // namespace podvisor::shim
