#include "tests/integration/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace normd::testing {

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    // errno tells a closed port (refused) from a listener that never answered (timed out).
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to 127.0.0.1:", port, ": ", std::strerror(error)));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::InternalError("write failed");
  }
  std::string response;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    response.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::InternalError("no HTTP header end in the response");
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.find(" 200") == std::string::npos) {
    return absl::InternalError(absl::StrCat("GET ", path, ": ", status_line));
  }
  return response.substr(body + 4);
}

double ScrapeSum(int port, const std::string& family,
                 const std::map<std::string, std::string>& labels) {
  absl::StatusOr<std::string> text = HttpGet(port, "/metrics");
  if (!text.ok()) return -1;
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    // "family value" or "family{name="value",...} value"
    if (!absl::StartsWith(line, family) || line.size() == family.size()) continue;
    const char next = line[family.size()];
    if (next != ' ' && next != '{') continue;
    const size_t value_at = line.rfind(' ');
    const absl::string_view series = line.substr(0, value_at);
    bool matches = true;
    for (const auto& [name, value] : labels)
      matches &= absl::StrContains(series, absl::StrCat(name, "=\"", value, "\""));
    if (matches) sum += std::stod(std::string(line.substr(value_at + 1)));
  }
  return sum;
}

}  // namespace normd::testing
