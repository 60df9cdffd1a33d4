// The kernels' thread and size limits, shared by the device code (the __launch_bounds__ of each
// build) and the host code that resolves a configuration into a launch (kernel_choice.cc). Plain
// C++. Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_KERNEL_LIMITS_H_
#define NORMD_KERNELS_CUDA_KERNEL_LIMITS_H_

namespace normd::cuda::internal {

// Threads per block: held rows (kRows), reloaded rows (kReload; 512 for two vectors per thread
// with a residual, whose build gets 40 registers for three blocks per multiprocessor), the loop
// kernel and a cluster CTA.
inline constexpr int kRowsMaxThreads = 512;
inline constexpr int kReloadMaxThreads = 1024;
inline constexpr int kReloadTwoWithResidualMaxThreads = 512;
inline constexpr int kLoopMaxThreads = 512;
inline constexpr int kClusterMaxThreads = 512;

// Resident threads per multiprocessor of the architecture being compiled: the builds' promised
// blocks per multiprocessor (__launch_bounds__) are capped by it (1536 on sm_86, sm_87 and sm_89;
// ptxas ignores a promise past it, and with it the register cap).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
inline constexpr int kArchThreadsPerSm = 1536;
#else
inline constexpr int kArchThreadsPerSm = 2048;
#endif

// The blocks of `max_threads` a build promises per multiprocessor: `wanted`, or as many as fit.
constexpr int BlocksPerSm(int wanted, int max_threads) {
  return wanted * max_threads <= kArchThreadsPerSm ? wanted : kArchThreadsPerSm / max_threads;
}

// CTAs per row of a cluster: up to 8 is portable; 16 needs the kernel's opt-in and a device that
// places such clusters (the H100 and H200 do), else the launcher takes 8.
inline constexpr int kPortableClusterCtas = 8;
inline constexpr int kMaxClusterCtas = 16;

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_LIMITS_H_
