#include "image/tar_writer.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace podvisor::image {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kNameLen = 100;
constexpr std::size_t kPrefixLen = 155;
// The largest values the octal fields hold (11 and 7 digits).
constexpr uint64_t kMaxOctal11 = 077777777777ULL;
constexpr uint64_t kMaxOctal7 = 07777777ULL;
// The typeflag of a pax extended header, which applies to the next entry.
constexpr auto kPaxHeader = static_cast<TarEntryType>('x');

// `value` as `width - 1` octal digits and a NUL, as ustar has them.
void PutOctal(std::string& block, std::size_t offset, std::size_t width, uint64_t value) {
  std::array<char, 24> buf{};
  std::snprintf(buf.data(), buf.size(), "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
  block.replace(offset, width - 1, buf.data(), width - 1);
  block[offset + width - 1] = '\0';
}

void PutString(std::string& block, std::size_t offset, std::string_view text) {
  block.replace(offset, text.size(), text);
}

// ustar splits a long name at a '/' into prefix (155) and name (100).
bool SplitName(std::string_view full, std::string_view& prefix, std::string_view& name) {
  if (full.size() <= kNameLen) {
    prefix = {};
    name = full;
    return true;
  }
  for (std::size_t slash = full.find('/'); slash != std::string_view::npos;
       slash = full.find('/', slash + 1)) {
    if (slash <= kPrefixLen && full.size() - slash - 1 <= kNameLen && slash + 1 < full.size()) {
      prefix = full.substr(0, slash);
      name = full.substr(slash + 1);
      return true;
    }
  }
  return false;
}

// One pax record: "<length> <key>=<value>\n", the length counting itself.
std::string PaxRecord(std::string_view key, std::string_view value) {
  std::size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  std::string record = std::to_string(len);
  record.append(" ").append(key).append("=").append(value).append("\n");
  return record;
}

std::string Padding(uint64_t size) {
  return std::string((kBlock - size % kBlock) % kBlock, '\0');
}

}  // namespace

std::string UstarBlock(const TarWriteHeader& header, std::string_view name, std::string_view prefix,
                       std::string_view linkname) {
  std::string block(kBlock, '\0');
  PutString(block, 0, name.substr(0, kNameLen));
  PutOctal(block, 100, 8, header.mode & 07777);
  PutOctal(block, 108, 8, std::min<uint64_t>(header.uid, kMaxOctal7));
  PutOctal(block, 116, 8, std::min<uint64_t>(header.gid, kMaxOctal7));
  uint64_t size = header.type == TarEntryType::kFile || header.type == kPaxHeader ? header.size : 0;
  PutOctal(block, 124, 12, std::min(size, kMaxOctal11));
  PutOctal(block, 136, 12,
           static_cast<uint64_t>(std::clamp<int64_t>(header.mtime, 0, kMaxOctal11)));
  block[156] = static_cast<char>(header.type);
  PutString(block, 157, linkname.substr(0, kNameLen));
  PutString(block, 257,
            std::string_view("ustar\0"
                             "00",
                             8));
  if (header.type == TarEntryType::kCharDevice || header.type == TarEntryType::kBlockDevice) {
    PutOctal(block, 329, 8, header.dev_major);
    PutOctal(block, 337, 8, header.dev_minor);
  }
  PutString(block, 345, prefix.substr(0, kPrefixLen));
  // The checksum is computed with its own field as spaces, then written
  // as six octal digits, a NUL and a space.
  block.replace(148, 8, 8, ' ');
  unsigned sum = 0;
  for (char c : block) sum += static_cast<unsigned char>(c);
  std::array<char, 8> chk{};
  std::snprintf(chk.data(), chk.size(), "%06o", sum);
  block.replace(148, 6, chk.data(), 6);
  block[154] = '\0';
  return block;
}

Status TarWriter::Begin(const TarWriteHeader& header) {
  if (finished_) return Error("tar: entry after the end of the archive");
  if (auto s = EndEntry(); !s) return s;
  if (header.name.empty()) return Error("tar: an entry without a name");
  std::string full = header.name;
  if (header.type == TarEntryType::kDirectory) full += '/';

  std::string pax;
  std::string_view prefix;
  std::string_view name;
  if (!SplitName(full, prefix, name)) {
    pax += PaxRecord("path", full);
    prefix = {};
    name = std::string_view(full).substr(0, kNameLen);
  }
  if (header.linkname.size() > kNameLen) pax += PaxRecord("linkpath", header.linkname);
  if (header.type == TarEntryType::kFile && header.size > kMaxOctal11) {
    pax += PaxRecord("size", std::to_string(header.size));
  }
  if (header.uid > kMaxOctal7) pax += PaxRecord("uid", std::to_string(header.uid));
  if (header.gid > kMaxOctal7) pax += PaxRecord("gid", std::to_string(header.gid));
  if (!pax.empty()) {
    // The extended header's own name is fixed, so it adds nothing that
    // depends on the machine (GNU tar puts a pid in it by default).
    TarWriteHeader x;
    x.type = kPaxHeader;
    x.mode = 0644;
    x.size = pax.size();
    std::string block = UstarBlock(x, "PaxHeader", "", "");
    if (auto s = sink_(block); !s) return s;
    if (auto s = sink_(pax + Padding(pax.size())); !s) return s;
  }
  if (auto s = sink_(UstarBlock(header, name, prefix, header.linkname)); !s) return s;
  left_ = header.type == TarEntryType::kFile ? header.size : 0;
  written_ = 0;
  return Ok();
}

Status TarWriter::Write(std::string_view data) {
  if (data.size() > left_) return Error("tar: more bytes than the entry's size");
  left_ -= data.size();
  written_ += data.size();
  return sink_(data);
}

Status TarWriter::EndEntry() {
  if (left_ != 0) {
    return Error("tar: entry ended " + std::to_string(left_) + " bytes short of its size");
  }
  if (written_ % kBlock != 0) {
    if (auto s = sink_(Padding(written_)); !s) return s;
  }
  written_ = 0;
  return Ok();
}

Status TarWriter::Finish() {
  if (finished_) return Ok();
  if (auto s = EndEntry(); !s) return s;
  finished_ = true;
  return sink_(std::string(2 * kBlock, '\0'));
}

}  // namespace podvisor::image
