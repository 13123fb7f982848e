// The tar writer, read back with libarchive (what the layer unpacker
// uses) and checked at the byte level where ustar leaves no choice.
#include "image/tar_writer.h"

#include <archive.h>
#include <archive_entry.h>

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::image {
namespace {

struct ReadEntry {
  std::string name, linkname, data;
  int type = 0;
  int mode = 0;
  int64_t uid = -1, gid = -1, mtime = -1;
};

std::vector<ReadEntry> ReadBack(const std::string& tar) {
  std::vector<ReadEntry> entries;
  struct archive* a = archive_read_new();
  archive_read_support_format_all(a);
  EXPECT_EQ(archive_read_open_memory(a, tar.data(), tar.size()), ARCHIVE_OK);
  struct archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    ReadEntry r;
    r.name = archive_entry_pathname(e);
    if (const char* l = archive_entry_symlink(e)) r.linkname = l;
    if (const char* l = archive_entry_hardlink(e)) r.linkname = l;
    r.type = static_cast<int>(archive_entry_filetype(e));
    r.mode = static_cast<int>(archive_entry_perm(e));
    r.uid = archive_entry_uid(e);
    r.gid = archive_entry_gid(e);
    r.mtime = archive_entry_mtime(e);
    char buf[4096];
    for (la_ssize_t n; (n = archive_read_data(a, buf, sizeof buf)) > 0;) r.data.append(buf, n);
    entries.push_back(r);
  }
  archive_read_free(a);
  return entries;
}

std::string Write(const std::vector<std::pair<TarWriteHeader, std::string>>& entries) {
  std::string out;
  TarWriter tar([&out](std::string_view d) {
    out.append(d);
    return Ok();
  });
  for (const auto& [h, data] : entries) {
    EXPECT_TRUE(tar.Begin(h));
    if (!data.empty()) {
      EXPECT_TRUE(tar.Write(data));
    }
  }
  EXPECT_TRUE(tar.Finish());
  return out;
}

TarWriteHeader H(TarEntryType type, std::string name, uint64_t size = 0) {
  TarWriteHeader h;
  h.type = type;
  h.name = std::move(name);
  h.size = size;
  return h;
}

TEST(TarWriter, EntriesReadBackAsWritten) {
  TarWriteHeader file = H(TarEntryType::kFile, "dir/file", 5);
  file.mode = 0640;
  file.uid = 1000;
  file.gid = 100;
  TarWriteHeader link = H(TarEntryType::kSymlink, "dir/link");
  link.linkname = "../etc/passwd";
  link.mode = 0777;
  TarWriteHeader hard = H(TarEntryType::kHardlink, "dir/again");
  hard.linkname = "dir/file";
  std::string tar =
      Write({{H(TarEntryType::kDirectory, "dir"), ""}, {file, "hello"}, {link, ""}, {hard, ""}});
  EXPECT_EQ(tar.size() % 512, 0u);
  auto read = ReadBack(tar);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read[0].name, "dir/");
  EXPECT_EQ(read[0].type, AE_IFDIR);
  EXPECT_EQ(read[1].name, "dir/file");
  EXPECT_EQ(read[1].data, "hello");
  EXPECT_EQ(read[1].mode, 0640);
  EXPECT_EQ(read[1].uid, 1000);
  EXPECT_EQ(read[1].gid, 100);
  EXPECT_EQ(read[1].mtime, 0);
  EXPECT_EQ(read[2].type, AE_IFLNK);
  EXPECT_EQ(read[2].linkname, "../etc/passwd");
  EXPECT_EQ(read[3].name, "dir/again");
  EXPECT_EQ(read[3].linkname, "dir/file");
}

TEST(TarWriter, LongNamesUseThePrefixFieldOrPax) {
  std::string split = std::string(120, 'a') + "/" + std::string(90, 'b');  // fits prefix + name
  std::string pax = std::string(300, 'c');                                 // no '/' to split at
  TarWriteHeader long_link = H(TarEntryType::kSymlink, "l");
  long_link.linkname = std::string(150, 'd');
  std::string tar = Write({{H(TarEntryType::kFile, split, 1), "x"},
                           {H(TarEntryType::kFile, pax, 1), "y"},
                           {long_link, ""}});
  auto read = ReadBack(tar);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0].name, split);
  EXPECT_EQ(read[1].name, pax);
  EXPECT_EQ(read[1].data, "y");
  EXPECT_EQ(read[2].linkname, std::string(150, 'd'));
  // The split name needs no extended header: the first block is its own.
  EXPECT_EQ(tar.substr(345, 120), std::string(120, 'a'));
}

TEST(TarWriter, HeaderChecksumIsUstars) {
  TarWriteHeader h = H(TarEntryType::kFile, "f", 3);
  std::string block = UstarBlock(h, "f", "", "");
  ASSERT_EQ(block.size(), 512u);
  unsigned sum = 0;
  for (std::size_t i = 0; i < block.size(); ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  }
  EXPECT_EQ(std::stoul(block.substr(148, 6), nullptr, 8), sum);
  EXPECT_EQ(block.substr(257, 6), std::string("ustar\0", 6));
}

TEST(TarWriter, ShortFileIsAnError) {
  std::string out;
  TarWriter tar([&out](std::string_view d) {
    out.append(d);
    return Ok();
  });
  ASSERT_TRUE(tar.Begin(H(TarEntryType::kFile, "f", 10)));
  ASSERT_TRUE(tar.Write("abc"));
  auto s = tar.Finish();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), ::testing::HasSubstr("7 bytes short"));
  EXPECT_FALSE(tar.Write(std::string(8, 'x')));
}

}  // namespace
}  // namespace podvisor::image
