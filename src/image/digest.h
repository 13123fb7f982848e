// Content digests of OCI blobs ("sha256:<64 lowercase hex>"). Every blob
// podvisor reads from an image layout is checked against the digest and
// size its descriptor names before it is trusted: the digest is the only
// thing tying a layout's files to the manifest the user picked.
//
// A digest also names a file (blobs/<alg>/<hex>) and a cache directory, so
// parsing is strict: only sha256 and sha512 with the exact hex length are
// accepted, which also keeps '/' and ".." out of those paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::image {

struct Digest {
  std::string algorithm;  // "sha256" or "sha512"
  std::string hex;        // lowercase
  std::string ToString() const { return algorithm + ":" + hex; }
  friend bool operator==(const Digest&, const Digest&) = default;
};

Result<Digest> ParseDigest(std::string_view text);

// Incremental hashing (OpenSSL's EVP): feed bytes as they stream by, then
// compare. Layers are hashed while libarchive unpacks them, so each blob is
// read once.
class DigestHasher {
 public:
  static Result<DigestHasher> Create(std::string_view algorithm);
  DigestHasher(DigestHasher&&) noexcept;
  DigestHasher& operator=(DigestHasher&&) noexcept;
  ~DigestHasher();

  void Update(const void* data, std::size_t size);
  // The lowercase hex of everything fed so far; the hasher is spent after.
  std::string FinishHex();

 private:
  struct Ctx;
  explicit DigestHasher(std::unique_ptr<Ctx> ctx);
  std::unique_ptr<Ctx> ctx_;
};

// Hex digest of `data` ("sha256" or "sha512").
std::string HashHex(std::string_view algorithm, std::string_view data);

// "blob sha256:…: size 12 does not match the descriptor's 13" style checks,
// shared by whole-blob reads and streamed layers.
Status CheckBlob(const Digest& expected, int64_t expected_size, const std::string& actual_hex,
                 uint64_t actual_size);

}  // namespace podvisor::image
