#include "tests/integration/normd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"

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
  // A failing test may not have said what the server logged, or that it died (a sanitizer report
  // ends normd); say it once here, before the process is killed.
  if (pid_ > 0 && ::testing::Test::HasFailure()) {
    std::fprintf(stderr, "[ server   ] %s\n", Report().c_str());
  }
  {
    normd::MutexLock lock(&mu_);
    if (pid_ > 0 && !exited_) kill(pid_, SIGKILL);
  }
  if (reaper_.joinable()) reaper_.join();
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
  normd::MutexLock lock(&mu_);
  stderr_closed_ = true;
}

void NormdProcess::AwaitExit(pid_t pid) {
  // WNOWAIT leaves the process a zombie, so that its pid cannot be reused before exited_ is set.
  siginfo_t info;
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  normd::MutexLock lock(&mu_);
  int status = -1;
  if (waitpid(pid, &status, 0) != pid) status = -1;
  exit_status_ = status;
  exited_ = true;
}

std::string NormdProcess::log() const {
  normd::MutexLock lock(&mu_);
  return log_;
}

std::string NormdProcess::Report() const {
  normd::MutexLock lock(&mu_);
  std::string state;
  if (pid_ <= 0) {
    state = "not started";
  } else if (!exited_) {
    state = "running";
  } else if (WIFEXITED(exit_status_)) {
    state = absl::StrCat("exited with status ", WEXITSTATUS(exit_status_));
  } else if (WIFSIGNALED(exit_status_)) {
    state = absl::StrCat("killed by signal ", WTERMSIG(exit_status_), " (",
                         strsignal(WTERMSIG(exit_status_)), ")");
  } else {
    state = absl::StrCat("ended with wait status ", exit_status_);
  }
  constexpr size_t kTail = 8192;
  const size_t from = log_.size() > kTail ? log_.size() - kTail : 0;
  return absl::StrCat("normd (pid ", pid_, ") is ", state, "; the end of its log:\n",
                      absl::string_view(log_).substr(from));
}

bool NormdProcess::AwaitLog(const std::function<bool(const std::string&)>& found,
                            absl::Time deadline) const {
  struct Args {
    const NormdProcess* process;
    const std::function<bool(const std::string&)>* found;
  } args{this, &found};
  normd::MutexLock lock(&mu_);
  // Evaluated with mu_ held, whenever the reader thread has appended to the log.
  mu_.AwaitWithDeadline(absl::Condition(
                            +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                              return a->process->stderr_closed_ || (*a->found)(a->process->log_);
                            },
                            &args),
                        deadline);
  return found(log_);
}

bool NormdProcess::WaitForLog(const std::string& part, absl::Duration timeout) const {
  return AwaitLog([&](const std::string& log) { return log.find(part) != std::string::npos; },
                  absl::Now() + timeout);
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
  reaper_ = std::thread([this, pid = pid_] { AwaitExit(pid); });

  // The port ends where a space or the line's end follows it, so that a port read in pieces is
  // not taken for a shorter one.
  static const std::regex kListening(R"(listening on [^ \n]*:(\d+)[ \n])");
  std::smatch match;
  const absl::Time deadline = absl::Now() + timeout;
  if (!AwaitLog([&](const std::string& log) { return std::regex_search(log, kListening); },
                deadline)) {
    normd::MutexLock lock(&mu_);
    // Stderr closes when the process ends: wait for that, so that the exit is what is reported.
    mu_.AwaitWithDeadline(absl::Condition(&exited_), deadline);
    if (exited_) {
      return absl::InternalError(absl::StrCat(binary_, " exited before listening (status ",
                                              exit_status_, "); its log:\n", log_));
    }
    return absl::DeadlineExceededError("normd did not report its port:\n" + log_);
  }
  std::string text = log();
  std::regex_search(text, match, kListening);
  port_ = std::stoi(match[1]);
  absl::Status serving = WaitForServing(NewChannel(), deadline - absl::Now());
  // The metrics line comes before the listening line.
  static const std::regex kMetrics(R"(metrics on [^ \n]*:(\d+)[ \n])");
  text = log();
  if (std::regex_search(text, match, kMetrics)) metrics_port_ = std::stoi(match[1]);
  return serving;
}

int NormdProcess::StopWith(int signal, absl::Duration timeout) {
  normd::MutexLock lock(&mu_);
  if (pid_ <= 0) return -1;
  if (!exited_) kill(pid_, signal);
  if (!mu_.AwaitWithDeadline(absl::Condition(&exited_), absl::Now() + timeout)) return -1;
  return exit_status_;
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
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  context.set_wait_for_ready(true);  // the port may not accept connections yet
  grpc::health::v1::HealthCheckRequest request;
  std::unique_ptr<grpc::ClientReader<grpc::health::v1::HealthCheckResponse>> watch =
      stub->Watch(&context, request);
  grpc::health::v1::HealthCheckResponse response;
  std::string last = "none";
  while (watch->Read(&response)) {
    if (response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      context.TryCancel();
      watch->Finish();
      return absl::OkStatus();
    }
    last = absl::StrCat("status ", response.status());
  }
  const grpc::Status status = watch->Finish();
  return absl::DeadlineExceededError(
      absl::StrCat("normd never reported SERVING; last status: ", last, "; the watch ended with ",
                   status.error_code(), " ", status.error_message()));
}

}  // namespace normd::testing
