// The Save/SaveSlices/Restore/RestoreSlice/RestoreAndCheck ops through a
// Session: values round trip, slices of partitioned variables reassemble, and
// errors (missing tensor, wrong dtype, bad slice) are clean statuses.
#include <cstdlib>

#include "checkpoint/checkpoint_reader.h"
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

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
