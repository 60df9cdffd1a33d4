// Host access to memory that another process can shrink under normd: a client's system
// shared-memory region.
//
// A client may ftruncate its shared-memory object after registering it (or delete it and then
// truncate); every page of normd's mapping past the object's new end then raises SIGBUS when
// touched, which would kill normd. Deleting the name alone (shm_unlink) is harmless: the object
// lives while mapped. normd cannot forbid the truncation: seals (F_SEAL_SHRINK) exist only for
// memfd objects, opened through the memfd itself, which gRPC cannot pass between processes, while
// POSIX objects are opened by name. Checking the size before each request would leave a window
// between the check and the access. So every host access to such memory runs under
// RunGuardedAgainstSigbus: a SIGBUS raised on that thread while it runs jumps back out, and the
// request alone fails.
//
// How: one process-wide SIGBUS handler, installed on first use. A thread inside a guard has its
// jump buffer in a thread-local variable, and the handler siglongjmps there. A SIGBUS on a thread
// outside any guard is not one of these: the handler passes it to the handler installed before it
// (a sanitizer's), or restores the default action so that the fault repeats and normd dies as it
// would have. The guard costs a sigsetjmp without the signal mask (no system call) per call.
//
// The guarded function must not take locks, allocate or own objects with destructors: a jump skips
// the rest of it. The CPU kernels over raw pointers qualify.
#ifndef NORMD_SERVER_EXECUTORS_SIGBUS_GUARD_H_
#define NORMD_SERVER_EXECUTORS_SIGBUS_GUARD_H_

namespace normd {

// Runs fn(arg); false if a SIGBUS hit this thread meanwhile (fn then stopped where it was).
bool RunGuardedAgainstSigbus(void (*fn)(void*), void* arg);

// The same for a callable.
template <typename Fn>
bool RunGuardedAgainstSigbus(Fn& fn) {
  return RunGuardedAgainstSigbus([](void* f) { (*static_cast<Fn*>(f))(); }, &fn);
}

}  // namespace normd

#endif  // NORMD_SERVER_EXECUTORS_SIGBUS_GUARD_H_
