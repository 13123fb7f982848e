#include "image/tar_reader.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace podvisor::image {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kInBuffer = 64 * 1024;
// pax and GNU long-name records are names and xattrs: a few KiB at most.
// Anything bigger is not a layer we want to buffer.
constexpr uint64_t kRecordMax = 1 << 20;

class Plain final : public Decompressor {
 public:
  explicit Plain(ByteSource source) : source_(std::move(source)) {}
  Result<std::size_t> Read(char* buf, std::size_t size) override { return source_(buf, size); }

 private:
  ByteSource source_;
};

class Gzip final : public Decompressor {
 public:
  explicit Gzip(ByteSource source) : source_(std::move(source)), in_(kInBuffer) {
    // 15 + 16: a gzip wrapper, nothing else (the media type said gzip).
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  }
  ~Gzip() override {
    if (ok_) inflateEnd(&z_);
  }
  Gzip(const Gzip&) = delete;
  Gzip& operator=(const Gzip&) = delete;

  Result<std::size_t> Read(char* buf, std::size_t size) override {
    if (!ok_) return Error("zlib: out of memory");
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = static_cast<uInt>(size);
    while (z_.avail_out == size) {
      if (z_.avail_in == 0) {
        if (eof_) {
          if (!member_ended_) return Error("gzip stream is truncated");
          return std::size_t{0};
        }
        auto n = source_(in_.data(), in_.size());
        if (!n) return n.take_error();
        if (*n == 0) {
          eof_ = true;
          continue;
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(*n);
      }
      if (member_ended_) {
        // Another gzip member follows (pigz and concatenated streams).
        inflateReset(&z_);
        member_ended_ = false;
      }
      int r = inflate(&z_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) {
        member_ended_ = true;
      } else if (r != Z_OK && r != Z_BUF_ERROR) {
        return Error(std::string("gzip: ") + (z_.msg ? z_.msg : "corrupt data"));
      }
    }
    return size - z_.avail_out;
  }

 private:
  ByteSource source_;
  std::vector<char> in_;
  z_stream z_{};
  bool ok_ = false;
  bool eof_ = false;
  bool member_ended_ = false;
};

class Zstd final : public Decompressor {
 public:
  explicit Zstd(ByteSource source)
      : source_(std::move(source)), in_(kInBuffer), ctx_(ZSTD_createDCtx()) {}
  ~Zstd() override { ZSTD_freeDCtx(ctx_); }
  Zstd(const Zstd&) = delete;
  Zstd& operator=(const Zstd&) = delete;

  Result<std::size_t> Read(char* buf, std::size_t size) override {
    if (!ctx_) return Error("zstd: out of memory");
    ZSTD_outBuffer out{buf, size, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size) {
        if (eof_) {
          if (frame_left_ != 0) return Error("zstd stream is truncated");
          return std::size_t{0};
        }
        auto n = source_(in_.data(), in_.size());
        if (!n) return n.take_error();
        if (*n == 0) {
          eof_ = true;
          continue;
        }
        input_ = ZSTD_inBuffer{in_.data(), *n, 0};
      }
      frame_left_ = ZSTD_decompressStream(ctx_, &out, &input_);
      if (ZSTD_isError(frame_left_)) {
        return Error(std::string("zstd: ") + ZSTD_getErrorName(frame_left_));
      }
    }
    return out.pos;
  }

 private:
  ByteSource source_;
  std::vector<char> in_;
  ZSTD_DCtx* ctx_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  std::size_t frame_left_ = 0;  // 0: at a frame boundary
  bool eof_ = false;
};

// A header's numeric field: octal digits (space or NUL terminated), or
// base-256 when the top bit of the first byte is set (GNU, for values
// octal cannot hold: big files, large uids).
bool Number(const char* field, std::size_t size, uint64_t& out) {
  out = 0;
  auto first = static_cast<unsigned char>(field[0]);
  if (first & 0x80) {
    if (first & 0x40) return false;  // negative
    out = first & 0x3f;
    for (std::size_t i = 1; i < size; ++i) {
      if (out >> 56) return false;
      out = (out << 8) | static_cast<unsigned char>(field[i]);
    }
    return true;
  }
  std::size_t i = 0;
  while (i < size && field[i] == ' ') ++i;
  for (; i < size && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (out >> 60) return false;
    out = (out << 3) | static_cast<uint64_t>(field[i] - '0');
  }
  return i == size || field[i] == ' ' || field[i] == '\0';
}

std::string Field(const char* field, std::size_t size) {
  return std::string(field, strnlen(field, size));
}

