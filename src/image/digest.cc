#include "image/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

namespace podvisor::image {

struct DigestHasher::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() {
    if (md) EVP_MD_CTX_free(md);
  }
};

Result<Digest> ParseDigest(std::string_view text) {
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Error("digest \"" + std::string(text) + "\" is not ALGORITHM:HEX");
  }
  Digest d{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  std::size_t want = d.algorithm == "sha256" ? 64 : d.algorithm == "sha512" ? 128 : 0;
  if (want == 0) {
    return Error("digest \"" + std::string(text) + "\": unsupported algorithm \"" + d.algorithm +
                 "\" (sha256 and sha512 are)");
  }
  bool hex = std::all_of(d.hex.begin(), d.hex.end(),
                         [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (d.hex.size() != want || !hex) {
    return Error("digest \"" + std::string(text) + "\": expected " + std::to_string(want) +
                 " lowercase hex digits");
  }
  return d;
}

DigestHasher::DigestHasher(std::unique_ptr<Ctx> ctx) : ctx_(std::move(ctx)) {}
DigestHasher::DigestHasher(DigestHasher&&) noexcept = default;
DigestHasher& DigestHasher::operator=(DigestHasher&&) noexcept = default;
DigestHasher::~DigestHasher() = default;

Result<DigestHasher> DigestHasher::Create(std::string_view algorithm) {
  // Explicitly, before the first digest: it detects the CPU's SHA and AVX
  // features, which the static build no longer does before main
  // (src/static_openssl.cc). Once per process; cheap after that.
  if (OPENSSL_init_crypto(0, nullptr) != 1) return Error("initialising OpenSSL");
  const EVP_MD* md = algorithm == "sha256"   ? EVP_sha256()
                     : algorithm == "sha512" ? EVP_sha512()
                                             : nullptr;
  if (!md) return Error("unsupported digest algorithm \"" + std::string(algorithm) + "\"");
  auto ctx = std::make_unique<Ctx>();
  ctx->md = EVP_MD_CTX_new();
  if (!ctx->md || EVP_DigestInit_ex(ctx->md, md, nullptr) != 1) {
    return Error("initialising " + std::string(algorithm) + " (OpenSSL)");
  }
  return DigestHasher(std::move(ctx));
}

void DigestHasher::Update(const void* data, std::size_t size) {
  EVP_DigestUpdate(ctx_->md, data, size);
}

std::string DigestHasher::FinishHex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, out, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 0xf];
  }
  return hex;
}

std::string HashHex(std::string_view algorithm, std::string_view data) {
  auto hasher = DigestHasher::Create(algorithm);
  if (!hasher) return {};
  hasher->Update(data.data(), data.size());
  return hasher->FinishHex();
}

Status CheckBlob(const Digest& expected, int64_t expected_size, const std::string& actual_hex,
                 uint64_t actual_size) {
  // The digest first: a truncated or corrupt blob is reported by what it
  // is supposed to be, which is what the user can look up.
  if (actual_hex != expected.hex) {
    return Error("blob " + expected.ToString() + " is corrupt: its content hashes to " +
                 expected.algorithm + ":" + actual_hex);
  }
  if (expected_size >= 0 && actual_size != static_cast<uint64_t>(expected_size)) {
    return Error("blob " + expected.ToString() + " has " + std::to_string(actual_size) +
                 " bytes, the descriptor says " + std::to_string(expected_size));
  }
  return Ok();
}

}  // namespace podvisor::image
