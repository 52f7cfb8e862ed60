// RocksDB's own `ldb` tool (Debian package rocksdb-tools) can open our shard
// stores and list their keys: the stores are plain RocksDB databases. Skips,
// saying why, when ldb is not installed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/store_format.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

std::string FindLdb() {
  for (const char* p : {"/usr/bin/ldb", "/usr/bin/rocksdb_ldb", "/usr/local/bin/ldb"}) {
    if (Env::Default()->FileExists(p).ok()) return p;
  }
  return "";
}

std::string RunCommand(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

TEST(Ldb, ListsTheKeysOfAShardStore) {
  const std::string ldb = FindLdb();
  if (ldb.empty()) GTEST_SKIP() << "RocksDB's ldb is not installed (apt-get install rocksdb-tools); skipping";
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = JoinPath(t ? t : "/tmp", "ldb_ckpt");
  Env::Default()->DeleteRecursively(dir).IgnoreError();
  SaveEntry e;
  e.full_name = "dense/kernel";
  e.value = Tensor(DT_FLOAT, TensorShape({100}));
  for (int i = 0; i < 100; ++i) e.value.data<float>()[i] = i;
  WriteOptions options;
  options.chunk_bytes = 256;  // two chunks
  ASSERT_TRUE(WriteCheckpointDir(Env::Default(), dir, {e}, options).ok());
  const std::string store = JoinPath(dir, ShardDirName(0, 1));
  int rc = 0;
  const std::string out = RunCommand(ldb + " --db=" + store + " --hex scan --max_keys=100 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  // Keys in hex: 'c' + name + NUL + 8-byte chunk index; 'h' + name; "manifest".
  const std::string name_hex = "64656E73652F6B65726E656C";  // "dense/kernel"
  EXPECT_NE(out.find("0x63" + name_hex + "000000000000000000"), std::string::npos) << out.substr(0, 2000);
  EXPECT_NE(out.find("0x63" + name_hex + "000000000000000001"), std::string::npos);
  EXPECT_NE(out.find("0x68" + name_hex), std::string::npos);
  EXPECT_NE(out.find("0x6D616E6966657374"), std::string::npos);  // "manifest"
  const std::string cfs = RunCommand(ldb + " --db=" + store + " list_column_families 2>&1", &rc);
  EXPECT_EQ(rc, 0) << cfs;
  EXPECT_NE(cfs.find("default"), std::string::npos) << cfs;
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
