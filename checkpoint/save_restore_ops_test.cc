// The Save/SaveSlices/Restore/RestoreSlice/RestoreAndCheck ops through a
// Session: values round trip, slices of partitioned variables reassemble, and
// errors (missing tensor, wrong dtype, bad slice) are clean statuses; the same
// for TensorFlow's SaveV2/RestoreV2/MergeV2Checkpoints on tensor bundles.
#include <cstdlib>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/tensor_bundle_reader.h"
#include "engine/platform/env.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

Tensor Strings(std::vector<std::string> v) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.data<tstring>()[i] = v[i];
  return t;
}

TEST(SaveRestoreOps, SaveThenRestoreEachTensor) {
  const std::string path = FreshTestDir("ops_save");
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::FromVector<float>({1.5f, -2, 3}));
  std::string c = b.Const("c", Tensor::FromVector<int64_t>({7, 8}));
  std::string fn = b.Const("fn", Tensor::Scalar<tstring>(path));
  std::string names = b.Const("names", Strings({"a", "c"}));
  b.Node("save", "Save", {fn, names, a, c}, {{"T", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64})}});
  std::string na = b.Const("na", Tensor::Scalar<tstring>("a"));
  std::string nc = b.Const("nc", Tensor::Scalar<tstring>("c"));
  b.Node("ra", "Restore", {fn, na}, {{"dt", MakeAttr(DT_FLOAT)}});
  b.Node("rc", "RestoreAndCheck", {fn, nc}, {{"dt", MakeAttr(DT_INT64)}});
  b.Node("wrong", "RestoreAndCheck", {fn, nc}, {{"dt", MakeAttr(DT_FLOAT)}});
  std::string nx = b.Const("nx", Tensor::Scalar<tstring>("x"));
  b.Node("missing", "Restore", {fn, nx}, {{"dt", MakeAttr(DT_FLOAT)}});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"save"}, &out).ok());
  // Saving again replaces the checkpoint.
  ASSERT_TRUE((*session)->Run({}, {}, {"save"}, &out).ok());
  absl::Status s = (*session)->Run({}, {"ra", "rc"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].DebugString(), Tensor::FromVector<float>({1.5f, -2, 3}).DebugString());
  EXPECT_EQ(out[1].DebugString(), Tensor::FromVector<int64_t>({7, 8}).DebugString());
  s = (*session)->Run({}, {"wrong"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = (*session)->Run({}, {"missing"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
}

TEST(SaveRestoreOps, SaveSlicesThenRestoreSliceAndWhole) {
  const std::string path = FreshTestDir("ops_slices");
  GraphDefBuilder b;
  std::string top = b.Const("top", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  std::string bottom = b.Const("bottom", Tensor::FromVector<float>({5, 6, 7, 8}, TensorShape({2, 2})));
  std::string fn = b.Const("fn", Tensor::Scalar<tstring>(path));
  std::string names = b.Const("names", Strings({"w", "w"}));
  std::string specs = b.Const("specs", Strings({"4 2 0,2:-", "4 2 2,2:-"}));
  b.Node("save", "SaveSlices", {fn, names, specs, top, bottom},
         {{"T", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_FLOAT})}});
  std::string nw = b.Const("nw", Tensor::Scalar<tstring>("w"));
  std::string mid = b.Const("mid", Tensor::Scalar<tstring>("4 2 1,2:1,1"));
  std::string bad = b.Const("bad", Tensor::Scalar<tstring>("4 2 3,2:-"));
  b.Node("r_mid", "RestoreSlice", {fn, nw, mid}, {{"dt", MakeAttr(DT_FLOAT)}});
  b.Node("r_bad", "RestoreSlice", {fn, nw, bad}, {{"dt", MakeAttr(DT_FLOAT)}});
  b.Node("r_whole", "RestoreAndCheck", {fn, nw}, {{"dt", MakeAttr(DT_FLOAT)}});
  auto session = NewSession();
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"save"}, &out).ok());
  absl::Status s = (*session)->Run({}, {"r_mid", "r_whole"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].DebugString(), Tensor::FromVector<float>({4, 6}, TensorShape({2, 1})).DebugString());
  EXPECT_EQ(out[1].DebugString(),
            Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({4, 2})).DebugString());
  EXPECT_EQ((*session)->Run({}, {"r_bad"}, {}, &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SaveRestoreOps, SaveV2ThenRestoreV2TensorFlowBundles) {
  const std::string prefix = JoinPath(FreshTestDir("ops_v2"), "model.ckpt");
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::FromVector<float>({1.5f, -2, 3}, TensorShape({3, 1})));
  std::string c = b.Const("c", Tensor::FromVector<int64_t>({7, 8}));
  std::string p = b.Const("prefix", Tensor::Scalar<tstring>(prefix));
  std::string names = b.Const("names", Strings({"w/a", "c"}));
  std::string whole = b.Const("whole", Strings({"", ""}));
  b.Node("save", "SaveV2", {p, names, whole, a, c}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64})}});
  std::string rnames = b.Const("rnames", Strings({"c", "w/a"}));
  b.Node("restore", "RestoreV2", {p, rnames, whole}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT64, DT_FLOAT})}});
  b.Node("wrong", "RestoreV2", {p, rnames, whole}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_FLOAT})}});
  std::string one = b.Const("one", Strings({"x"}));
  std::string one_whole = b.Const("one_whole", Strings({""}));
  b.Node("missing", "RestoreV2", {p, one, one_whole}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  std::string sliced = b.Const("sliced", Strings({"3 1 0,1:-"}));
  std::string na = b.Const("na", Strings({"w/a"}));
  b.Node("slice", "RestoreV2", {p, na, sliced}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  std::string nowhere = b.Const("nowhere", Tensor::Scalar<tstring>(prefix + ".nothing"));
  b.Node("no_bundle", "RestoreV2", {nowhere, na, one_whole}, {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {}, {"save"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(Env::Default()->FileExists(prefix + ".index").ok());
  EXPECT_TRUE(Env::Default()->FileExists(prefix + ".data-00000-of-00001").ok());
  s = (*session)->Run({}, {"restore:0", "restore:1"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].DebugString(), Tensor::FromVector<int64_t>({7, 8}).DebugString());
  EXPECT_EQ(out[1].DebugString(), Tensor::FromVector<float>({1.5f, -2, 3}, TensorShape({3, 1})).DebugString());
  s = (*session)->Run({}, {"wrong:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("tensor 'c' has dtype int64"), std::string::npos) << s;
  s = (*session)->Run({}, {"missing:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
  s = (*session)->Run({}, {"slice:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("tensor 'w/a'"), std::string::npos) << s;
  s = (*session)->Run({}, {"no_bundle:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find(prefix + ".nothing.index does not exist"), std::string::npos) << s;
}

TEST(SaveRestoreOps, MergeV2CheckpointsJoinsShardsAndDeletesThem) {
  const std::string dir = FreshTestDir("ops_merge");
  const std::string p0 = JoinPath(dir, "tmp/part-0"), p1 = JoinPath(dir, "tmp/part-1");
  const std::string dest = JoinPath(dir, "model.ckpt");
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(4));
  std::string y = b.Const("y", Tensor::FromVector<int32_t>({1, 2}));
  std::string whole = b.Const("whole", Strings({""}));
  b.Node("save0", "SaveV2", {b.Const("p0", Tensor::Scalar<tstring>(p0)), b.Const("nx", Strings({"x"})), whole, x},
         {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  b.Node("save1", "SaveV2", {b.Const("p1", Tensor::Scalar<tstring>(p1)), b.Const("ny", Strings({"y"})), whole, y},
         {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT32})}});
  b.Node("merge", "MergeV2Checkpoints",
         {b.Const("sources", Strings({p0, p1})), b.Const("dest", Tensor::Scalar<tstring>(dest))}, {});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"save0", "save1"}, &out).ok());
  absl::Status s = (*session)->Run({}, {}, {"merge"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  auto reader = BundleReader::Open(dest);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader.value()->Read("x")->DebugString(), Tensor::Scalar<float>(4).DebugString());
  EXPECT_EQ(reader.value()->Read("y")->DebugString(), Tensor::FromVector<int32_t>({1, 2}).DebugString());
  EXPECT_FALSE(Env::Default()->FileExists(p0 + ".index").ok());
  EXPECT_FALSE(Env::Default()->IsDirectory(JoinPath(dir, "tmp")));
  // The sources are gone now: merging again is NotFound.
  EXPECT_EQ((*session)->Run({}, {}, {"merge"}, &out).code(), absl::StatusCode::kNotFound);
}

TEST(SaveRestoreOps, MergeV2CheckpointsRefusesATensorInTwoSources) {
  const std::string dir = FreshTestDir("ops_merge_duplicate");
  const std::string p0 = JoinPath(dir, "part-0"), p1 = JoinPath(dir, "part-1");
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(4));
  std::string whole = b.Const("whole", Strings({""}));
  std::string nx = b.Const("nx", Strings({"x"}));
  b.Node("save0", "SaveV2", {b.Const("p0", Tensor::Scalar<tstring>(p0)), nx, whole, x},
         {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  b.Node("save1", "SaveV2", {b.Const("p1", Tensor::Scalar<tstring>(p1)), nx, whole, x},
         {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  b.Node("merge", "MergeV2Checkpoints",
         {b.Const("sources", Strings({p0, p1})), b.Const("dest", Tensor::Scalar<tstring>(JoinPath(dir, "m")))}, {});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"save0", "save1"}, &out).ok());
  absl::Status s = (*session)->Run({}, {}, {"merge"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("tensor 'x' of " + p1 + " is also in an earlier checkpoint prefix"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
