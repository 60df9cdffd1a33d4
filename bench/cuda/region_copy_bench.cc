// normd_region_copy_bench: how fast the GPU's copy engines move a client's shared-memory region,
// against normd's own pinned staging memory.
//
// A system region is a client's POSIX shared memory (tmpfs, 4 KiB pages unless the machine's
// shmem_enabled says otherwise), which normd registers with the driver (cudaHostRegister, portable
// and mapped) and copies to and from the device in the chunks of its pipeline. This program times
// the same copies from four kinds of host memory:
//   pinned       cudaHostAlloc: what normd's staging buffers are
//   shm          shm_open + mmap + cudaHostRegister: what a system region is
//   shm_huge     the same with madvise(MADV_HUGEPAGE) before the pages are touched (takes effect
//                only where /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it)
//   anon_huge    anonymous memory with madvise(MADV_HUGEPAGE), registered
// Each is copied up and down as one copy ("up", "down"), as `--chunks` copies in one stream
// ("up N", "down N": normd's pipeline), and up and down at once on two streams ("both N", each
// way); medians of `--reps` between CUDA events, in GB/s, and the host time to issue N copies.
//
//   normd_region_copy_bench [--mib 32] [--chunks 16] [--reps 20]
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/cuda/bench_util.h"

namespace normd::bench {
namespace {

struct HostMemory {
  const char* kind;
  char* data = nullptr;
  size_t bytes = 0;
  bool pinned = false;  // cudaHostAlloc, else mmap + cudaHostRegister
};

HostMemory MapRegistered(const char* kind, size_t bytes, bool shared, bool huge) {
  HostMemory m{kind, nullptr, bytes, false};
  int fd = -1;
  if (shared) {
    const std::string name = "/normd-region-copy-bench-" + std::to_string(getpid());
    fd = shm_open(name.c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      std::perror("shm_open / ftruncate");
      std::exit(1);
    }
    shm_unlink(name.c_str());
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  if (fd >= 0) close(fd);
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);  // a client writes its region before sending
  CHECK_CUDA(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  m.data = static_cast<char*>(p);
  return m;
}

// KiB of the mapping that starts at `data` backed by huge pages (AnonHugePages or ShmemPmdMapped
// in /proc/self/smaps).
long HugeKib(const char* data) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  long kib = 0;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      in = lo == reinterpret_cast<unsigned long>(data);
      continue;
    }
    long v = 0;
    if (in && (std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &v) == 1 ||
               std::sscanf(line.c_str(), "ShmemPmdMapped: %ld kB", &v) == 1)) {
      kib += v;
    }
  }
  return kib;
}

