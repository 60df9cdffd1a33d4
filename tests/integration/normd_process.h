// Starts the real normd binary on a free loopback port for a test, and stops it.
//
// The process is started with --listen=127.0.0.1:0; the port it got is read from its "listening on"
// log line, and Start() returns once grpc.health.v1 reports SERVING. Its stderr is collected in the
// background (so that a chatty server never blocks on a full pipe) and can be inspected by the
// test. Channels are plaintext unless the test sets credentials (a TLS server:
// set_channel_credentials).
//
// Every wait here ends on an event: a log line arriving, stderr closing, the process exiting (a
// thread blocks in waitid for it), a health status pushed by grpc.health.v1's Watch. The timeouts
// only bound how long a broken build hangs.
#ifndef NORMD_TESTS_INTEGRATION_NORMD_PROCESS_H_
#define NORMD_TESTS_INTEGRATION_NORMD_PROCESS_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace normd::testing {

class NormdProcess {
 public:
  // `binary`: the path of an executable taking normd's flags (normd, or normd-echo). Empty means
  // normd: $NORMD_BINARY when set (the GPU machine runs a bundle from another path), else the
  // build's.
  explicit NormdProcess(std::string binary = "");
  // Prints Report() if the current test has failed, then SIGKILLs the process if it still runs.
  ~NormdProcess();

  // Credentials for the health check in Start() and for NewChannel(); call before Start(). Default:
  // plaintext. A TLS server needs grpc::SslCredentials trusting its CA (its certificate names
  // 127.0.0.1).
  void set_channel_credentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    credentials_ = std::move(credentials);
  }

  // Starts the binary with `args` and waits until it serves. Unless `args` sets them, normd gets
  // --listen=127.0.0.1:0 and --metrics-listen=127.0.0.1:0 (free ports, so that tests run in
  // parallel).
  absl::Status Start(const std::vector<std::string>& args = {},
                     absl::Duration timeout = absl::Seconds(30));

  // Sends `signal` (unless the process has exited already) and waits for the exit; returns the
  // exit status as from waitpid, or -1 on timeout or if it was never started.
  int StopWith(int signal, absl::Duration timeout = absl::Seconds(60));

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  // The metrics endpoint's port, from normd's "metrics on HOST:PORT" line (0 if it has none).
  int metrics_port() const { return metrics_port_; }
  pid_t pid() const { return pid_; }
  std::shared_ptr<grpc::Channel> NewChannel() const { return NewChannel(credentials_); }
  // A channel with other credentials than the process's (a plaintext client of a TLS server, say).
  std::shared_ptr<grpc::Channel> NewChannel(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials) const;
  std::string log() const;
  // What a failed test prints about the server: "normd (pid N) is running" (or "exited with status
  // N", "killed by signal N (NAME)"), then the last 8 KiB of its log. A server that died is so told
  // from one that refused.
  std::string Report() const;
  // Waits until `part` appears in the log (true) or the process's stderr closes without it, or
  // `timeout` passes (false).
  bool WaitForLog(const std::string& part, absl::Duration timeout = absl::Seconds(30)) const;
  // Resident set size in bytes from /proc, or -1.
  int64_t ResidentBytes() const;

 private:
  void CollectStderr(int fd);
  void AwaitExit(pid_t pid);
  // Waits until `found` holds for the log or stderr has closed; returns whether it holds.
  bool AwaitLog(const std::function<bool(const std::string&)>& found, absl::Time deadline) const;

  const bool is_normd_;
  const std::string binary_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_ = grpc::InsecureChannelCredentials();
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  std::thread reader_;  // collects stderr until it closes
  std::thread reaper_;  // waits for the exit, then reaps the process
  mutable normd::Mutex mu_;
  std::string log_ ABSL_GUARDED_BY(mu_);
  bool stderr_closed_ ABSL_GUARDED_BY(mu_) = false;
  // Set when the process has exited and been reaped: its pid may then be another process's, so
  // signals are sent only under mu_ while this is false.
  bool exited_ ABSL_GUARDED_BY(mu_) = false;
  int exit_status_ ABSL_GUARDED_BY(mu_) = -1;
};

// True in a sanitizer build (the test and the normd it starts are built alike). Resident-memory
// bounds are not checked there: ASan's shadow memory and its 256 MiB quarantine of freed blocks,
// and TSan's shadow, make RSS measure the sanitizer rather than normd.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
// True under ThreadSanitizer, the slower of the two (5-15x): a few timing checks hold only without
// it.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// The backend the suite runs normd with: $NORMD_TEST_BACKEND ("cuda" on the GPU machine), else
// "cpu". NormdProcess rewrites every --backend=... argument to it.
std::string TestBackend();

// Waits for grpc.health.v1 to report SERVING for "" (watching it: the server pushes each change).
absl::Status WaitForServing(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout);

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_NORMD_PROCESS_H_
