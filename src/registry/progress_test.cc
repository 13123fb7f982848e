#include "registry/progress.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace podvisor::registry {
namespace {

TEST(Progress, EveryKindRoundTrips) {
  std::vector<ProgressEvent> events = {
      {.kind = ProgressKind::kResolving, .image = "nginx:1.25"},
      {.kind = ProgressKind::kPulling,
       .image = "nginx:1.25",
       .reference = "docker.io/library/nginx:1.25"},
      {.kind = ProgressKind::kLayer, .diff_id = "sha256:ab", .layer_size = 300, .bytes = 100},
      {.kind = ProgressKind::kLayer,
       .diff_id = "sha256:ab",
       .layer_size = 300,
       .bytes = 300,
       .unpacked = true},
      {.kind = ProgressKind::kPulled,
       .image = "nginx:1.25",
       .reference = "docker.io/library/nginx:1.25",
       .manifest_digest = "sha256:m",
       .image_id = "sha256:c",
       .repo_digest = "docker.io/library/nginx@sha256:i",
       .size = 12345,
       .seconds = 1.5,
       .seconds_waiting = 2.25},
      {.kind = ProgressKind::kFailed,
       .image = "x",
       .reason = "ErrImagePull",
       .message = "unauthorized \"quoted\"\nline"},
  };
  for (const ProgressEvent& e : events) {
    std::string line = FormatProgressLine(e);
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
    auto parsed = ParseProgressLine(line);
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(*parsed, e) << line;
  }
}

TEST(Progress, TheLineFormat) {
  EXPECT_EQ(
      FormatProgressLine(
          {.kind = ProgressKind::kLayer, .diff_id = "sha256:ab", .layer_size = 3, .bytes = 1}),
      R"({"bytes":1,"diffId":"sha256:ab","event":"Layer","size":3,"unpacked":false})"
      "\n");
  EXPECT_EQ(FormatProgressLine({.kind = ProgressKind::kFailed,
                                .image = "a",
                                .reason = "ErrImageNeverPull",
                                .message = "m"}),
            R"({"event":"Failed","image":"a","message":"m","reason":"ErrImageNeverPull"})"
            "\n");
}

TEST(Progress, RejectsWhatIsNotALine) {
  EXPECT_FALSE(ParseProgressLine("not json"));
  EXPECT_FALSE(ParseProgressLine(R"({"event":"Exploded"})"));
  EXPECT_FALSE(ParseProgressLine(R"({"event":"Layer"})"));
  EXPECT_FALSE(ParseProgressLine(R"({"event":"Failed","message":"x"})"));
  EXPECT_FALSE(ParseProgressLine(R"({"event":"Layer","diffId":"d","bytes":"many"})"));
}

TEST(Progress, KubeletMessages) {
  ProgressEvent pulled{.kind = ProgressKind::kPulled,
                       .image = "nginx:1.25",
                       .size = 12345,
                       .seconds = 1.2345,
                       .seconds_waiting = 1.5};
  EXPECT_EQ(PulledEventMessage(pulled),
            "Successfully pulled image \"nginx:1.25\" in 1.234s (1.5s including waiting). "
            "Image size: 12345 bytes.");
  pulled.already_present = true;
  EXPECT_EQ(PulledEventMessage(pulled),
            "Container image \"nginx:1.25\" already present on machine");
  EXPECT_EQ(NeverPullMessage("app:1"),
            "Container image \"app:1\" is not present with pull policy of Never");
  EXPECT_EQ(PullingEventMessage("a"), "Pulling image \"a\"");
  EXPECT_EQ(FailedEventMessage("a", "boom"), "Failed to pull image \"a\": boom");
}

TEST(Progress, GoDurations) {
  EXPECT_EQ(GoDuration(0), "0s");
  EXPECT_EQ(GoDuration(0.5129), "512ms");
  EXPECT_EQ(GoDuration(1), "1s");
  EXPECT_EQ(GoDuration(1.2349), "1.234s");
  EXPECT_EQ(GoDuration(123.5), "2m3.5s");
  EXPECT_EQ(GoDuration(3723), "1h2m3s");
}

TEST(Progress, WriterThrottlesLayerBytesButNotMilestones) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ProgressWriter writer(fds[1]);
    ProgressEvent layer{.kind = ProgressKind::kLayer, .diff_id = "sha256:a", .layer_size = 100};
    writer.Emit(layer);  // bytes 0: always
    for (uint64_t b = 1; b < 100; ++b) {
      layer.bytes = b;
      writer.Emit(layer);  // within 250 ms of the first: dropped
    }
    layer.bytes = 100;
    writer.Emit(layer);  // complete: always
    layer.unpacked = true;
    writer.Emit(layer);
  }
  ::close(fds[1]);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) all.append(buf, n);
  ::close(fds[0]);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3) << all;
}

}  // namespace
}  // namespace podvisor::registry
