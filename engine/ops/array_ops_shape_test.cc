// Shape functions of the array ops (engine/ops/array_ops*.cc), run through
// ShapeRefiner the way GraphDef import runs them. The op harness checks the
// kernels; this checks what the graph knows before anything runs.
#include "engine/graph/graph_builder.h"
#include "engine/graph/shape_refiner.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class ArrayShapeTest : public ::testing::Test {
 protected:
  ArrayShapeTest() : b_(&graph_) {}

  Output Input(const std::string& name, std::vector<int64_t> dims, DataType dtype = DT_FLOAT) {
    TensorShapeProto proto;
    for (int64_t d : dims) proto.add_dim()->set_size(d);
    return b_.Op(name, "Placeholder", {}, {{"dtype", MakeAttr(dtype)}, {"shape", MakeAttr(proto)}});
  }
  Output Ints(const std::string& name, std::vector<int32_t> v) { return b_.Const(name, Tensor::FromVector<int32_t>(v)); }
  Output Int(const std::string& name, int32_t v) { return b_.Const(name, Tensor::Scalar<int32_t>(v)); }

  // The inferred shape of `o`, or the error.
  std::string Shape(Output o) {
    EXPECT_TRUE(b_.ok()) << b_.status();
    ShapeRefiner refiner;
    absl::Status s = refiner.InferShapes(graph_);
    if (!s.ok()) return std::string(s.message());
    return refiner.OutputShape(o.node, o.index).DebugString();
  }

  Graph graph_;
  GraphBuilder b_;
};

TEST_F(ArrayShapeTest, ReshapeResolvesMinusOne) {
  EXPECT_EQ(Shape(b_.Op("r", "Reshape", {Input("x", {2, 3, 4}), Ints("s", {4, -1})})), "[4,6]");
}

TEST_F(ArrayShapeTest, ReshapeWithUnknownShapeValuesKnowsTheRank) {
  EXPECT_EQ(Shape(b_.Op("r", "Reshape", {Input("x", {2, 3}), Input("s", {2}, DT_INT32)})), "[?,?]");
}

TEST_F(ArrayShapeTest, FillShapeOpsAndStopGradient) {
  Output x = Input("x", {-1, 3});
  Output fill = b_.Op("fill", "Fill", {Ints("d", {2, 5}), b_.Scalar<float>("v", 1)});
  Output shape = b_.Op("shape", "Shape", {x});
  Output size = b_.Op("size", "Size", {x});
  Output stop = b_.Op("stop", "StopGradient", {x});
  EXPECT_EQ(Shape(fill), "[2,5]");
  EXPECT_EQ(Shape(shape), "[2]");
  EXPECT_EQ(Shape(size), "[]");
  EXPECT_EQ(Shape(stop), "[?,3]");
}

TEST_F(ArrayShapeTest, SqueezeExpandDimsTranspose) {
  Output x = Input("x", {1, 3, 1, -1});
  EXPECT_EQ(Shape(b_.Op("sq", "Squeeze", {x}, {{"squeeze_dims", MakeAttr(std::vector<int64_t>{0, -2})}})), "[3,?]");
  EXPECT_EQ(Shape(b_.Op("ed", "ExpandDims", {x, Int("d", -1)})), "[1,3,1,?,1]");
  EXPECT_EQ(Shape(b_.Op("t", "Transpose", {x, Ints("p", {3, 1, 0, 2})})), "[?,3,1,1]");
}

TEST_F(ArrayShapeTest, ConcatPackUnpack) {
  Output a = Input("a", {2, 3});
  Output c = Input("c", {2, -1});
  EXPECT_EQ(Shape(b_.Op("cat", "ConcatV2", {a, Input("b", {2, 1}), Int("axis", -1)})), "[2,4]");
  EXPECT_EQ(Shape(b_.Op("cat2", "ConcatV2", {a, c, Int("axis1", 1)})), "[2,?]");
  EXPECT_EQ(Shape(b_.Op("pack", "Pack", {a, a, a}, {{"axis", MakeAttr(int64_t{1})}})), "[2,3,3]");
  Node* unpack = b_.AddNode("unpack", "Unpack", {a}, {{"num", MakeAttr(int64_t{3})}, {"axis", MakeAttr(int64_t{1})}});
  EXPECT_EQ(Shape(Output{unpack, 2}), "[2]");
}

