// Hopper (sm_90) bulk copies from global to shared memory and the mbarriers that track them: the
// copy engine (TMA) moves a whole tile while the threads compute on another, so a block keeps
// loads in flight without holding them in registers. Thin wrappers over the PTX instructions (PTX
// ISA: cp.async.bulk, mbarrier); on older architectures they compile to nothing and the launcher
// never picks the kernels that use them. Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_BULK_COPY_CUH_
#define NORMD_KERNELS_CUDA_BULK_COPY_CUH_

#include <cstdint>

namespace normd::cuda::internal {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define NORMD_HAVE_BULK_COPY 1
#else
#define NORMD_HAVE_BULK_COPY 0
#endif

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Makes `barrier` expect one arrival per phase (the thread that issues the copies).
__device__ __forceinline__ void BarrierInit(uint64_t* barrier) {
#if NORMD_HAVE_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(SharedAddress(barrier)) : "memory");
#endif
}

// Makes initialized barriers visible to the copy engine (then a __syncthreads for the threads).
__device__ __forceinline__ void FenceBarrierInit() {
#if NORMD_HAVE_BULK_COPY
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// Orders this thread's earlier shared-memory accesses (the block's, after a __syncthreads) before
// the copy engine's next writes to shared memory: a tile buffer is refilled only once read.
__device__ __forceinline__ void FenceBeforeBulkWrite() {
#if NORMD_HAVE_BULK_COPY
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// The arrival of this phase, announcing `bytes` that copies will deliver to `barrier`: the phase
// completes when they all have landed.
__device__ __forceinline__ void BarrierArriveExpectingBytes(uint64_t* barrier, uint32_t bytes) {
#if NORMD_HAVE_BULK_COPY
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   SharedAddress(barrier)),
               "r"(bytes)
               : "memory");
#endif
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global memory to shared
// memory; completion is counted on `barrier`.
__device__ __forceinline__ void BulkCopyToShared(void* shared_dst, const void* global_src,
                                                 uint32_t bytes, uint64_t* barrier) {
#if NORMD_HAVE_BULK_COPY
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(SharedAddress(shared_dst)),
      "l"(__cvta_generic_to_global(global_src)), "r"(bytes), "r"(SharedAddress(barrier))
      : "memory");
#endif
}

// Waits until the phase of `barrier` with parity `parity` (0, 1, 0, ... per use) has completed.
__device__ __forceinline__ void BarrierWait(uint64_t* barrier, uint32_t parity) {
#if NORMD_HAVE_BULK_COPY
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(SharedAddress(barrier)), "r"(parity)
        : "memory");
  }
#endif
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_BULK_COPY_CUH_
