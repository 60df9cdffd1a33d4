// normctl: normd from the shell. Checks health, prints server info, normalizes .npy files,
// registers weights. Exit codes tell a script what to do next:
//   0 done · 1 the server refused (its message says why; or NOT_SERVING for `health`) · 2 usage ·
//   3 a file could not be read or written · 4 the server could not be reached in time.
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/command_line.h"
#include "client/normd_client.h"
#include "client/npy.h"
#include "client/shm_transport.h"
#include "client/tls_flags.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051",
          "normd address: HOST:PORT, dns:///HOST:PORT or unix:PATH");
ABSL_FLAG(std::string, input, "", "normalize: input .npy, [..., hidden]");
ABSL_FLAG(std::string, weight, "", "normalize, register-weight: weight .npy, [hidden]");
ABSL_FLAG(std::string, residual, "", "normalize: optional residual .npy, same shape as the input");
ABSL_FLAG(float, eps, 1e-6f, "normalize: added to the mean square inside the square root");
ABSL_FLAG(float, weight_offset, 0.0f,
          "normalize: added to every weight element (1 for Gemma's 1 + w)");
ABSL_FLAG(
    std::string, dtype, "",
    "normalize: bf16, fp16 or fp32 on the wire (default: the input's; a uint16 .npy is bf16 bits)");
ABSL_FLAG(std::string, output, "",
          "normalize: where to write y (.npy; bf16 is written as uint16 bits)");