TEST_F(ArrayShapeTest, GatherOneHotPadSegments) {
  Output p = Input("p", {5, 4, 3});
  Output idx = Input("i", {2, 7}, DT_INT32);
  EXPECT_EQ(Shape(b_.Op("g", "GatherV2", {p, idx, Int("axis", 1)})), "[5,2,7,3]");
  EXPECT_EQ(Shape(b_.Op("g0", "Gather", {p, idx})), "[2,7,4,3]");
  EXPECT_EQ(Shape(b_.Op("oh", "OneHot", {idx, Int("depth", 10), b_.Scalar<float>("on", 1), b_.Scalar<float>("off", 0)},
                        {{"axis", MakeAttr(int64_t{1})}})),
            "[2,10,7]");
  Tensor paddings = Tensor::FromVector<int32_t>({1, 2, 0, 0, 3, 3}, TensorShape({3, 2}));
  EXPECT_EQ(Shape(b_.Op("pad", "Pad", {p, b_.Const("pads", paddings)})), "[8,4,9]");
  EXPECT_EQ(Shape(b_.Op("uss", "UnsortedSegmentSum", {p, Input("ids", {5}, DT_INT32), Int("n", 6)})), "[6,4,3]");
}

TEST_F(ArrayShapeTest, TileMultipliesEachKnownDim) {
  EXPECT_EQ(Shape(b_.Op("t1", "Tile", {Input("x", {2, -1, 3}), Ints("m", {4, 2, 0})})), "[8,?,0]");
  // Multiples known only at run time: the input's rank, or nothing.
  EXPECT_EQ(Shape(b_.Op("t2", "Tile", {Input("y", {2, 3}), Input("my", {2}, DT_INT32)})), "[?,?]");
  EXPECT_EQ(Shape(b_.Op("t3", "Tile", {Input("z", {-1}), Input("mz", {-1}, DT_INT32)})), "[?]");
  // Multiples of another length than the rank: left to the kernel's error.
  EXPECT_EQ(Shape(b_.Op("t4", "Tile", {Input("w", {2, 3}), Ints("mw", {2})})), "[?,?]");
}

