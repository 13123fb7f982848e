#include "image/blob_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <system_error>

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunk = 64 * 1024;
// gzip framing for deflateInit2: 15-bit window plus 16.
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemLevel = 8;

}  // namespace

struct BlobWriter::State {
  fs::path dir;      // blobs/sha256
  fs::path scratch;  // the file being written
  Fd fd;
  DigestHasher stored;
  DigestHasher uncompressed;
  int64_t size = 0;
  bool gzip = false;
  z_stream zs{};
  bool committed = false;

  State(DigestHasher s, DigestHasher u) : stored(std::move(s)), uncompressed(std::move(u)) {}
  ~State() {
    if (gzip) deflateEnd(&zs);
    if (!committed && !scratch.empty()) ::unlink(scratch.c_str());
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

BlobWriter::BlobWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
BlobWriter::BlobWriter(BlobWriter&&) noexcept = default;
BlobWriter& BlobWriter::operator=(BlobWriter&&) noexcept = default;
BlobWriter::~BlobWriter() = default;

Result<BlobWriter> BlobWriter::Create(const fs::path& layout_dir, bool gzip) {
  auto stored = DigestHasher::Create("sha256");
  auto uncompressed = DigestHasher::Create("sha256");
  if (!stored) return stored.take_error();
  if (!uncompressed) return uncompressed.take_error();
  auto state = std::make_unique<State>(std::move(*stored), std::move(*uncompressed));
  state->dir = layout_dir / "blobs" / "sha256";
  std::error_code ec;
  fs::create_directories(state->dir, ec);
  if (ec) return Error("creating " + state->dir.string() + ": " + ec.message(), ec.value());
  std::string templ = (state->dir / ".scratch-XXXXXX").string();
  int fd = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("creating a scratch blob in " + state->dir.string());
  state->fd = Fd(fd);
  state->scratch = templ;
  if (gzip) {
    if (deflateInit2(&state->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, kMemLevel,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      return Error("zlib: deflateInit2 failed");
    }
    state->gzip = true;
  }
  return BlobWriter(std::move(state));
}

Status BlobWriter::Store(std::string_view bytes) {
  State& st = *state_;
  st.stored.Update(bytes.data(), bytes.size());
  st.size += static_cast<int64_t>(bytes.size());
  while (!bytes.empty()) {
    ssize_t n = ::write(st.fd.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("writing " + st.scratch.string());
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Ok();
}

Status BlobWriter::Write(std::string_view data) {
  State& st = *state_;
  st.uncompressed.Update(data.data(), data.size());
  if (!st.gzip) return Store(data);
  std::string out(kChunk, '\0');
  st.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  st.zs.avail_in = static_cast<uInt>(data.size());
  while (st.zs.avail_in > 0) {
    st.zs.next_out = reinterpret_cast<Bytef*>(out.data());
    st.zs.avail_out = static_cast<uInt>(out.size());
    if (deflate(&st.zs, Z_NO_FLUSH) == Z_STREAM_ERROR) return Error("zlib: deflate failed");
    if (auto s = Store(std::string_view(out.data(), out.size() - st.zs.avail_out)); !s) return s;
  }
  return Ok();
}

Result<WrittenBlob> BlobWriter::Commit() {
  State& st = *state_;
  if (st.gzip) {
    std::string out(kChunk, '\0');
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      st.zs.next_out = reinterpret_cast<Bytef*>(out.data());
      st.zs.avail_out = static_cast<uInt>(out.size());
      rc = deflate(&st.zs, Z_FINISH);
      if (rc == Z_STREAM_ERROR) return Error("zlib: deflate failed");
      if (auto s = Store(std::string_view(out.data(), out.size() - st.zs.avail_out)); !s) {
        return s.take_error();
      }
    }
  }
  WrittenBlob blob;
  blob.digest = Digest{"sha256", st.stored.FinishHex()};
  blob.size = st.size;
  blob.diff_id = Digest{"sha256", st.uncompressed.FinishHex()};
  if (!st.gzip) blob.diff_id = blob.digest;
  st.fd.Reset();
  fs::path final_path = st.dir / blob.digest.hex;
  // Not common/file_io.h's WriteFileAtomic: the blob was streamed, and its
  // name (the digest) is known only now that the last byte is in.
  if (::rename(st.scratch.c_str(), final_path.c_str()) != 0) {
    return Error::FromErrno("renaming " + st.scratch.string() + " to " + final_path.string());
  }
  st.committed = true;
  return blob;
}

Result<WrittenBlob> WriteBlob(const fs::path& layout_dir, std::string_view data) {
  auto writer = BlobWriter::Create(layout_dir, /*gzip=*/false);
  if (!writer) return writer.take_error();
  if (auto s = writer->Write(data); !s) return s.take_error();
  return writer->Commit();
}

}  // namespace podvisor::image
