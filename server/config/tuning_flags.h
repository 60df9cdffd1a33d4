// The tuning flags: knobs whose automatic values suit almost every deployment (each resolves from
// the backend and the CPUs normd may use). They live apart from the essential, limit and security
// flags so that `normd --help` lists only those; `normd --helpon=tuning_flags` lists these, and
// docs/CONFIGURATION.md says when to touch each.
#ifndef NORMD_SERVER_CONFIG_TUNING_FLAGS_H_
#define NORMD_SERVER_CONFIG_TUNING_FLAGS_H_

#include <cstdint>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(int, cpu_threads);
ABSL_DECLARE_FLAG(int, workers_per_gpu);
ABSL_DECLARE_FLAG(int64_t, zero_copy_max_bytes);
ABSL_DECLARE_FLAG(int, copy_threads);
ABSL_DECLARE_FLAG(int64_t, parallel_copy_min_bytes);
ABSL_DECLARE_FLAG(int64_t, copy_spin_us);
ABSL_DECLARE_FLAG(int, reply_threads);
ABSL_DECLARE_FLAG(int64_t, overlap_min_bytes);
ABSL_DECLARE_FLAG(int64_t, max_queue_delay_us);
ABSL_DECLARE_FLAG(int64_t, company_wait_us);
ABSL_DECLARE_FLAG(int64_t, company_min_requests);
ABSL_DECLARE_FLAG(int64_t, company_max_requests);
ABSL_DECLARE_FLAG(int64_t, company_memory);
ABSL_DECLARE_FLAG(int64_t, busy_poll_us);
ABSL_DECLARE_FLAG(int64_t, fill_first_rows);
ABSL_DECLARE_FLAG(int, malloc_arenas);
ABSL_DECLARE_FLAG(int64_t, response_pool_bytes);

#endif  // NORMD_SERVER_CONFIG_TUNING_FLAGS_H_