bool ChecksumMatches(const char* h) {
  uint64_t stored = 0;
  if (!Number(h + 148, 8, stored)) return false;
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    bool in_field = i >= 148 && i < 156;
    unsigned char u = in_field ? ' ' : static_cast<unsigned char>(h[i]);
    unsigned_sum += u;
    signed_sum += in_field ? ' ' : static_cast<signed char>(h[i]);
  }
  // Some old writers summed signed chars; both are accepted, as by GNU tar.
  return stored == unsigned_sum || static_cast<int64_t>(stored) == signed_sum;
}

// Which fields an extended header set: they win over the ustar header's.
struct Overrides {
  bool path = false, link = false, size = false, uid = false, gid = false, mtime = false;
};

// Applies the records of a pax extended header ("LEN key=value\n"...).
Status ApplyPax(std::string_view records, TarHeader& h, Overrides& seen) {
  while (!records.empty()) {
    std::size_t space = records.find(' ');
    uint64_t len = 0;
    if (space == std::string_view::npos || space == 0) return Error("malformed pax header");
    for (char ch : records.substr(0, space)) {
      if (ch < '0' || ch > '9' || len > kRecordMax) return Error("malformed pax header");
      len = len * 10 + static_cast<uint64_t>(ch - '0');
    }
    if (len <= space + 1 || len > records.size() || records[len - 1] != '\n') {
      return Error("malformed pax header");
    }
    std::string_view record = records.substr(space + 1, len - space - 2);
    records.remove_prefix(len);
    std::size_t eq = record.find('=');
    if (eq == std::string_view::npos) return Error("malformed pax header");
    std::string_view key = record.substr(0, eq);
    std::string value(record.substr(eq + 1));
    auto decimal = [&value](uint64_t& out) {
      out = 0;
      std::size_t i = 0;
      for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
        out = out * 10 + static_cast<uint64_t>(value[i] - '0');
      }
      return i > 0;
    };
    if (key == "path") {
      h.path = value;
      seen.path = true;
    } else if (key == "linkpath") {
      h.link = value;
      seen.link = true;
    } else if (key == "size") {
      if (!decimal(h.size)) return Error("malformed pax size");
      seen.size = true;
    } else if (key == "uid") {
      if (!decimal(h.uid)) return Error("malformed pax uid");
      seen.uid = true;
    } else if (key == "gid") {
      if (!decimal(h.gid)) return Error("malformed pax gid");
      seen.gid = true;
    } else if (key == "mtime") {
      seen.mtime = true;
      uint64_t sec = 0;
      if (decimal(sec)) h.mtime_sec = static_cast<int64_t>(sec);
      if (std::size_t dot = value.find('.'); dot != std::string::npos) {
        std::string frac = value.substr(dot + 1, 9);
        frac.resize(9, '0');
        h.mtime_nsec = std::strtol(frac.c_str(), nullptr, 10);
      }
    } else if (key.rfind("SCHILY.xattr.", 0) == 0) {
      h.xattrs.emplace_back(std::string(key.substr(13)), std::move(value));
    }
  }
  return Ok();
}

}  // namespace

std::unique_ptr<Decompressor> MakeDecompressor(LayerCompression compression, ByteSource source) {
  switch (compression) {
    case LayerCompression::kGzip:
      return std::make_unique<Gzip>(std::move(source));
    case LayerCompression::kZstd:
      return std::make_unique<Zstd>(std::move(source));
    case LayerCompression::kNone:
      break;
  }
  return std::make_unique<Plain>(std::move(source));
}

Status TarReader::ReadExact(char* buf, std::size_t size) {
  while (size > 0) {
    auto n = in_.Read(buf, size);
    if (!n) return n.take_error();
    if (*n == 0) return Error("the tar stream is truncated");
    buf += *n;
    size -= *n;
  }
  return Ok();
}

Status TarReader::Skip(uint64_t bytes) {
  std::array<char, 16 * 1024> sink{};
  while (bytes > 0) {
    std::size_t take = static_cast<std::size_t>(std::min<uint64_t>(bytes, sink.size()));
    if (auto s = ReadExact(sink.data(), take); !s) return s;
    bytes -= take;
  }
  return Ok();
}

Result<std::string> TarReader::ReadBlob(uint64_t size) {
  if (size > kRecordMax) return Error("a tar extended header is larger than 1 MiB");
  std::string out(static_cast<std::size_t>(size), '\0');
  if (auto s = ReadExact(out.data(), out.size()); !s) return s.take_error();
  if (auto s = Skip((kBlock - size % kBlock) % kBlock); !s) return s.take_error();
  return out;
}

