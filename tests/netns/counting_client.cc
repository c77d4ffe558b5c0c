#include "tests/netns/counting_client.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace ps::testing {
namespace {

// Whether every element of [begin, end) equals the first.
bool Uniform(std::vector<float>::const_iterator begin,
             std::vector<float>::const_iterator end) {
  return std::all_of(begin, end, [&](float v) { return v == *begin; });
}

}  // namespace

int CountingClient(const ClientOptions& options, LineChannel& channel) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!channel.Send(client.ok() ? "connected"
                                : "error " + client.status().ToString())
           .ok() ||
      !client.ok()) {
    return 1;
  }
  const std::vector<float> minus_one(kCountingTableSize, -1.0f);
  std::vector<float> values(kCountingTableSize);
  while (true) {
    absl::StatusOr<std::string> line = channel.Receive(absl::Hours(1));
    if (!line.ok()) return 0;  // the test is done with us
    const std::vector<std::string> words = absl::StrSplit(*line, ' ');
    int n = 0;
    std::string reply;
    if (words[0] == "push" && absl::SimpleAtoi(words[1], &n)) {
      reply = "ok";
      for (int i = 0; i < n; ++i) {
        const absl::Time start = absl::Now();
        absl::Status s = (*client)->PushDense(0, 0, minus_one).Wait();
        if (!s.ok()) {
          reply = absl::StrCat(
              "error ", absl::StatusCodeToString(s.code()), " ",
              absl::ToInt64Milliseconds(absl::Now() - start), " ", s.message());
          break;
        }
      }
    } else if (words[0] == "pull") {
      absl::Status s = (*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait();
      if (!s.ok()) {
        reply = "error " + s.ToString();
      } else if (Uniform(values.begin(), values.end())) {
        reply = absl::StrCat("value ", values[0]);
      } else if (const auto half = values.begin() + values.size() / 2;
                 Uniform(values.begin(), half) &&
                 Uniform(half, values.end())) {
        reply = absl::StrCat("halves ", values.front(), " ", values.back());
      } else {
        reply = absl::StrCat("mixed first ", values.front(), " last ",
                             values.back());
      }
    } else if (words[0] == "p50" && absl::SimpleAtoi(words[1], &n) && n > 0) {
      std::vector<int64_t> us;
      for (int i = 0; i < n; ++i) {
        const absl::Time start = absl::Now();
        if (!(*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait().ok()) {
          break;
        }
        us.push_back(absl::ToInt64Microseconds(absl::Now() - start));
      }
      std::sort(us.begin(), us.end());
      reply = us.size() == static_cast<size_t>(n)
                  ? absl::StrCat("p50 ", us[us.size() / 2])
                  : "error a pull failed";
    } else {
      reply = "error unknown command: " + *line;
    }
    if (!channel.Send(reply).ok()) return 0;
  }
}

std::string Ask(HostProcess& client, const std::string& command,
                absl::Duration timeout) {
  if (!command.empty()) {
    absl::Status sent = client.channel().Send(command);
    if (!sent.ok()) return sent.ToString();
  }
  absl::StatusOr<std::string> reply = client.channel().Receive(timeout);
  return reply.ok() ? *reply : reply.status().ToString();
}

}  // namespace ps::testing
