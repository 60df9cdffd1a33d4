// Thread block cluster primitives (sm_90): the CTA's rank, the cluster barrier, an mbarrier that
// counts bytes, and a store into a peer CTA's shared memory that the peer's mbarrier counts
// (st.async). Thin wrappers over the PTX instructions (PTX ISA: barrier.cluster, mbarrier,
// st.async, mapa). Only compiled for sm_90 and newer: the kernels that use them are compiled out
// below that (and trap), and the launcher never picks them there (kernel_config.h,
// DeviceFeatures::clusters). Internal to the CUDA library.
#ifndef NORMD_KERNELS_CUDA_CLUSTER_SYNC_CUH_
#define NORMD_KERNELS_CUDA_CLUSTER_SYNC_CUH_

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define NORMD_HAVE_CLUSTERS 1
#else
#define NORMD_HAVE_CLUSTERS 0
#endif

namespace normd::cuda::internal {

#if NORMD_HAVE_CLUSTERS
__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ int ClusterCtaRank() {
  uint32_t rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return static_cast<int>(rank);
}

// The cluster barrier's arrive without release semantics: enough after fence.mbarrier_init, which
// is the only thing the peers must see before they write into this CTA.
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Makes `barrier` expect one arrival per phase.
__device__ __forceinline__ void BarrierInit(uint64_t* barrier) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(SharedAddress(barrier)) : "memory");
}

// Makes initialized barriers visible to the cluster (and the async proxy).
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// The arrival of this phase, announcing `bytes` that asynchronous writes will deliver to
// `barrier`: the phase completes when they all have landed.
__device__ __forceinline__ void BarrierArriveExpectingBytes(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   SharedAddress(barrier)),
               "r"(bytes)
               : "memory");
}

// Writes `value` into the float at `local`'s shared-memory offset in CTA `rank` of this cluster,
// and counts its 4 bytes on that CTA's mbarrier at `barrier`'s offset.
__device__ __forceinline__ void PushToClusterShared(const float* local, const uint64_t* barrier,
                                                    int rank, float value) {
  uint32_t remote_value;
  uint32_t remote_barrier;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_value)
               : "r"(SharedAddress(local)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_barrier)
               : "r"(SharedAddress(barrier)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   remote_value),
               "r"(__float_as_uint(value)), "r"(remote_barrier)
               : "memory");
}

// Waits for phase 0 of this CTA's `barrier`, acquiring at cluster scope what the peers' st.async
// wrote (their complete_tx releases at cluster scope).
__device__ __forceinline__ void ClusterBarrierWaitPhase0(uint64_t* barrier) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 complete, [%1], 0;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(SharedAddress(barrier))
        : "memory");
  }
}
#endif  // NORMD_HAVE_CLUSTERS

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_CLUSTER_SYNC_CUH_
