// SuiteNormdTest: a GoogleTest fixture whose tests share one real normd, started once for the suite
// (a normd start costs a fraction of a second; most suites need no fresh process per test).
//
//   class NormalizeTest : public SuiteNormdTest<NormalizeTest> {};  // normd --backend=cpu
//   class ValidationTest
//       : public SuiteNormdTest<ValidationTest, ::testing::TestWithParam<Case>> {
//    public:
//     static std::vector<std::string> SuiteFlags() { return {"--backend=cpu", "--flag=..."}; }
//   };
//
// `server_` is the suite's process (nullptr if it did not start: SetUp then fails the test, saying
// so). Suites that need more than flags (TLS credentials, two processes) write their own fixture.
#ifndef NORMD_TESTS_INTEGRATION_SUITE_NORMD_H_
#define NORMD_TESTS_INTEGRATION_SUITE_NORMD_H_

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "tests/integration/normd_process.h"

namespace normd::testing {

template <typename Suite, typename Base = ::testing::Test>
class SuiteNormdTest : public Base {
 public:
  // The flags the suite's normd starts with; a suite declares its own to change them. NormdProcess
  // replaces --backend=cpu by $NORMD_TEST_BACKEND where that is set (the GPU machine).
  static std::vector<std::string> SuiteFlags() { return {"--backend=cpu"}; }

  static void SetUpTestSuite() {
    server_ = new NormdProcess();
    const absl::Status started = server_->Start(Suite::SuiteFlags());
    if (!started.ok()) {
      ADD_FAILURE() << "normd did not start: " << started << "\n" << server_->log();
      delete server_;
      server_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

 protected:
  void SetUp() override { ASSERT_NE(server_, nullptr) << "the suite's normd did not start"; }
  // A failed test shows the shared normd's state and the end of its log (a sanitizer's report, a
  // refusal): the test's own message rarely says whether the server was still there.
  void TearDown() override {
    if (server_ != nullptr && this->HasFailure()) std::cerr << server_->Report() << "\n";
  }

  static inline NormdProcess* server_ = nullptr;
};

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_SUITE_NORMD_H_
