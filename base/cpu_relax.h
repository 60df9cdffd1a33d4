// A pause for spin-wait loops.
#ifndef NORMD_BASE_CPU_RELAX_H_
#define NORMD_BASE_CPU_RELAX_H_

namespace normd {

// Tells the core this thread is spinning (lets a sibling hyperthread run, saves power).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace normd

#endif  // NORMD_BASE_CPU_RELAX_H_
