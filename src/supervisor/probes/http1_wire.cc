#include "supervisor/probes/http1_wire.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace podvisor::supervisor::probes {
namespace {

// Bounds what a broken or hostile server can make us buffer.
constexpr std::size_t kHeadMax = 64 * 1024;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool HasHeader(const HttpRequest& request, const char* name) {
  return std::any_of(request.headers.begin(), request.headers.end(),
                     [name](const auto& h) { return strcasecmp(h.first.c_str(), name) == 0; });
}

bool ParseNumber(std::string_view s, int base, uint64_t& out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string HttpTarget::Authority() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string FormatHttp1Request(const HttpRequest& request, const HttpTarget& target) {
  std::string out = request.post ? "POST " : "GET ";
  out.append(target.path).append(" HTTP/1.1\r\n");
  if (!HasHeader(request, "Host")) out.append("Host: ").append(target.Authority()).append("\r\n");
  for (const auto& [name, value] : request.headers) {
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (!HasHeader(request, "Accept")) out.append("Accept: */*\r\n");
  // One request per connection, as the kubelet's prober: the server may
  // close as soon as it has answered.
  out.append("Connection: close\r\n");
  if (request.post) out.append("Content-Length: ").append(std::to_string(request.body.size()));
  if (request.post) out.append("\r\n");
  out.append("\r\n");
  if (request.post) out.append(request.body);
  return out;
}

void Http1ResponseParser::Keep(std::string_view data) {
  std::string& body = response_.body;
  if (body.size() < kBodyMax) body.append(data.substr(0, kBodyMax - body.size()));
  // A probe reports no more than this: the rest need not be read.
  if (body.size() >= kBodyMax) state_ = State::kDone;
}

Status Http1ResponseParser::HeadersEnded() {
  long status = response_.status;
  if (status >= 100 && status < 200) {
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    response_.headers.clear();
    response_.status = 0;
    state_ = State::kStatusLine;
    return Ok();
  }
  if (status == 204 || status == 304) {
    state_ = State::kDone;
    return Ok();
  }
  if (chunked_) {
    state_ = State::kChunkSize;
  } else if (has_length_ && left_ == 0) {
    state_ = State::kDone;
  } else {
    state_ = State::kBody;
  }
  return Ok();
}

Status Http1ResponseParser::Line(std::string_view line) {
  if (line.size() >= 1 && line.back() == '\r') line.remove_suffix(1);
  switch (state_) {
    case State::kStatusLine: {
      // "HTTP/1.1 200 OK"
      if (line.rfind("HTTP/", 0) != 0 || line.size() < 12 || line[8] != ' ') {
        return Error("malformed HTTP status line \"" + std::string(line.substr(0, 80)) + "\"");
      }
      uint64_t code = 0;
      if (!ParseNumber(line.substr(9, 3), 10, code) || (line.size() > 12 && line[12] != ' ')) {
        return Error("malformed HTTP status line \"" + std::string(line.substr(0, 80)) + "\"");
      }
      response_.status = static_cast<long>(code);
      chunked_ = has_length_ = false;
      left_ = 0;
      state_ = State::kHeaders;
      return Ok();
    }
    case State::kHeaders:
    case State::kTrailers: {
      if (line.empty()) {
        if (state_ == State::kTrailers) {
          state_ = State::kDone;
          return Ok();
        }
        return HeadersEnded();
      }
      std::size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        return Error("malformed HTTP header line \"" + std::string(line.substr(0, 80)) + "\"");
      }
      std::string name = Lower(line.substr(0, colon));
      std::string_view value = Trim(line.substr(colon + 1));
      if (state_ == State::kHeaders && name == "transfer-encoding") {
        chunked_ = Lower(value).find("chunked") != std::string::npos;
      } else if (state_ == State::kHeaders && name == "content-length") {
        if (!ParseNumber(value, 10, left_)) return Error("malformed Content-Length");
        has_length_ = true;
      }
      response_.headers.emplace_back(std::move(name), std::string(value));
      return Ok();
    }
    case State::kChunkSize: {
      uint64_t size = 0;
      if (!ParseNumber(line.substr(0, line.find(';')), 16, size)) {
        return Error("malformed chunk size");
      }
      left_ = size;
      state_ = size == 0 ? State::kTrailers : State::kChunkData;
      return Ok();
    }
    case State::kChunkEnd:
      if (!line.empty()) return Error("malformed chunk end");
      state_ = State::kChunkSize;
      return Ok();
    case State::kBody:
    case State::kChunkData:
    case State::kDone:
      break;
  }
  return Ok();
}

Status Http1ResponseParser::Feed(std::string_view data) {
  while (!data.empty() && state_ != State::kDone) {
    if (state_ == State::kBody || state_ == State::kChunkData) {
      std::size_t take = data.size();
      if (state_ == State::kChunkData || has_length_) {
        take = static_cast<std::size_t>(std::min<uint64_t>(take, left_));
        left_ -= take;
      }
      Keep(data.substr(0, take));
      data.remove_prefix(take);
      if (state_ == State::kDone) break;
      if (left_ == 0 && state_ == State::kChunkData) state_ = State::kChunkEnd;
      if (left_ == 0 && state_ == State::kBody && has_length_) state_ = State::kDone;
      continue;
    }
    std::size_t nl = data.find('\n');
    std::size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
    head_bytes_ += take;
    if (head_bytes_ > kHeadMax) return Error("HTTP response headers larger than 64 KiB");
    pending_.append(data.substr(0, take));
    data.remove_prefix(take);
    if (nl == std::string_view::npos) break;
    pending_.pop_back();  // the '\n'
    std::string line = std::move(pending_);
    pending_.clear();
    if (auto s = Line(line); !s) return s;
  }
  return Ok();
}

Status Http1ResponseParser::Eof() {
  if (state_ == State::kDone) return Ok();
  if (state_ == State::kBody && !has_length_) {
    state_ = State::kDone;
    return Ok();
  }
  if (state_ == State::kStatusLine && response_.status == 0 && head_bytes_ == 0) {
    return Error("the server closed the connection without answering");
  }
  return Error("the server closed the connection in the middle of its answer");
}

}  // namespace podvisor::supervisor::probes
