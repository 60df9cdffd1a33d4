#include "tests/integration/normd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"

extern char** environ;

namespace normd::testing {

namespace {

std::string NormdBinary() {
  const char* env = std::getenv("NORMD_BINARY");
  return env != nullptr && *env != '\0' ? env : NORMD_BINARY_PATH;
}

}  // namespace

std::string TestBackend() {
  const char* env = std::getenv("NORMD_TEST_BACKEND");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

NormdProcess::NormdProcess(std::string binary)
    : is_normd_(binary.empty()), binary_(binary.empty() ? NormdBinary() : std::move(binary)) {}

NormdProcess::~NormdProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
}

void NormdProcess::CollectStderr(int fd) {
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    normd::MutexLock lock(&mu_);
    log_.append(buf, static_cast<size_t>(n));
  }
  close(fd);
}

std::string NormdProcess::log() const {
  normd::MutexLock lock(&mu_);
  return log_;
}

bool NormdProcess::WaitForLog(const std::string& part, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (log().find(part) == std::string::npos) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

absl::Status NormdProcess::Start(const std::vector<std::string>& args, absl::Duration timeout) {
  std::vector<std::string> argv_storage = {binary_};
  bool has_listen = false, has_metrics_listen = false;
  for (const auto& a : args) {
    has_listen |= absl::StartsWith(a, "--listen=") || a == "--listen";
    has_metrics_listen |=
        absl::StartsWith(a, "--metrics-listen") || absl::StartsWith(a, "--metrics_listen");
  }
  if (!has_listen) argv_storage.push_back("--listen=127.0.0.1:0");
  // Only normd has a metrics endpoint (other binaries, such as normd-echo, take no such flag).
  if (is_normd_ && !has_metrics_listen) argv_storage.push_back("--metrics-listen=127.0.0.1:0");
  for (const std::string& a : args) {
    argv_storage.push_back(
        is_normd_ && absl::StartsWith(a, "--backend=") ? "--backend=" + TestBackend() : a);
  }
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  const int rc = posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    pid_ = -1;
    return absl::InternalError(absl::StrCat("could not start ", binary_, ": errno ", rc));
  }
  reader_ = std::thread([this, fd = pipe_fds[0]] { CollectStderr(fd); });

  const absl::Time deadline = absl::Now() + timeout;
  static const std::regex kListening(R"(listening on [^ ]*:(\d+))");
  while (port_ == 0) {
    std::smatch match;
    const std::string text = log();
    if (std::regex_search(text, match, kListening)) {
      port_ = std::stoi(match[1]);
      break;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat(binary_, " exited before listening; its log:\n", log()));
    }
    if (absl::Now() > deadline)
      return absl::DeadlineExceededError("normd did not report its port:\n" + log());
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::Status serving = WaitForServing(NewChannel(), deadline - absl::Now());
  static const std::regex kMetrics(R"(metrics on [^ ]*:(\d+))");
  std::smatch match;
  const std::string text = log();
  if (std::regex_search(text, match, kMetrics)) metrics_port_ = std::stoi(match[1]);
  return serving;
}

int NormdProcess::StopWith(int signal, absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return -1;
}

std::shared_ptr<grpc::Channel> NormdProcess::NewChannel(
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A fresh connection per channel, so that tests of concurrency really use several.
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  return grpc::CreateCustomChannel(address(), credentials, args);
}

int64_t NormdProcess::ResidentBytes() const {
  std::ifstream statm(absl::StrCat("/proc/", pid_, "/statm"));
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return -1;
  return resident_pages * sysconf(_SC_PAGE_SIZE);
}

absl::Status WaitForServing(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  const absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(2))));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = stub->Check(&context, request, &response);
    if (status.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::OkStatus();
    }
    last = status.ok() ? absl::StrCat("status ", response.status()) : status.error_message();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError("normd never reported SERVING; last answer: " + last);
}

}  // namespace normd::testing
