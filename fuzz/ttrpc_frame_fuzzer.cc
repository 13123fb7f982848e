// libFuzzer target: any bytes as the stream a ttrpc client sends the shim,
// cut into reads at places the input itself chooses, through the frame
// reader and the Request decoder. The reader must never hold more than one
// message's worth (4 MiB + header) and must hand out exactly the payload
// length its header announced; nothing may abort or leak.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "shim/ttrpc_frame.h"
#include "ttrpc.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podvisor::shim;
  if (size == 0) return 0;
  // The first byte picks the read size (1..256 bytes), the rest is the stream.
  const std::size_t chunk = static_cast<std::size_t>(data[0]) + 1;
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  FrameReader reader;
  std::vector<Frame> frames;
  while (!stream.empty()) {
    std::string_view piece = stream.substr(0, chunk);
    stream.remove_prefix(piece.size());
    reader.Feed(piece, frames);
    if (reader.buffered() > kMaxMessageLength + kFrameHeaderSize) std::abort();
  }
  for (const auto& frame : frames) {
    if (frame.oversized) {
      if (frame.header.length <= kMaxMessageLength || !frame.payload.empty()) std::abort();
      continue;
    }
    if (frame.payload.size() != frame.header.length) std::abort();
    podvisor::ttrpc::Request request;
    if (request.ParseFromString(frame.payload)) {
      (void)request.service().size();
      (void)request.SerializeAsString();
    }
    // What the server would answer, re-framed and read back.
    std::string again = EncodeFrame(frame.header.stream_id, FrameType::kResponse, frame.payload);
    FrameReader back;
    std::vector<Frame> out;
    back.Feed(again, out);
    if (out.size() != 1 || out[0].payload != frame.payload) std::abort();
  }
  return 0;
}
