#include "server/executors/sigbus_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include <mutex>

namespace normd {
namespace {

// The jump buffer of the guard this thread is in, or null. A pointer with no constructor, so that
// the signal handler reads it without any lazy initialization.
thread_local sigjmp_buf* guard_jump = nullptr;

struct sigaction previous_action;

void OnSigbus(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* jump = guard_jump; jump != nullptr) {
    guard_jump = nullptr;
    siglongjmp(*jump, 1);
  }
  // Not a guarded access: as if this handler had never been installed.
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(signal, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN &&
      previous_action.sa_handler != nullptr) {
    previous_action.sa_handler(signal);
    return;
  }
  // Returning re-runs the faulting access, which now gets the default action.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGBUS, &default_action, nullptr);
}

void InstallHandler() {
  struct sigaction action {};
  action.sa_sigaction = &OnSigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &previous_action);
}

}  // namespace

bool RunGuardedAgainstSigbus(void (*fn)(void*), void* arg) {
  static std::once_flag installed;
  std::call_once(installed, InstallHandler);
  sigjmp_buf jump;
  // Without the mask (savemask 0): no system call on the way in. After a jump SIGBUS is still
  // blocked (the handler ran with it blocked) and is unblocked here: a blocked SIGBUS from a later
  // fault would kill the process.
  if (sigsetjmp(jump, 0) != 0) {
    sigset_t sigbus;
    sigemptyset(&sigbus);
    sigaddset(&sigbus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &sigbus, nullptr);
    return false;
  }
  guard_jump = &jump;
  fn(arg);
  guard_jump = nullptr;
  return true;
}

}  // namespace normd
