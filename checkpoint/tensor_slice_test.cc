// Tests of slice specs and the intersection copy used by RestoreSlice.
#include "checkpoint/tensor_slice.h"

#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

TEST(TensorSlice, ParsesTensorFlowSpelling) {
  auto s = ParseShapeAndSlice("10 20 0,5:-");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->full_shape, TensorShape({10, 20}));
  EXPECT_EQ(s->slice.ToString(), "0,5:-");
  EXPECT_EQ(s->slice.SliceShape(s->full_shape), TensorShape({5, 20}));
  EXPECT_TRUE(ParseShapeAndSlice("")->whole);
}

TEST(TensorSlice, RejectsMalformedAndOutOfBounds) {
  EXPECT_FALSE(ParseShapeAndSlice("10 20 0,5").ok());
  EXPECT_FALSE(ParseShapeAndSlice("10 20 8,5:-").ok());
  EXPECT_FALSE(ParseShapeAndSlice("10 x 0,5:-").ok());
  EXPECT_FALSE(ParseShapeAndSlice("10 20 -1,5:-").ok());
  EXPECT_FALSE(ParseShapeAndSlice("10 20 a,b:-").ok());
}

TEST(TensorSlice, AssemblesARequestFromTwoStoredSlices) {
  const TensorShape full({4, 3});
  Tensor top = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5}, TensorShape({2, 3}));        // rows 0-1
  Tensor bottom = Tensor::FromVector<int32_t>({6, 7, 8, 9, 10, 11}, TensorShape({2, 3}));  // rows 2-3
  TensorSlice want = *ParseSliceSpec("1,2:1,2", full);                                     // rows 1-2, cols 1-2
  Tensor out = Tensor::FromVector<int32_t>({-1, -1, -1, -1}, TensorShape({2, 2}));
  auto n0 = CopySliceIntersection(full, *ParseSliceSpec("0,2:-", full), top, want, &out);
  auto n1 = CopySliceIntersection(full, *ParseSliceSpec("2,2:-", full), bottom, want, &out);
  ASSERT_TRUE(n0.ok() && n1.ok()) << n0.status() << n1.status();
  EXPECT_EQ(*n0 + *n1, 4);
  EXPECT_EQ(std::vector<int32_t>(out.data<int32_t>(), out.data<int32_t>() + 4), (std::vector<int32_t>{4, 5, 7, 8}));
}

// The copy trusts no slice geometry: a source whose shape is not its slice's
// (a small buffer claimed to hold a large slice) is refused before any byte
// moves, as are slices outside the full shape and mismatched dtypes.
TEST(TensorSlice, CopyRefusesValuesThatDoNotMatchTheirSlices) {
  const TensorShape full({1000, 4});
  Tensor small = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({1, 4}));
  Tensor out(DT_FLOAT, TensorShape({1000, 4}));
  auto big_claim = CopySliceIntersection(full, *ParseSliceSpec("0,1000:-", full), small, TensorSlice::Full(2), &out);
  EXPECT_EQ(big_claim.status().code(), absl::StatusCode::kInvalidArgument) << big_claim.status();
  TensorSlice outside;
  outside.start = {999, 0};
  outside.length = {2, -1};
  Tensor two(DT_FLOAT, TensorShape({2, 4}));
  EXPECT_FALSE(CopySliceIntersection(full, outside, two, TensorSlice::Full(2), &out).ok());
  TensorSlice wrong_rank;
  wrong_rank.start = {0};
  wrong_rank.length = {-1};
  EXPECT_FALSE(CopySliceIntersection(full, wrong_rank, small, TensorSlice::Full(2), &out).ok());
  Tensor ints(DT_INT32, TensorShape({1, 4}));
  EXPECT_FALSE(CopySliceIntersection(full, *ParseSliceSpec("0,1:-", full), ints, TensorSlice::Full(2), &out).ok());
  auto fine = CopySliceIntersection(full, *ParseSliceSpec("0,1:-", full), small, TensorSlice::Full(2), &out);
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(*fine, 4);
  EXPECT_EQ(out.data<float>()[3], 4.0f);
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
