#include "gateway/upstream.h"

#include <utility>

namespace frugal::gateway {
namespace {

class HttpClientUpstream final : public Upstream {
 public:
  explicit HttpClientUpstream(http::ClientOptions options) : client_(std::move(options)) {}
  uint64_t Send(http::ClientRequest request, http::ClientCallbacks callbacks) override {
    return client_.Send(std::move(request), std::move(callbacks));
  }
  void Cancel(uint64_t id) override { client_.Cancel(id); }

 private:
  http::Client client_;
};

}  // namespace

std::unique_ptr<Upstream> HttpUpstream(http::ClientOptions options) {
  return std::make_unique<HttpClientUpstream>(std::move(options));
}

}  // namespace frugal::gateway
