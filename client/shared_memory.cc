#include "client/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"

namespace normd {

absl::StatusOr<std::unique_ptr<SharedMemory>> SharedMemory::Create(int64_t bytes) {
  if (bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("shared memory of ", bytes, " bytes"));
  }
  char random[8];
  if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
  }
  const std::string name =
      absl::StrCat("/normd-", getpid(), "-", absl::BytesToHexString(absl::string_view(random, 8)));
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("shm_open ", name, ": ", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("ftruncate ", name, " to ", bytes, " bytes: ", std::strerror(error)));
  }
  void* data = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) {
    shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap ", bytes, " bytes of ", name, ": ", std::strerror(error)));
  }
  return std::unique_ptr<SharedMemory>(new SharedMemory(name, static_cast<char*>(data), bytes));
}

SharedMemory::~SharedMemory() {
  munmap(data_, static_cast<size_t>(size_));
  shm_unlink(name_.c_str());
}

}  // namespace normd