void Run(const HostMemory& host, char* dev_in, char* dev_out, int chunks, int reps) {
  cudaStream_t up, down;
  CHECK_CUDA(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  cudaEvent_t a, b, c, d;
  for (cudaEvent_t* e : {&a, &b, &c, &d}) CHECK_CUDA(cudaEventCreate(e));
  const size_t n = host.bytes, piece = n / static_cast<size_t>(chunks);
  const size_t chunked = piece * static_cast<size_t>(chunks);  // what the chunked copies move
  // Chunk k of the input up, or of the output down, on `stream`.
  auto copy_up = [&](int k, cudaStream_t stream) {
    CHECK_CUDA(cudaMemcpyAsync(dev_in + k * piece, host.data + k * piece, piece,
                               cudaMemcpyHostToDevice, stream));
  };
  auto copy_down = [&](int k, cudaStream_t stream) {
    CHECK_CUDA(cudaMemcpyAsync(host.data + k * piece, dev_out + k * piece, piece,
                               cudaMemcpyDeviceToHost, stream));
  };
  auto gbps = [](size_t bytes, cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, from, to));
    return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0.0;
  };
  std::vector<double> one_up, one_down, chunked_up, chunked_down, both, issue_us;
  for (int r = 0; r < reps + 2; ++r) {
    const bool keep = r >= 2;  // the first two are warm-up

    CHECK_CUDA(cudaEventRecord(a, up));
    CHECK_CUDA(cudaMemcpyAsync(dev_in, host.data, n, cudaMemcpyHostToDevice, up));
    CHECK_CUDA(cudaEventRecord(b, up));
    CHECK_CUDA(cudaMemcpyAsync(host.data, dev_out, n, cudaMemcpyDeviceToHost, up));
    CHECK_CUDA(cudaEventRecord(c, up));
    CHECK_CUDA(cudaEventSynchronize(c));
    if (keep) {
      one_up.push_back(gbps(n, a, b));
      one_down.push_back(gbps(n, b, c));
    }

    CHECK_CUDA(cudaEventRecord(a, up));
    const auto issue_start = std::chrono::steady_clock::now();
    for (int k = 0; k < chunks; ++k) copy_up(k, up);
    const auto issue_end = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaEventRecord(b, up));
    for (int k = 0; k < chunks; ++k) copy_down(k, up);
    CHECK_CUDA(cudaEventRecord(c, up));
    CHECK_CUDA(cudaEventSynchronize(c));
    if (keep) {
      chunked_up.push_back(gbps(chunked, a, b));
      chunked_down.push_back(gbps(chunked, b, c));
      issue_us.push_back(
          std::chrono::duration<double, std::micro>(issue_end - issue_start).count());
    }

    // Up and down at once, as the pipeline overlaps them: each stream moves `chunked` bytes.
    CHECK_CUDA(cudaEventRecord(a, up));
    CHECK_CUDA(cudaStreamWaitEvent(down, a, 0));
    for (int k = 0; k < chunks; ++k) {
      copy_up(k, up);
      copy_down(k, down);
    }
    CHECK_CUDA(cudaEventRecord(d, down));
    CHECK_CUDA(cudaStreamWaitEvent(up, d, 0));
    CHECK_CUDA(cudaEventRecord(c, up));
    CHECK_CUDA(cudaEventSynchronize(c));
    if (keep) both.push_back(gbps(chunked, a, c));
  }
  std::printf("%-10s %9ld %8.1f %8.1f %8.1f %8.1f %10.1f %9.1f\n", host.kind,
              host.pinned ? 0L : HugeKib(host.data), Median(one_up), Median(one_down),
              Median(chunked_up), Median(chunked_down), Median(both), Median(issue_us));
  for (cudaEvent_t e : {a, b, c, d}) cudaEventDestroy(e);
  cudaStreamDestroy(up);
  cudaStreamDestroy(down);
}

}  // namespace
}  // namespace normd::bench

int main(int argc, char** argv) {
  using namespace normd::bench;
  size_t mib = 32;
  int chunks = 16, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") mib = std::strtoul(argv[i + 1], nullptr, 10);
    if (flag == "--chunks") chunks = std::atoi(argv[i + 1]);
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
  }
  const size_t bytes = mib << 20;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  // The file lists every setting and brackets the one in force: "always [never] advise ...".
  std::string shmem_enabled;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/shmem_enabled"), shmem_enabled);
  if (const size_t open = shmem_enabled.find('['); open != std::string::npos) {
    shmem_enabled = shmem_enabled.substr(open + 1, shmem_enabled.find(']') - open - 1);
  }
  std::printf("%s, %zu MiB, %d chunks, median of %d; shmem_enabled: %s\n", prop.name, mib, chunks,
              reps, shmem_enabled.c_str());
  char *dev_in, *dev_out;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&dev_in), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&dev_out), bytes));
  std::printf("%-10s %9s %8s %8s %8s %8s %10s %9s\n", "memory", "huge KiB", "up", "down", "up N",
              "down N", "both N", "issue us");
  HostMemory pinned{"pinned", nullptr, bytes, true};
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&pinned.data), bytes, cudaHostAllocDefault));
  std::memset(pinned.data, 1, bytes);
  Run(pinned, dev_in, dev_out, chunks, reps);
  for (const auto& [kind, shared, huge] :
       {std::tuple{"shm", true, false}, std::tuple{"shm_huge", true, true},
        std::tuple{"anon_huge", false, true}}) {
    Run(MapRegistered(kind, bytes, shared, huge), dev_in, dev_out, chunks, reps);
  }
  return 0;
}
