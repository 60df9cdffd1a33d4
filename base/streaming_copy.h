// Copying bytes that a device reads next (pinned staging buffers) so that they do not stay in the
// CPU's caches.
//
// Why: when the CPU has just written a pinned buffer with ordinary stores, the written lines sit
// dirty in the writing core's caches, and every PCIe read of them by the GPU (a cudaMemcpyAsync
// upload, or a zero-copy kernel reading mapped memory) is answered from there, at about half the
// link's speed. Streaming stores brought normd's upload of a 512 KiB request close to the link's
// speed, and its pack stage got faster too (docs/PERFORMANCE.md, "Where a request's time goes on
// the H200"; bench/cuda/staging_bench.cc times the ways of packing).
// Streaming (non-temporal) stores write whole lines to memory without keeping them in the cache,
// and without reading the destination first.
//
// Small copies keep memcpy: at 8 KiB the bench shows no difference either way, and from 64 KiB a
// gain.
#ifndef NORMD_BASE_STREAMING_COPY_H_
#define NORMD_BASE_STREAMING_COPY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace normd {

// Copies of at least this many bytes stream; smaller ones use memcpy.
inline constexpr size_t kStreamingCopyMinBytes = size_t{64} << 10;

// memcpy(to, from, bytes) with streaming stores, whatever the size. The bytes are visible to a
// device (and to every CPU) once this returns: it ends with a store fence, because streaming stores
// are not ordered with the driver's later writes that start the transfer.
inline void StreamingCopy(void* to, const void* from, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(to);
  const auto* s = static_cast<const char*>(from);
  // Streaming stores need a 16-byte aligned destination (staging offsets are aligned; be safe
  // anyway).
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  // A 64-byte line per iteration: four 16-byte stores fill one write-combining buffer.
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
  _mm_sfence();
#else
  std::memcpy(to, from, bytes);
#endif
}

// memcpy(to, from, bytes) for a destination the CPU will not read again before a device does:
// streaming from kStreamingCopyMinBytes, memcpy below.
inline void CopyBypassingCaches(void* to, const void* from, size_t bytes) {
  if (bytes >= kStreamingCopyMinBytes) {
    StreamingCopy(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

}  // namespace normd

#endif  // NORMD_BASE_STREAMING_COPY_H_
