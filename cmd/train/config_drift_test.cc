// Spec for ConfigForDriftCheck: new task addresses, TLS files or a start
// timeout are the same run; another task count or another model is not.
#include "cmd/train/config_drift.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr char kRun[] =
    "name: \"r\"\n"
    "train { steps: 10 }\n"
    "cluster { job { name: \"ps\" task: \"10.0.0.1:2222\" } job { name: \"worker\" task: \"10.0.0.2:2222\" } "
    "start_timeout_secs: 30 }\n";

TEST(ConfigForDriftCheck, NewAddressesTlsFilesAndTimeoutAreTheSameRun) {
  const std::string restarted =
      "name: \"r\"\n"
      "train { steps: 10 }\n"
      "cluster { job { name: \"ps\" task: \"10.0.0.7:3333\" } job { name: \"worker\" task: \"10.0.0.9:4444\" } "
      "tls { cert_file: \"/secrets/new.pem\" key_file: \"k\" ca_file: \"ca\" } start_timeout_secs: 3 }\n";
  EXPECT_EQ(ConfigForDriftCheck(kRun), ConfigForDriftCheck(restarted));
}

TEST(ConfigForDriftCheck, AnotherTaskCountOrModelIsAnotherRun) {
  const std::string more_workers =
      "name: \"r\"\n"
      "train { steps: 10 }\n"
      "cluster { job { name: \"ps\" task: \"10.0.0.1:2222\" } "
      "job { name: \"worker\" task: \"10.0.0.2:2222\" task: \"10.0.0.3:2222\" } }\n";
  EXPECT_NE(ConfigForDriftCheck(kRun), ConfigForDriftCheck(more_workers));
  const std::string more_steps =
      "name: \"r\"\n"
      "train { steps: 20 }\n"
      "cluster { job { name: \"ps\" task: \"10.0.0.1:2222\" } job { name: \"worker\" task: \"10.0.0.2:2222\" } }\n";
  EXPECT_NE(ConfigForDriftCheck(kRun), ConfigForDriftCheck(more_steps));
}

TEST(ConfigForDriftCheck, WithoutAClusterOrParseTheTextIsKept) {
  EXPECT_EQ(ConfigForDriftCheck("name: \"r\"\n"), "name: \"r\"\n");
  EXPECT_EQ(ConfigForDriftCheck("not { a config"), "not { a config");
}

}  // namespace
}  // namespace sluice