ABSL_FLAG(std::string, residual_out, "", "normalize: where to write input + residual (.npy)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(30), "deadline of each call");
ABSL_FLAG(std::string, transport, "bytes",
          "normalize: bytes (the tensors in the messages) or shm (through a shared-memory region "
          "normctl registers; normd on this host with --shared-memory=system)");

namespace normd {
namespace {

enum ExitCode { kOk = 0, kRefused = 1, kUsageError = 2, kFileError = 3, kUnreachable = 4 };

constexpr char kUsageText[] =
    "normctl: talk to normd from the shell.\n"
    "  normctl --target=HOST:PORT health\n"
    "  normctl --target=HOST:PORT info\n"
    "  normctl --target=HOST:PORT normalize --input=x.npy --weight=w.npy [--residual=r.npy] "
    "[--eps=1e-6]\n"
    "          [--dtype=bf16|fp16|fp32] --output=y.npy [--residual-out=h.npy] "
    "[--transport=bytes|shm]\n"
    "  normctl --target=HOST:PORT register-weight --weight=w.npy\n"
    ".npy files: float32, float16, or uint16 holding bf16 bits.\n"
    "Exit codes: 0 ok, 1 refused by the server (or NOT_SERVING), 2 usage, 3 file error, 4 "
    "unreachable.";

int Fail(int code, const std::string& message) {
  std::cerr << "normctl: " << message << "\n";
  return code;
}

int FailStatus(const absl::Status& status, const std::string& what) {
  const bool unreachable = status.code() == absl::StatusCode::kUnavailable ||
                           status.code() == absl::StatusCode::kDeadlineExceeded;
  std::string hint;
  if (unreachable) hint = absl::StrCat(" (is normd running at ", absl::GetFlag(FLAGS_target), "?)");
  return Fail(unreachable ? kUnreachable : kRefused,
              absl::StrCat(what, ": ", absl::StatusCodeToString(status.code()), ": ",
                           status.message(), hint));
}

// The DType an .npy's descr holds, given the wire dtype asked for (uint16 is bf16 bits).
DType NpyDType(const NpyArray& a) {
  if (a.descr == "<f2") return DType::kFloat16;
  if (a.descr == "<u2") return DType::kBFloat16;
  return DType::kFloat32;
}

// A view of the array; float64 is narrowed to float32 into `storage`.
TensorView ViewOf(const NpyArray& a, std::vector<float>& storage) {
  std::vector<int64_t> shape = a.shape.empty() ? std::vector<int64_t>{1} : a.shape;
  if (a.descr == "<f8") {
    storage.resize(static_cast<size_t>(a.count()));
    const double* d = reinterpret_cast<const double*>(a.data.data());
    for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(d[i]);
    return TensorView::Float32(storage, shape);
  }
  return TensorView(NpyDType(a), a.data.data(), static_cast<size_t>(a.count()), shape);
}

NpyArray ToNpy(const Tensor& t) {
  NpyArray a;
  a.descr = t.dtype() == DType::kFloat32 ? "<f4" : t.dtype() == DType::kFloat16 ? "<f2" : "<u2";
  a.shape = t.shape();
  a.data = t.bytes();
  return a;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectFromFlags() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  options.default_deadline = absl::GetFlag(FLAGS_timeout);
  options.tls = ClientTlsOptionsFromFlags();
  return Client::Connect(options);
}

int Health(Client& client) {
  absl::StatusOr<bool> serving = client.IsServing();
  if (!serving.ok()) return FailStatus(serving.status(), "health");
  std::cout << (*serving ? "SERVING" : "NOT_SERVING") << "\n";
  return *serving ? kOk : kRefused;
}

int Info(Client& client) {
  absl::StatusOr<normd::v1::ServerInfo> info = client.GetServerInfo();
  if (!info.ok()) return FailStatus(info.status(), "info");
  std::cout << "version            " << info->version() << "\n"
            << "backend            " << info->backend() << "\n";
  for (const auto& d : info->devices()) {
    std::cout << "device             " << d.kind() << " " << d.name() << " ("
              << (d.memory_bytes() >> 20) << " MiB)\n";
  }
  std::cout << "max_hidden         " << info->max_hidden() << "\n"
            << "max_request_bytes  " << info->max_request_bytes() << "\n"
            << "max_batch_rows     " << info->max_batch_rows() << "\n"
            << "max_queue_delay_us " << info->max_queue_delay_us() << "\n"
            << "shared_memory      "
            << (info->shared_memory().empty() ? "off" : absl::StrJoin(info->shared_memory(), ","))
            << "\n";
  return kOk;
}

int RegisterWeightCommand(Client& client) {
  if (absl::GetFlag(FLAGS_weight).empty())
    return Fail(kUsageError, "register-weight needs --weight=w.npy");
  absl::StatusOr<NpyArray> w = ReadNpyFile(absl::GetFlag(FLAGS_weight));
  if (!w.ok()) return Fail(kFileError, std::string(w.status().message()));
  std::vector<float> storage;
  absl::StatusOr<Weight> weight = client.RegisterWeight(ViewOf(*w, storage));
  if (!weight.ok()) return FailStatus(weight.status(), "register-weight");
  std::cout << weight->id() << "\n";
  return kOk;
}

int NormalizeCommand(Client& client) {
  if (absl::GetFlag(FLAGS_input).empty() || absl::GetFlag(FLAGS_weight).empty() ||
      absl::GetFlag(FLAGS_output).empty()) {
    return Fail(kUsageError, "normalize needs --input=x.npy --weight=w.npy --output=y.npy");
  }
  if (!absl::GetFlag(FLAGS_residual_out).empty() && absl::GetFlag(FLAGS_residual).empty()) {
    return Fail(kUsageError,
                "--residual-out needs --residual (there is no residual output without one)");
  }
  absl::StatusOr<NpyArray> x = ReadNpyFile(absl::GetFlag(FLAGS_input));
  if (!x.ok()) return Fail(kFileError, std::string(x.status().message()));
  absl::StatusOr<NpyArray> w = ReadNpyFile(absl::GetFlag(FLAGS_weight));
  if (!w.ok()) return Fail(kFileError, std::string(w.status().message()));
  std::optional<NpyArray> r;
  if (!absl::GetFlag(FLAGS_residual).empty()) {
    absl::StatusOr<NpyArray> read = ReadNpyFile(absl::GetFlag(FLAGS_residual));
    if (!read.ok()) return Fail(kFileError, std::string(read.status().message()));
    r = *std::move(read);
  }
  std::vector<float> x_storage, w_storage, r_storage;
  NormalizeOptions options;
  options.eps = absl::GetFlag(FLAGS_eps);
  options.weight_offset = absl::GetFlag(FLAGS_weight_offset);
  if (!absl::GetFlag(FLAGS_dtype).empty()) {
    absl::StatusOr<DType> dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
    if (!dtype.ok()) return Fail(kUsageError, absl::StrCat("--dtype: ", dtype.status().message()));
    options.wire_dtype = *dtype;
  }
  if (r) options.residual = ViewOf(*r, r_storage);
  const std::string transport = absl::GetFlag(FLAGS_transport);
  if (transport != "bytes" && transport != "shm") {
    return Fail(kUsageError,
                absl::StrCat("--transport = '", transport, "': expected bytes or shm"));
  }
  const TensorView input = ViewOf(*x, x_storage);
  absl::StatusOr<NormalizeResult> result;
  if (transport == "shm") {
    // Room for input, output, residual and residual_out in float32, the widest wire dtype.
    const auto bytes = static_cast<int64_t>(input.count() * 4 + 4096) * 4;
    absl::StatusOr<std::unique_ptr<SharedMemoryTransport>> shm =
        SharedMemoryTransport::Create(client, bytes);
    if (!shm.ok()) return FailStatus(shm.status(), "normalize (shared memory)");
    result = (*shm)->Normalize(input, ViewOf(*w, w_storage), options);
  } else {
    result = client.Normalize(input, ViewOf(*w, w_storage), options);
  }
  if (!result.ok()) return FailStatus(result.status(), "normalize");
  if (absl::Status s = WriteNpyFile(absl::GetFlag(FLAGS_output), ToNpy(result->output)); !s.ok()) {
    return Fail(kFileError, std::string(s.message()));
  }
  if (!absl::GetFlag(FLAGS_residual_out).empty() && result->residual_out) {
    if (absl::Status s =
            WriteNpyFile(absl::GetFlag(FLAGS_residual_out), ToNpy(*result->residual_out));
        !s.ok()) {
      return Fail(kFileError, std::string(s.message()));
    }
  }
  std::cerr << "normctl: normalized [" << absl::StrJoin(result->output.shape(), ", ") << "] "
            << DTypeName(result->output.dtype()) << " (server: queue " << result->timing.queue_us()
            << " us, compute " << result->timing.compute_us() << " us)\n";
  return kOk;
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsageText);
  const std::vector<std::string> rest = ParseCommandLineWithDashes(argc, argv);
  if (rest.size() != 2) {
    return Fail(kUsageError,
                absl::StrCat(rest.size() < 2 ? "no command given" : "more than one command given",
                             "\n", kUsageText));
  }
  const std::string& command = rest[1];
  if (command != "health" && command != "info" && command != "normalize" &&
      command != "register-weight") {
    return Fail(kUsageError, absl::StrCat("unknown command '", command, "'\n", kUsageText));
  }
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectFromFlags();
  if (!client.ok()) return Fail(kUsageError, std::string(client.status().message()));
  if (command == "health") return Health(**client);
  if (command == "info") return Info(**client);
  if (command == "normalize") return NormalizeCommand(**client);
  return RegisterWeightCommand(**client);
}

}  // namespace
}  // namespace normd

int main(int argc, char** argv) { return normd::Run(argc, argv); }