Result<std::size_t> TarReader::ReadData(char* buf, std::size_t size) {
  if (data_left_ == 0) return std::size_t{0};
  std::size_t take = static_cast<std::size_t>(std::min<uint64_t>(size, data_left_));
  auto n = in_.Read(buf, take);
  if (!n) return n.take_error();
  if (*n == 0) return Error("the tar stream is truncated");
  data_left_ -= *n;
  return *n;
}

namespace {

// The entry types a layer holds, by their ustar typeflag; nothing for
// the others.
std::optional<TarHeader::Type> EntryType(char typeflag) {
  switch (typeflag) {
    case '0':
    case '\0':
    case '7':
      return TarHeader::Type::kFile;
    case '1':
      return TarHeader::Type::kHardLink;
    case '2':
      return TarHeader::Type::kSymlink;
    case '3':
      return TarHeader::Type::kCharDevice;
    case '4':
      return TarHeader::Type::kBlockDevice;
    case '5':
      return TarHeader::Type::kDirectory;
    case '6':
      return TarHeader::Type::kFifo;
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<std::optional<TarHeader>> TarReader::Next() {
  if (ended_) return std::optional<TarHeader>();
  if (auto s = Skip(data_left_ + padding_); !s) return s.take_error();
  data_left_ = padding_ = 0;
  TarHeader h;
  Overrides seen;
  for (;;) {
    std::array<char, kBlock> block{};
    // The end: a zero block (the second one is not required, as with GNU
    // tar), or the end of the stream at a header boundary.
    auto first = in_.Read(block.data(), block.size());
    if (!first) return first.take_error();
    if (*first == 0) {
      ended_ = true;
      return std::optional<TarHeader>();
    }
    if (*first < kBlock) {
      if (auto s = ReadExact(block.data() + *first, kBlock - *first); !s) return s.take_error();
    }
    const char* b = block.data();
    if (std::all_of(block.begin(), block.end(), [](char c) { return c == 0; })) {
      ended_ = true;
      return std::optional<TarHeader>();
    }
    if (!ChecksumMatches(b)) return Error("a tar header's checksum does not match");
    uint64_t size = 0, mode = 0, uid = 0, gid = 0, mtime = 0, major = 0, minor = 0;
    if (!Number(b + 124, 12, size) || !Number(b + 100, 8, mode) || !Number(b + 108, 8, uid) ||
        !Number(b + 116, 8, gid) || !Number(b + 136, 12, mtime)) {
      return Error("a tar header has a malformed number");
    }
    char type = b[156];
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      auto record = ReadBlob(size);
      if (!record) return record.take_error();
      if (type == 'x') {
        if (auto s = ApplyPax(*record, h, seen); !s) return s.take_error();
      } else if (type == 'L') {
        h.path = Field(record->data(), record->size());
        seen.path = true;
      } else if (type == 'K') {
        h.link = Field(record->data(), record->size());
        seen.link = true;
      }
      continue;  // 'g': global pax headers carry nothing a layer needs
    }
    bool ustar = std::memcmp(b + 257, "ustar\0", 6) == 0;
    if (!seen.path) {
      h.path = Field(b, 100);
      std::string prefix = ustar ? Field(b + 345, 155) : std::string();
      if (!prefix.empty()) h.path = prefix + "/" + h.path;
    }
    if (!seen.link) h.link = Field(b + 157, 100);
    if (!seen.size) h.size = size;
    if (!seen.uid) h.uid = uid;
    if (!seen.gid) h.gid = gid;
    if (!seen.mtime) h.mtime_sec = static_cast<int64_t>(mtime);
    h.mode = static_cast<mode_t>(mode & 07777);
    Number(b + 329, 8, major);
    Number(b + 337, 8, minor);
    h.dev_major = static_cast<unsigned>(major);
    h.dev_minor = static_cast<unsigned>(minor);
    std::optional<TarHeader::Type> entry_type = EntryType(type);
    if (!entry_type) {
      // Volume labels, sparse and multi-volume entries: not in layers
      // image tools write; their data is skipped, the entry left out.
      if (auto s = Skip(h.size + (kBlock - h.size % kBlock) % kBlock); !s) return s.take_error();
      h = TarHeader();
      seen = Overrides();
      continue;
    }
    h.type = *entry_type;
    // Regular files carry data, and hard links may (pax allows a link
    // with data, which libarchive writes); others have none whatever
    // their size field says.
    bool has_data = h.type == TarHeader::Type::kFile || h.type == TarHeader::Type::kHardLink;
    uint64_t data = has_data ? h.size : 0;
    if (h.type != TarHeader::Type::kFile) h.size = 0;
    data_left_ = data;
    padding_ = (kBlock - data % kBlock) % kBlock;
    return std::optional<TarHeader>(std::move(h));
  }
}

}  // namespace podvisor::image
