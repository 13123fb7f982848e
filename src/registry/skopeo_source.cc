// RegistrySource over skopeo (puller.h): `skopeo inspect --raw` for the
// manifest a reference names, the image proxy for the rest, both with the
// candidate's credentials as a memfd auth file.
#include <memory>
#include <optional>
#include <thread>

#include "registry/image_proxy.h"
#include "registry/puller.h"

namespace podvisor::registry {
namespace {

class SkopeoSource : public RegistrySource {
 public:
  SkopeoSource(ProxyOptions options, Fd auth)
      : options_(std::move(options)), auth_(std::move(auth)) {
    options_.auth_fd = auth_ ? auth_.get() : -1;
  }

  // The proxy's start (a Go program's, then Initialize) overlaps the
  // inspect: a cold pull waits for one skopeo start, not two in a row.
  // Should it fail, OpenManifest starts it again and reports why.
  Result<std::string> TopManifest(const std::string& reference) override {
    std::optional<Result<ImageProxy>> started;
    std::thread starter;
    if (!proxy_)
      starter = std::thread([this, &started] { started.emplace(ImageProxy::Start(options_)); });
    auto top = FetchTopManifest(options_, reference);
    if (starter.joinable()) starter.join();
    if (started && *started) proxy_ = std::make_unique<ImageProxy>(std::move(**started));
    return top;
  }

  Result<ProxyManifest> OpenManifest(const std::string& reference) override {
    if (!proxy_) {
      auto proxy = ImageProxy::Start(options_);
      if (!proxy) return proxy.take_error();
      proxy_ = std::make_unique<ImageProxy>(std::move(*proxy));
    }
    auto image = proxy_->OpenImage("docker://" + reference);
    if (!image) return image.take_error();
    image_ = *image;
    return proxy_->GetManifest(image_);
  }

  Result<BlobStream> OpenBlob(const image::Descriptor& blob) override {
    if (!proxy_ || image_ == 0) return Error("no image is open");
    auto pipe = proxy_->GetBlob(image_, blob.digest.ToString(),
                                static_cast<uint64_t>(std::max<int64_t>(blob.size, 0)));
    if (!pipe) return pipe.take_error();
    return BlobStream{.fd = std::move(pipe->fd), .pipe_id = pipe->pipe_id};
  }

  Status FinishBlob(uint32_t pipe_id) override { return proxy_->FinishPipe(pipe_id); }

 private:
  ProxyOptions options_;
  Fd auth_;
  std::unique_ptr<ImageProxy> proxy_;
  uint64_t image_ = 0;
};

}  // namespace

SourceFactory SkopeoSourceFactory(const PullRequest& request, const ImageName& name) {
  ProxyOptions base{.skopeo = request.skopeo};
  if (request.registries_conf.from_environment)
    base.registries_conf = request.registries_conf.main_file;
  return [base,
          name](const RegistryCredential* credential) -> Result<std::unique_ptr<RegistrySource>> {
    ProxyOptions options = base;
    Fd auth;
    if (credential != nullptr) {
      auto memfd = CredentialMemfd(*credential, name);
      if (!memfd) return memfd.take_error();
      auth = std::move(*memfd);
      options.secrets = CredentialSecrets(*credential);
    }
    return std::unique_ptr<RegistrySource>(new SkopeoSource(std::move(options), std::move(auth)));
  };
}

}  // namespace podvisor::registry
