#include "server/regions/system_mapping.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace normd {
namespace {

// shm_open's names: "/" and then one file name of /dev/shm.
absl::Status CheckName(const std::string& name) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos ||
      name.size() > NAME_MAX || name == "/." || name == "/.." ||
      name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm_name: '", name.substr(0, 300),
                     "' is not a POSIX shared-memory name ('/' followed by 1 to ", NAME_MAX - 1,
                     " characters, no other '/')"));
  }
  return absl::OkStatus();
}

// Closes a descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<SystemMapping>> SystemMapping::Open(const std::string& shm_name,
                                                                   int64_t offset,
                                                                   int64_t byte_size, uid_t owner) {
  if (absl::Status s = CheckName(shm_name); !s.ok()) return s;
  if (offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("offset: ", offset, " must be >= 0"));
  }
  if (byte_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size: ", byte_size, " must be > 0"));
  }
  // glibc's shm_open adds O_NOFOLLOW and O_CLOEXEC.
  const int fd = shm_open(shm_name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int error = errno;
    const std::string why =
        absl::StrCat("shm_name: cannot open '", shm_name, "': ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(why);
    if (error == EACCES || error == EPERM || error == ELOOP) {
      return absl::PermissionDeniedError(why);
    }
    return absl::InvalidArgumentError(why);
  }
  FdCloser closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return absl::InternalError(
        absl::StrCat("shm_name: fstat of '", shm_name, "' failed: ", std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm_name: '", shm_name, "' is not a shared-memory object (a regular file)"));
  }
  if (info.st_uid != owner) {
    return absl::PermissionDeniedError(
        absl::StrCat("shm_name: '", shm_name, "' belongs to uid ", info.st_uid,
                     ", not to the connecting client's uid ", owner,
                     "; normd maps only objects of the user that registers them"));
  }
  const int64_t object_bytes = info.st_size;
  // Overflow-safe: offset + byte_size is never formed.
  if (offset > object_bytes || byte_size > object_bytes - offset) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size: offset ", offset, " + byte_size ",
                                                   byte_size, " is past the end of '", shm_name,
                                                   "' (", object_bytes, " bytes)"));
  }
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t map_start = offset / page * page;
  const auto map_bytes = static_cast<size_t>(offset - map_start + byte_size);
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                   static_cast<off_t>(map_start));
  if (map == MAP_FAILED) {
    const int error = errno;
    const std::string why = absl::StrCat("shm_name: cannot map ", map_bytes, " bytes of '",
                                         shm_name, "': ", std::strerror(error));
    return error == EACCES ? absl::PermissionDeniedError(why) : absl::ResourceExhaustedError(why);
  }
  std::unique_ptr<SystemMapping> mapping(new SystemMapping());
  mapping->map_ = map;
  mapping->map_bytes_ = map_bytes;
  mapping->data_ = static_cast<char*>(map) + (offset - map_start);
  mapping->size_ = byte_size;
  mapping->device_ = info.st_dev;
  mapping->inode_ = info.st_ino;
  mapping->object_offset_ = offset;
  return mapping;
}

SystemMapping::~SystemMapping() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
}

std::string SystemMapping::object_key() const { return absl::StrCat("shm:", device_, ":", inode_); }

}  // namespace normd
