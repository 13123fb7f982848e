#include "shim/ttrpc_frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace podvisor::shim {
namespace {

TEST(TtrpcFrame, HeaderIsBigEndianLengthStreamTypeFlags) {
  std::string frame = EncodeFrame(0x01020304, FrameType::kResponse, "abc");
  ASSERT_EQ(frame.size(), 13u);
  EXPECT_EQ(frame.substr(0, 10), std::string("\x00\x00\x00\x03\x01\x02\x03\x04\x02\x00", 10));
  EXPECT_EQ(frame.substr(10), "abc");
  FrameHeader h = DecodeFrameHeader(reinterpret_cast<const uint8_t*>(frame.data()));
  EXPECT_EQ(h.length, 3u);
  EXPECT_EQ(h.stream_id, 0x01020304u);
  EXPECT_EQ(h.type, 2);
  EXPECT_EQ(h.flags, 0);
}

TEST(TtrpcFrame, ReaderReassemblesFramesSplitAtEveryByte) {
  std::string stream = EncodeFrame(1, FrameType::kRequest, "hello") +
                       EncodeFrame(3, FrameType::kRequest, "") +
                       EncodeFrame(5, FrameType::kRequest, std::string(1000, 'x'));
  FrameReader reader;
  std::vector<Frame> frames;
  for (char c : stream) reader.Feed(std::string_view(&c, 1), frames);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].header.stream_id, 1u);
  EXPECT_EQ(frames[0].payload, "hello");
  EXPECT_EQ(frames[1].header.stream_id, 3u);
  EXPECT_EQ(frames[1].payload, "");
  EXPECT_EQ(frames[2].payload.size(), 1000u);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(TtrpcFrame, ReaderTakesManyFramesFromOneRead) {
  std::string stream;
  for (uint32_t i = 1; i < 200; i += 2) stream += EncodeFrame(i, FrameType::kRequest, "p");
  FrameReader reader;
  std::vector<Frame> frames;
  reader.Feed(stream, frames);
  ASSERT_EQ(frames.size(), 100u);
  EXPECT_EQ(frames.back().header.stream_id, 199u);
}

TEST(TtrpcFrame, MessageOfExactly4MiBIsAccepted) {
  std::string payload(kMaxMessageLength, 'a');
  FrameReader reader;
  std::vector<Frame> frames;
  reader.Feed(EncodeFrame(7, FrameType::kRequest, payload), frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_FALSE(frames[0].oversized);
  EXPECT_EQ(frames[0].payload.size(), kMaxMessageLength);
}

TEST(TtrpcFrame, OversizedMessageIsReportedAndSkippedWithoutBufferingIt) {
  uint8_t header[kFrameHeaderSize];
  const uint32_t length = kMaxMessageLength + 1;
  EncodeFrameHeader({length, 9, 1, 0}, header);
  FrameReader reader;
  std::vector<Frame> frames;
  reader.Feed(std::string_view(reinterpret_cast<char*>(header), kFrameHeaderSize), frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].oversized);
  EXPECT_EQ(frames[0].header.stream_id, 9u);
  EXPECT_EQ(frames[0].header.length, length);
  // The payload arrives in chunks and is dropped as it comes.
  std::string chunk(64 * 1024, 'z');
  uint32_t left = length;
  while (left > 0) {
    uint32_t n = std::min<uint32_t>(left, static_cast<uint32_t>(chunk.size()));
    reader.Feed(std::string_view(chunk.data(), n), frames);
    EXPECT_EQ(reader.buffered(), 0u);
    left -= n;
  }
  // The stream is in step again: the next frame is read normally.
  reader.Feed(EncodeFrame(11, FrameType::kRequest, "next"), frames);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].header.stream_id, 11u);
  EXPECT_EQ(frames[1].payload, "next");
}

TEST(TtrpcFrame, HeaderClaiming4GiBHoldsOnlyWhatArrived) {
  uint8_t header[kFrameHeaderSize];
  EncodeFrameHeader({0xffffffffu, 1, 1, 0}, header);
  FrameReader reader;
  std::vector<Frame> frames;
  reader.Feed(std::string_view(reinterpret_cast<char*>(header), kFrameHeaderSize), frames);
  reader.Feed(std::string(100, 'q'), frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].oversized);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(TtrpcFrame, IncompleteFrameStaysBuffered) {
  std::string frame = EncodeFrame(1, FrameType::kRequest, "abcdef");
  FrameReader reader;
  std::vector<Frame> frames;
  reader.Feed(std::string_view(frame).substr(0, 12), frames);
  EXPECT_TRUE(frames.empty());
  EXPECT_EQ(reader.buffered(), 12u);
  reader.Feed(std::string_view(frame).substr(12), frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "abcdef");
}

}  // namespace
}  // namespace podvisor::shim