TEST_F(ArrayShapeTest, NegativeTileMultipleIsAnErrorNamingTheNode) {
  b_.Op("bad_tile", "Tile", {Input("x", {2, 3}), Ints("m", {1, -2})});
  std::string msg = Shape(Output{graph_.FindNode("x"), 0});
  EXPECT_NE(msg.find("bad_tile"), std::string::npos) << msg;
  EXPECT_NE(msg.find("multiples[1] >= 0, but got -2"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, BadPermIsAnErrorNamingTheNode) {
  b_.Op("bad_transpose", "Transpose", {Input("x", {2, 3}), Ints("p", {0, 2})});
  std::string msg = Shape(Output{graph_.FindNode("x"), 0});
  EXPECT_NE(msg.find("bad_transpose"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 is out of range"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, MismatchedConcatIsAnError) {
  b_.Op("bad_concat", "ConcatV2", {Input("a", {2, 3}), Input("b", {3, 3}), Int("axis", 1)});
  std::string msg = Shape(Output{graph_.FindNode("a"), 0});
  EXPECT_NE(msg.find("bad_concat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dimensions of inputs should match"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, BroadcastToTakesTheTargetAndFillsItsUnknownDims) {
  EXPECT_EQ(Shape(b_.Op("b1", "BroadcastTo", {Input("x", {3}), Ints("s", {2, 3})})), "[2,3]");
  // A target dim computed at run time must equal an input dim other than 1.
  EXPECT_EQ(Shape(b_.Op("b2", "BroadcastTo", {Input("y", {4, 1}), Input("t", {3}, DT_INT32)})), "[?,4,?]");
  EXPECT_EQ(Shape(b_.Op("b3", "BroadcastTo", {Input("z", {-1}), Input("u", {-1}, DT_INT32)})), "<unknown>");
}

TEST_F(ArrayShapeTest, BroadcastToMismatchIsAnErrorNamingTheNode) {
  b_.Op("bad_broadcast", "BroadcastTo", {Input("x", {2, 3}), Ints("s", {2, 4})});
  std::string msg = Shape(Output{graph_.FindNode("x"), 0});
  EXPECT_NE(msg.find("bad_broadcast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unable to broadcast a tensor of shape [2,3] to shape [2,4]"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, SelectV2BroadcastsAllThreeInputs) {
  EXPECT_EQ(Shape(b_.Op("s", "SelectV2", {Input("c", {3}, DT_BOOL), Input("t", {2, 1}), Input("e", {})})), "[2,3]");
  b_.Op("bad_select", "SelectV2", {Input("c2", {4}, DT_BOOL), Input("t2", {2, 3}), Input("e2", {3})});
  std::string msg = Shape(Output{graph_.FindNode("c2"), 0});
  EXPECT_NE(msg.find("bad_select"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broadcast-compatible"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, PlaceholderWithDefaultHasItsDeclaredShape) {
  TensorShapeProto partial;
  partial.add_dim()->set_size(-1);
  partial.add_dim()->set_size(3);
  EXPECT_EQ(Shape(b_.Op("p", "PlaceholderWithDefault", {Input("d", {2, 3})}, {{"shape", MakeAttr(partial)}})),
            "[?,3]");
  b_.Op("bad_default", "PlaceholderWithDefault", {Input("d2", {2, 4})}, {{"shape", MakeAttr(partial)}});
  std::string msg = Shape(Output{graph_.FindNode("d2"), 0});
  EXPECT_NE(msg.find("bad_default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("incompatible with attr 'shape' [?,3]"), std::string::npos) << msg;
}

TEST_F(ArrayShapeTest, InvertPermutationAndConcatOffset) {
  EXPECT_EQ(Shape(b_.Op("inv", "InvertPermutation", {Input("p", {5}, DT_INT32)})), "[5]");
  Node* offsets = b_.AddNode("offsets", "ConcatOffset", {Int("axis", 0), Input("s0", {3}, DT_INT32), Input("s1", {3}, DT_INT32)});
  EXPECT_EQ(Shape(Output{offsets, 1}), "[3]");
}

// ---- Slicing, and shapes computed at run time ----

Output StridedSlice(GraphBuilder& b, const std::string& name, Output x, Output begin, Output end, Output strides,
                    int64_t shrink = 0, int64_t new_axis = 0, int64_t ellipsis = 0, int64_t begin_mask = 0,
                    int64_t end_mask = 0) {
  return b.Op(name, "StridedSlice", {x, begin, end, strides},
              {{"shrink_axis_mask", MakeAttr(shrink)},
               {"new_axis_mask", MakeAttr(new_axis)},
               {"ellipsis_mask", MakeAttr(ellipsis)},
               {"begin_mask", MakeAttr(begin_mask)},
               {"end_mask", MakeAttr(end_mask)}});
}

TEST_F(ArrayShapeTest, StridedSliceFollowsTheMasks) {
  Output x = Input("x", {8, -1, 5});
  // x[1:7:2, :, 3]
  EXPECT_EQ(Shape(StridedSlice(b_, "a", x, Ints("b1", {1, 0, 3}), Ints("e1", {7, 0, 4}), Ints("s1", {2, 1, 1}),
                               /*shrink=*/4, 0, 0, /*begin_mask=*/2, /*end_mask=*/2)),
            "[3,?]");
  // x[..., tf.newaxis, -1]
  EXPECT_EQ(Shape(StridedSlice(b_, "b", x, Ints("b2", {0, 0, -1}), Ints("e2", {0, 0, 0}), Ints("s2", {1, 1, 1}),
                               /*shrink=*/4, /*new_axis=*/2, /*ellipsis=*/1)),
            "[8,?,1]");
  // x[::-1] on the known dim, and a computed begin: only the rank is known.
  EXPECT_EQ(Shape(StridedSlice(b_, "c", x, Ints("b3", {0}), Ints("e3", {0}), Ints("s3", {-1}), 0, 0, 0, 1, 1)),
            "[8,?,5]");
  Output i = Input("i", {1}, DT_INT32);
  // x[i]: the implicit ellipsis takes the other dims whole.
  EXPECT_EQ(Shape(StridedSlice(b_, "d", x, i, Ints("e4", {0}), Ints("s4", {1}), /*shrink=*/1)), "[?,5]");
  // x[i:, ::2] with i computed: the second dim is sliced by masks alone.
  EXPECT_EQ(Shape(StridedSlice(b_, "e", x, b_.Op("i2", "Pack", {b_.Op("i0", "Squeeze", {i}), Int("zero", 0)}),
                               Ints("e5", {0, 0}), Ints("s5", {1, 2}), 0, 0, 0, /*begin_mask=*/2, /*end_mask=*/3)),
            "[?,?,5]");
}

TEST_F(ArrayShapeTest, SliceSplitAndSplitV) {
  Output x = Input("x", {6, -1, 4});
  EXPECT_EQ(Shape(b_.Op("slice", "Slice", {x, Ints("b", {1, 0, 1}), Ints("s", {2, -1, -1})})), "[2,?,3]");
  Node* split = b_.AddNode("split", "Split", {Int("d", -1), x}, {{"num_split", MakeAttr(int64_t{2})}});
  EXPECT_EQ(Shape(Output{split, 1}), "[6,?,2]");
  Node* uneven = b_.AddNode("uneven", "Split", {Int("d0", 0), x}, {{"num_split", MakeAttr(int64_t{4})}});
  EXPECT_EQ(Shape(Output{uneven, 0}), "[?,?,4]");  // 6 / 4: the kernel refuses it
  Node* splitv = b_.AddNode("splitv", "SplitV", {x, Ints("sizes", {1, -1, 2}), Int("d1", 0)},
                            {{"num_split", MakeAttr(int64_t{3})}});
  EXPECT_EQ(Shape(Output{splitv, 1}), "[3,?,4]");
  EXPECT_EQ(Shape(Output{splitv, 2}), "[2,?,4]");
}

TEST_F(ArrayShapeTest, DynamicPartitionKeepsTheTrailingDims) {
  Node* parts = b_.AddNode("parts", "DynamicPartition", {Input("x", {5, 2, 3}), Input("p", {5, 2}, DT_INT32)},
                           {{"num_partitions", MakeAttr(int64_t{2})}});
  EXPECT_EQ(Shape(Output{parts, 1}), "[?,3]");
}

// tf.reshape(x, [tf.shape(x)[0], 28 * 28]) and tf.reshape(x, [-1, tf.shape(x)[1]]):
// the Pack of a computed dim and a constant is followed element by element.
TEST_F(ArrayShapeTest, ReshapeToAShapeBuiltFromShapeOfX) {
  Output x = Input("x", {-1, 28, 28});
  Output x_shape = b_.Op("shape", "Shape", {x});
  Output batch = StridedSlice(b_, "batch", x_shape, Ints("b", {0}), Ints("e", {1}), Ints("s", {1}), /*shrink=*/1);
  Output flat = b_.Op("flat", "Reshape", {x, b_.Op("dims", "Pack", {batch, Int("n", 784)})});
  EXPECT_EQ(Shape(flat), "[?,784]");
  Output y = Input("y", {6, 4});
  Output cols = StridedSlice(b_, "cols", b_.Op("yshape", "Shape", {y}), Ints("b1", {1}), Ints("e1", {2}),
                             Ints("s1", {1}), /*shrink=*/1);
  EXPECT_EQ(Shape(b_.Op("r", "Reshape", {y, b_.Op("dims1", "Pack", {Int("m1", -1), cols})})), "[6,4]");
  // tf.reshape(x, tf.concat([tf.cast(tf.shape(x), tf.int64)[:1], [784]], 0)).
  Output shape64 = b_.Op("shape64", "Cast", {x_shape}, {{"DstT", MakeAttr(DT_INT64)}});
  Output head = StridedSlice(b_, "head", shape64, Ints("b2", {0}), Ints("e2", {1}), Ints("s2", {1}));
  Output tail = b_.Const("tail", Tensor::FromVector<int64_t>({784}));
  EXPECT_EQ(Shape(b_.Op("flat64", "Reshape", {x, b_.Op("dims64", "ConcatV2", {head, tail, Int("axis", 0)})})),
            "[?,784]");
  // A vector computed from nothing known still gives its length as the rank;
  // with one dim, the input's element count is that dim.
  EXPECT_EQ(Shape(b_.Op("r1", "Reshape", {y, Input("v", {1}, DT_INT32)})), "[24]");
}

// A variable's declared shape reaches ReadVariableOp and ResourceGather
// through the handle's edges (here an Identity and a loop's Enter).
TEST_F(ArrayShapeTest, ResourceVariableReadsHaveTheDeclaredShape) {
  TensorShapeProto declared;
  declared.add_dim()->set_size(10);
  declared.add_dim()->set_size(-1);
  Output v = b_.Op("v", "VarHandleOp", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(declared)}});
  Output id = b_.Op("id", "Identity", {v});
  Output enter = b_.Op("enter", "Enter", {id}, {{"frame_name", MakeAttr(std::string("loop"))},
                                                 {"is_constant", MakeAttr(true)}});
  EXPECT_EQ(Shape(b_.Op("read", "ReadVariableOp", {enter}, {{"dtype", MakeAttr(DT_FLOAT)}})), "[10,?]");
  EXPECT_EQ(Shape(b_.Op("rows", "ResourceGather", {v, Input("i", {4, 2}, DT_INT32)}, {{"dtype", MakeAttr(DT_FLOAT)}})),
            "[4,2,?]");
  Output shape = b_.Op("vshape", "VariableShape", {id});
  EXPECT_EQ(Shape(shape), "[2]");
  EXPECT_EQ(Shape(b_.Op("zeros", "Fill", {shape, b_.Scalar<float>("zero", 0)})), "[10,?]");
}

// A TensorArray's element shape (the writes are checked against it) reaches
// its reads and gathers through the handle, also in a loop and from the
// gradient array.
TEST_F(ArrayShapeTest, TensorArrayReadsHaveTheArraysElementShape) {
  TensorShapeProto element;
  element.add_dim()->set_size(2);
  element.add_dim()->set_size(-1);
  Node* ta = b_.AddNode("ta", "TensorArrayV3", {Int("size", 4)},
                        {{"dtype", MakeAttr(DT_FLOAT)}, {"element_shape", MakeAttr(element)}});
  Output handle{ta, 0}, flow{ta, 1};
  Output enter = b_.Op("enter", "Enter", {handle}, {{"frame_name", MakeAttr(std::string("loop"))},
                                                     {"is_constant", MakeAttr(true)}});
  EXPECT_EQ(Shape(b_.Op("read", "TensorArrayReadV3", {enter, Int("i", 0), flow}, {{"dtype", MakeAttr(DT_FLOAT)}})),
            "[2,?]");
  TensorShapeProto gathered;
  gathered.set_unknown_rank(true);
  EXPECT_EQ(Shape(b_.Op("gather", "TensorArrayGatherV3", {handle, Ints("idx", {0, 1, 2}), flow},
                        {{"dtype", MakeAttr(DT_FLOAT)}, {"element_shape", MakeAttr(gathered)}})),
            "[3,2,?]");
  Node* grad = b_.AddNode("grad", "TensorArrayGradV3", {handle, flow}, {{"source", MakeAttr(std::string("g"))}});
  EXPECT_EQ(Shape(b_.Op("grad_read", "TensorArrayReadV3", {Output{grad, 0}, Int("j", 1), Output{grad, 1}},
                        {{"dtype", MakeAttr(DT_FLOAT)}})),
            "[2,?]");
}

// Range's length is the kernel's count; a value known whole (here Rank(x)
// and Size(x)) reaches shape functions as a Const's does.
TEST_F(ArrayShapeTest, RangeOfKnownValues) {
  Output x = Input("x", {4, 5, 6});
  EXPECT_EQ(Shape(b_.Op("r", "Range", {Int("a", 0), b_.Op("rank", "Rank", {x}), Int("d", 1)})), "[3]");
  EXPECT_EQ(Shape(b_.Op("down", "Range", {Int("a1", 10), Int("b1", 1), Int("d1", -4)})), "[3]");  // 10 6 2
  EXPECT_EQ(Shape(b_.Op("wrong_way", "Range", {Int("a2", 0), Int("b2", 5), Int("d2", -1)})), "[?]");
  Output size = b_.Op("size", "Size", {x});
  EXPECT_EQ(Shape(b_.Op("flat", "Reshape", {x, b_.Op("dims", "Pack", {size})})), "[120]");
  EXPECT_EQ(Shape(b_.Op("rows", "Range", {Int("a3", 0), size, Int("d3", 7)})), "[18]");
}


// Integer arithmetic, Range and InvertPermutation of known values reach
// shape functions: softmax_cross_entropy_with_logits' reshape to [-1, the
// last dim], a reduction over Range(0, Rank(x)), a gradient's Transpose back.
TEST_F(ArrayShapeTest, ShapeValuesThroughArithmeticRangeAndInvertPermutation) {
  Output x = Input("x", {8, 12, 65});
  Output rank = b_.Op("rank", "Rank", {x});
  Output last_at = b_.Op("last_at", "Pack", {b_.Op("rank_1", "Sub", {rank, Int("one", 1)})});
  Output last = b_.Op("last", "Slice", {b_.Op("shape", "Shape", {x}), last_at, Ints("len", {1})});
  Output dims = b_.Op("dims", "ConcatV2", {Ints("minus_one", {-1}), last, Int("axis", 0)});
  EXPECT_EQ(Shape(b_.Op("rows", "Reshape", {x, dims})), "[96,65]");
  Output all = b_.Op("all", "Range", {Int("zero", 0), rank, Int("step", 1)});
  EXPECT_EQ(Shape(b_.Op("sum", "Sum", {x, all})), "[]");
  Output half = b_.Op("half", "FloorDiv", {b_.Op("n", "Mul", {Int("eight", 8), Int("twelve", 12)}), Int("two", 2)});
  Output cols = b_.Op("cols", "Maximum", {Int("m", -1), Int("k", -7)});
  EXPECT_EQ(Shape(b_.Op("halves", "Reshape", {x, b_.Op("hdims", "Pack", {half, cols})})), "[48,130]");
  Output y = Input("y", {12, 8, 32});
  Output inverse = b_.Op("inverse", "InvertPermutation", {Ints("perm", {1, 2, 0})});
  EXPECT_EQ(Shape(b_.Op("back", "Transpose", {y, inverse})), "[32,12,8]");
  // Not a permutation: the kernel's error at run time, no value here.
  Output bad = b_.Op("bad", "InvertPermutation", {Ints("twice", {0, 0, 1})});
  EXPECT_EQ(Shape(b_.Op("bad_t", "Transpose", {y, bad})), "[?,?,?]");
  // Near the end of int64 a Range still counts its elements right (in
  // double, 2^63 - 5 and 2^63 - 1 are one number) and knows them: the
  // second minus the first is the step, 4.
  auto int64s = [&](const std::string& name, int64_t v) { return b_.Const(name, Tensor::Scalar<int64_t>(v)); };
  auto int64v = [&](const std::string& name, int64_t v) { return b_.Const(name, Tensor::FromVector<int64_t>({v})); };
  Output tail = b_.Op("tail", "Range", {int64s("s", INT64_MAX - 5), int64s("l", INT64_MAX), int64s("d", 4)},
                      {{"Tidx", MakeAttr(DT_INT64)}});
  EXPECT_EQ(Shape(tail), "[2]");
  Output second = StridedSlice(b_, "second", tail, int64v("b1", 1), int64v("e1", 2), int64v("s1", 1));
  Output first = StridedSlice(b_, "first", tail, int64v("b0", 0), int64v("e0", 1), int64v("s0", 1));
  EXPECT_EQ(Shape(b_.Op("step_fill", "Fill", {b_.Op("step", "Sub", {second, first}), b_.Scalar<float>("z2", 0)})),
            "[4]");
  // A scalar broadcasts over an empty vector: Shape of a scalar, times 2, is
  // still empty (a Fill of it is a scalar); FloorDiv rounds toward -inf.
  Output empty_dims = b_.Op("empty_dims", "Mul", {b_.Op("scalar_shape", "Shape", {Input("s0", {})}), Int("two2", 2)});
  EXPECT_EQ(Shape(b_.Op("scalar_fill", "Fill", {empty_dims, b_.Scalar<float>("z3", 0)})), "[]");
  Output floor = b_.Op("floor", "FloorDiv", {Ints("num", {-7, 7}), Int("den", 2)});  // [-4, 3]
  Output shifted = b_.Op("shifted", "Add", {floor, Ints("shift", {6, 0})});            // [2, 3]
  EXPECT_EQ(Shape(b_.Op("floor_fill", "Fill", {shifted, b_.Scalar<float>("z4", 0)})), "[2,3]");
  // A product past int32 is not a value of the int32 result.
  Output big = b_.Op("big", "Mul", {Int("g1", 1 << 20), Int("g2", 1 << 20)});
  EXPECT_EQ(Shape(b_.Op("fill", "Fill", {b_.Op("fdims", "Pack", {big}), b_.Scalar<float>("z", 0)})), "[?]");
}

// Small matrices of known values reach Pad: a slice's gradient pads its
// input back by Concat([Reshape(begin, [r, 1]), Reshape(after, [r, 1])], 1)
// (TensorFlow's _SliceGrad). ExpandDims makes vectors and one-row or
// one-column matrices. To any op but Reshape, ConcatV2, Identity and Cast a
// matrix value is unknown.
TEST_F(ArrayShapeTest, MatrixValuesThroughReshapeConcatAndExpandDims) {
  Output x = Input("x", {10, 6});
  Output sliced = b_.Op("sliced", "Slice", {x, Ints("begin", {2, 1}), Ints("size", {5, 4})});
  Output rank = b_.Op("rank", "Rank", {x});
  Output column = b_.Op("column", "Pack", {rank, Int("one", 1)});
  Output before = b_.Op("before", "Reshape", {Ints("begin2", {2, 1}), column});
  Output after = b_.Op("after", "Reshape",
                       {b_.Op("rest", "Sub", {b_.Op("sub", "Sub", {b_.Op("shape", "Shape", {x}),
                                                                   b_.Op("sshape", "Shape", {sliced})}),
                                              Ints("begin3", {2, 1})}),
                        column});
  Output paddings = b_.Op("paddings", "ConcatV2", {before, after, Int("axis1", 1)});  // [[2, 3], [1, 1]]
  EXPECT_EQ(Shape(b_.Op("pad", "Pad", {sliced, paddings})), "[10,6]");
  // Stacked the other way: Concat along axis 0 of two one-row matrices.
  Output rows = b_.Op("rows", "ConcatV2",
                      {b_.Op("r0", "ExpandDims", {Ints("p0", {1, 2}), Int("a0", 0)}),
                       b_.Op("r1", "ExpandDims", {Ints("p1", {0, 3}), Int("a1", -2)}), Int("axis0", 0)});
  EXPECT_EQ(Shape(b_.Op("pad_rows", "Pad", {sliced, rows})), "[8,7]");
  // A matrix with an unknown element: Pad knows the rank only.
  Output unknown_after = b_.Op("unknown_after", "Reshape", {Input("u", {2}, DT_INT32), column});
  Output partial = b_.Op("partial", "ConcatV2", {before, unknown_after, Int("axis2", -1)});
  EXPECT_EQ(Shape(b_.Op("pad_partial", "Pad", {sliced, partial})), "[?,?]");
  // ExpandDims of a scalar is a vector: a shape.
  Output dims = b_.Op("dims", "ConcatV2",
                      {b_.Op("e", "ExpandDims", {Int("seven", 7), Int("a3", 0)}), Ints("three", {3}), Int("axis3", 0)});
  EXPECT_EQ(Shape(b_.Op("fill", "Fill", {dims, b_.Scalar<float>("z", 0)})), "[7,3]");
  // A matrix is no shape: a Fill of [[2, 3]] reshaped from a matrix, and an
  // Add of a matrix, know no value.
  Output one_row = b_.Op("one_row", "ExpandDims", {Ints("p2", {2, 3}), Int("a4", 0)});
  EXPECT_EQ(Shape(b_.Op("fill_of_matrix", "Fill", {one_row, b_.Scalar<float>("z1", 0)})), "<unknown>");
  EXPECT_EQ(Shape(b_.Op("fill_matrix", "Fill", {b_.Op("plus", "Add", {one_row, Int("zero", 0)}),
                                                b_.Scalar<float>("z2", 0)})),
            "<unknown>");
  EXPECT_EQ(Shape(b_.Op("fill_flat", "Fill", {b_.Op("flat", "Reshape", {one_row, Ints("m1", {-1})}),
                                              b_.Scalar<float>("z3", 0)})),
            "[2,3]");
}

// A depthwise convolution's output channels are the input's times the
// filter's multiplier, two shapes' dims: a product past any tensor is the
// node's error (it overflowed int64).
TEST_F(ArrayShapeTest, DepthwiseOutputChannelsPastAnyTensorAreAnError) {
  Output x = Input("x", {1, 1, 1, int64_t{1} << 40});
  Output f = Input("f", {1, 1, -1, int64_t{1} << 40});
  const std::string s =
      Shape(b_.Op("dw", "DepthwiseConv2dNative", {x, f},
                  {{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})}, {"padding", MakeAttr("SAME")}}));
  EXPECT_NE(s.find("more output channels than a tensor can hold"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
