// Kubernetes resource quantities ("100m", "1.5", "128Mi", "1G", "1e3").
//
// Stored as an exact count of milli-units, the finest precision Kubernetes
// keeps for the resources podvisor enforces (cpu in millicores, memory in
// bytes). Values whose milli-count would not fit in 63 bits (above about
// 8 PiB) are rejected rather than silently clamped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::pod {

class Quantity {
 public:
  Quantity() = default;
  // How the quantity was written; ToString() keeps the family, as the API
  // server's canonical form does ("1024Mi" -> "1Gi", "1000" -> "1k").
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  static Quantity FromMilli(int64_t milli, Format f = Format::kDecimalSI) {
    return Quantity(milli, f);
  }
  static Quantity FromValue(int64_t value, Format f = Format::kDecimalSI) {
    return Quantity(value * 1000, f);
  }

  // Parses the Kubernetes quantity syntax. The error message is the detail
  // kubectl prints after "Invalid value: ...".
  static Result<Quantity> Parse(std::string_view text);

  int64_t milli() const { return milli_; }
  // The integer value, rounded up as Kubernetes' Quantity.Value() does
  // ("100m" memory is 1 byte).
  int64_t value() const { return milli_ >= 0 ? (milli_ + 999) / 1000 : milli_ / 1000; }
  bool is_zero() const { return milli_ == 0; }

  // A canonical spelling: "500m", "2", "128Mi", "1G" where exact.
  std::string ToString() const;

  Format format() const { return format_; }

  // Equality and order compare amounts only: "1Gi" == "1024Mi".
  friend bool operator==(Quantity a, Quantity b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(Quantity a, Quantity b) { return a.milli_ <=> b.milli_; }
  Quantity operator+(Quantity o) const { return Quantity(milli_ + o.milli_, format_); }
  Quantity& operator+=(Quantity o) {
    milli_ += o.milli_;
    return *this;
  }

 private:
  Quantity(int64_t milli, Format f) : milli_(milli), format_(f) {}
  int64_t milli_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace podvisor::pod
