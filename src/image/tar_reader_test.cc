// The layer tar reader against archives GNU tar writes (an independent
// writer): GNU long names, pax headers, ustar prefixes, and the three
// compressions of image-spec layers, including concatenated gzip members.
#include "image/tar_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fd.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

struct Read {
  std::string path;
  std::string link;
  TarHeader::Type type;
  std::string data;
};

// Every entry of the archive file `archive`, read through our decompressor.
std::vector<Read> ReadAll(const fs::path& archive, LayerCompression compression) {
  Fd fd(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd);
  auto in =
      MakeDecompressor(compression, [&fd](char* buf, std::size_t size) -> Result<std::size_t> {
        ssize_t n = ::read(fd.get(), buf, size);
        if (n < 0) return Error::FromErrno("read");
        return static_cast<std::size_t>(n);
      });
  TarReader reader(*in);
  std::vector<Read> out;
  for (;;) {
    auto h = reader.Next();
    EXPECT_TRUE(h) << h.error().message();
    if (!h || !*h) break;
    Read r{(*h)->path, (*h)->link, (*h)->type, ""};
    char buf[7];  // small, to cross reads
    for (;;) {
      auto n = reader.ReadData(buf, sizeof buf);
      EXPECT_TRUE(n);
      if (!n || *n == 0) break;
      r.data.append(buf, *n);
    }
    out.push_back(r);
  }
  return out;
}

class TarReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = tmp_.path() / "src";
    long_dir_ = std::string(120, 'd');
    fs::create_directories(src_ / long_dir_);
    std::ofstream(src_ / long_dir_ / (std::string(110, 'f') + ".txt")) << "long name";
    std::ofstream(src_ / "small") << std::string(1000, 's');
    fs::create_symlink(std::string(150, 't'), src_ / "longlink");
    fs::create_hard_link(src_ / "small", src_ / "hard");
  }
  // GNU tar of src_ with `options`; returns the archive's path.
  fs::path Tar(const std::string& name, const std::string& options) {
    fs::path out = tmp_.path() / name;
    std::string cmd = "tar " + options + " -cf " + out.string() + " -C " + src_.string() +
                      " --sort=name --owner=0 --group=0 . 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }
  void ExpectTree(const std::vector<Read>& entries) {
    bool saw_long = false, saw_link = false, saw_hard = false, saw_small = false;
    for (const auto& e : entries) {
      if (e.path == "./" + long_dir_ + "/" + std::string(110, 'f') + ".txt") {
        saw_long = e.type == TarHeader::Type::kFile && e.data == "long name";
      } else if (e.path == "./longlink") {
        saw_link = e.type == TarHeader::Type::kSymlink && e.link == std::string(150, 't');
      } else if (e.path == "./small" || e.path == "./hard") {
        // Whichever comes second is the hard link to the first.
        if (e.type == TarHeader::Type::kFile) saw_small = e.data == std::string(1000, 's');
        if (e.type == TarHeader::Type::kHardLink)
          saw_hard = e.link == "./small" || e.link == "./hard";
      }
    }
    EXPECT_TRUE(saw_long) << "the 235-character name";
    EXPECT_TRUE(saw_link) << "the 150-character symlink target";
    EXPECT_TRUE(saw_small);
    EXPECT_TRUE(saw_hard);
  }

  testing::TempDir tmp_;
  fs::path src_;
  std::string long_dir_;
};

TEST_F(TarReaderTest, GnuLongNamesAndLinks) {
  ExpectTree(ReadAll(Tar("gnu.tar", "--format=gnu"), LayerCompression::kNone));
}

TEST_F(TarReaderTest, PaxExtendedHeaders) {
  ExpectTree(ReadAll(Tar("pax.tar", "--format=pax"), LayerCompression::kNone));
}

TEST_F(TarReaderTest, GzipAndZstdLayers) {
  ExpectTree(ReadAll(Tar("l.tar.gz", "--format=pax -z"), LayerCompression::kGzip));
  ExpectTree(ReadAll(Tar("l.tar.zst", "--format=pax --zstd"), LayerCompression::kZstd));
}

TEST_F(TarReaderTest, ConcatenatedGzipMembersAreOneStream) {
  fs::path plain = Tar("c.tar", "--format=gnu");
  // pigz and some registries write several members; split the tar in two.
  std::string cmd = "cd " + tmp_.path().string() +
                    " && head -c 1024 c.tar | gzip > c.tar.gz && tail -c +1025 c.tar | gzip >> "
                    "c.tar.gz";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ExpectTree(ReadAll(tmp_.path() / "c.tar.gz", LayerCompression::kGzip));
}

TEST_F(TarReaderTest, TruncatedAndCorruptStreamsAreErrors) {
  fs::path full = Tar("t.tar.gz", "--format=gnu -z");
  fs::resize_file(full, fs::file_size(full) / 2);
  Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
  auto in = MakeDecompressor(LayerCompression::kGzip, [&fd](char* buf, std::size_t size) {
    return Result<std::size_t>(
        static_cast<std::size_t>(std::max<ssize_t>(0, ::read(fd.get(), buf, size))));
  });
  TarReader reader(*in);
  bool failed = false;
  for (int i = 0; i < 100 && !failed; ++i) {
    auto h = reader.Next();
    if (!h) failed = true;
    if (h && !*h) break;
  }
  EXPECT_TRUE(failed) << "half a gzip stream must not read as a complete layer";
}

}  // namespace
}  // namespace podvisor::image
