// Spec for IdxFileCache: a gzip IDX file is parsed once while its size and
// gzip trailer are unchanged, a rewritten one is parsed again, plain files
// and failed reads are never kept, and the budget drops the least recently
// used files (and never keeps one larger than itself).
#include "inputs/idx_cache.h"

#include <new>
#include <string>

#include "engine/platform/fault_env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

IdxFile Items(int items, int base) {
  IdxFile f;
  f.dtype = DT_UINT8;
  f.dims = {items, 4};
  for (int i = 0; i < items * 4; ++i) f.data.push_back(static_cast<char>(base + i * 3));
  return f;
}

class IdxFileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("idx_cache"); }
  std::string Write(const std::string& name, const IdxFile& f, bool gzip) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteIdxFile(&env_, path, f, gzip).ok());
    return path;
  }

  FaultEnv env_{Env::Default()};
  std::string dir_;
};

TEST_F(IdxFileCacheTest, AGzipFileIsParsedOnceWhileUnchanged) {
  IdxFileCache cache(1 << 20);
  const std::string path = Write("a.idx.gz", Items(10, 0), true);
  auto first = cache.Read(&env_, path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->data, Items(10, 0).data);
  // Reading the compressed data now fails: a second parse would fail too.
  env_.InjectReadError(path, 12);
  auto second = cache.Read(&env_, path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->get(), first->get());
  EXPECT_EQ(cache.parses(), 1);
  EXPECT_EQ(cache.files(), 1);
  EXPECT_EQ(cache.bytes(), 40u);
}

TEST_F(IdxFileCacheTest, ARewrittenFileIsParsedAgain) {
  IdxFileCache cache(1 << 20);
  const std::string path = Write("a.idx.gz", Items(10, 0), true);
  auto first = cache.Read(&env_, path);
  ASSERT_TRUE(first.ok()) << first.status();
  Write("a.idx.gz", Items(10, 1), true);  // the same size, another CRC in the trailer
  auto second = cache.Read(&env_, path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->data, Items(10, 1).data);
  EXPECT_EQ((*first)->data, Items(10, 0).data);  // a holder keeps the old items
  EXPECT_EQ(cache.parses(), 2);
  EXPECT_EQ(cache.files(), 1);
  EXPECT_EQ(cache.bytes(), 40u);
  // Rewritten again, and unreadable: the read fails and the old items go.
  Write("a.idx.gz", Items(10, 2), true);
  env_.InjectReadError(path, 12);
  EXPECT_FALSE(cache.Read(&env_, path).ok());
  EXPECT_EQ(cache.files(), 0);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST_F(IdxFileCacheTest, PlainFilesAndFailedReadsAreNotKept) {
  IdxFileCache cache(1 << 20);
  const std::string plain = Write("p.idx", Items(5, 0), false);
  ASSERT_TRUE(cache.Read(&env_, plain).ok());
  Write("p.idx", Items(5, 9), false);
  auto again = cache.Read(&env_, plain);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->data, Items(5, 9).data);
  EXPECT_EQ(cache.files(), 0);

  EXPECT_TRUE(absl::IsNotFound(cache.Read(&env_, dir_ + "/missing.idx.gz").status()));
  const std::string broken = Write("b.idx.gz", Items(10, 0), true);
  env_.InjectReadError(broken, 12);
  EXPECT_FALSE(cache.Read(&env_, broken).ok());
  EXPECT_EQ(cache.files(), 0);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST_F(IdxFileCacheTest, TheBudgetDropsTheLeastRecentlyUsedAndSkipsLargerFiles) {
  IdxFileCache cache(100);  // bytes of items: two files of 40 fit, not three
  const std::string a = Write("a.idx.gz", Items(10, 0), true);
  const std::string b = Write("b.idx.gz", Items(10, 1), true);
  const std::string c = Write("c.idx.gz", Items(10, 2), true);
  ASSERT_TRUE(cache.Read(&env_, a).ok());
  ASSERT_TRUE(cache.Read(&env_, b).ok());
  ASSERT_TRUE(cache.Read(&env_, a).ok());  // a is now the most recent
  ASSERT_TRUE(cache.Read(&env_, c).ok());  // drops b
  EXPECT_EQ(cache.files(), 2);
  EXPECT_EQ(cache.bytes(), 80u);
  EXPECT_EQ(cache.parses(), 3);
  ASSERT_TRUE(cache.Read(&env_, a).ok());
  EXPECT_EQ(cache.parses(), 3);
  ASSERT_TRUE(cache.Read(&env_, b).ok());
  EXPECT_EQ(cache.parses(), 4);

  const std::string big = Write("big.idx.gz", Items(30, 3), true);  // 120 bytes
  ASSERT_TRUE(cache.Read(&env_, big).ok());
  ASSERT_TRUE(cache.Read(&env_, big).ok());
  EXPECT_EQ(cache.parses(), 6);
  EXPECT_LE(cache.bytes(), 100u);
}

TEST_F(IdxFileCacheTest, EnvsDoNotShareEntries) {
  IdxFileCache cache(1 << 20);
  const std::string path = Write("a.idx.gz", Items(10, 0), true);
  FaultEnv other(Env::Default());
  ASSERT_TRUE(cache.Read(&env_, path).ok());
  ASSERT_TRUE(cache.Read(&other, path).ok());
  EXPECT_EQ(cache.parses(), 2);
  EXPECT_EQ(cache.files(), 2);
}

// An Env made where a destroyed one was (the same address) is another Env: it
// may hold other files, or fail reads the first did not.
TEST_F(IdxFileCacheTest, AnEnvAtAFreedEnvsAddressSharesNothing) {
  IdxFileCache cache(1 << 20);
  const std::string path = Write("a.idx.gz", Items(10, 0), true);
  alignas(FaultEnv) unsigned char storage[sizeof(FaultEnv)];
  FaultEnv* first = new (storage) FaultEnv(Env::Default());
  ASSERT_TRUE(cache.Read(first, path).ok());
  first->~FaultEnv();
  FaultEnv* second = new (storage) FaultEnv(Env::Default());
  ASSERT_EQ(static_cast<void*>(first), static_cast<void*>(second));
  ASSERT_TRUE(cache.Read(second, path).ok());
  EXPECT_EQ(cache.parses(), 2);
  second->~FaultEnv();
}

}  // namespace
}  // namespace sluice
