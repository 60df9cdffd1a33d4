#include "server/rpc/unix_listener.h"

#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"
#include "server/observability/log.h"

namespace normd {
namespace {

constexpr int kBacklog = 128;

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("--listen-unix=", path, ": a path of 1 to ",
                                                   sizeof(address.sun_path) - 1,
                                                   " bytes is needed"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// Removes a socket file that no server answers on any more; leaves anything else alone.
absl::Status RemoveStaleSocket(const std::string& path, const sockaddr_un& address) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--listen-unix=", path, ": exists and is not a socket"));
  }
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool live = probe >= 0 && connect(probe, reinterpret_cast<const sockaddr*>(&address),
                                          sizeof address) == 0;
  if (probe >= 0) close(probe);
  if (live) {
    return absl::FailedPreconditionError(
        absl::StrCat("--listen-unix=", path, ": another server is listening there"));
  }
  unlink(path.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Listen(const std::string& path) {
  absl::StatusOr<sockaddr_un> address = AddressOf(path);
  if (!address.ok()) return address.status();
  if (absl::Status s = RemoveStaleSocket(path, *address); !s.ok()) return s;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("--listen-unix: socket: ", std::strerror(errno)));
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0 ||
      listen(fd, kBacklog) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("--listen-unix=", path, ": cannot listen: ", std::strerror(error)));
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(fd);
    unlink(path.c_str());
    return absl::InternalError(absl::StrCat("--listen-unix: eventfd: ", std::strerror(errno)));
  }
  return std::unique_ptr<UnixListener>(new UnixListener(path, fd, wake));
}

UnixListener::UnixListener(std::string path, int listen_fd, int wake_fd)
    : path_(std::move(path)), listen_fd_(listen_fd), wake_fd_(wake_fd) {}

UnixListener::~UnixListener() {
  Stop();
  close(listen_fd_);
  close(wake_fd_);
  unlink(path_.c_str());
}

void UnixListener::Start(grpc::Server* server, PeerDirectory* peers) {
  thread_ = std::thread([this, server, peers] { AcceptLoop(server, peers); });
}

void UnixListener::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void UnixListener::AcceptLoop(grpc::Server* server, PeerDirectory* peers) {
  NameThisThread("normd-unix");
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "normd: --listen-unix: poll failed: ", std::strerror(errno));
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;  // Stop()
    // gRPC's endpoints expect non-blocking descriptors.
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        Log(LogLevel::kWarning, "normd: --listen-unix: accept failed: ", std::strerror(errno));
      }
      continue;
    }
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
      close(fd);
      continue;
    }
    // Recorded before gRPC sees the descriptor, so that no call of this connection can be
    // identified by the previous owner of the number.
    peers->RecordUnixPeer(fd, credentials.uid, credentials.pid);
    grpc::AddInsecureChannelFromFd(server, fd);
  }
}

}  // namespace normd
