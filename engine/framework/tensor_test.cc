// Spec for DataType, TensorShape, Tensor and the CPU Allocator: TensorFlow's
// enum values, overflow-checked shapes, 64-byte-aligned shared buffers, and
// TensorProto decoding that turns every malformed proto into InvalidArgument.
#include "engine/framework/tensor.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/allocator.h"
#include "engine/framework/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

// ---- DataType ----

TEST(DataType, EnumValuesAreTensorFlows) {
  EXPECT_EQ(DT_INVALID, 0);
  EXPECT_EQ(DT_FLOAT, 1);
  EXPECT_EQ(DT_DOUBLE, 2);
  EXPECT_EQ(DT_INT32, 3);
  EXPECT_EQ(DT_UINT8, 4);
  EXPECT_EQ(DT_INT16, 5);
  EXPECT_EQ(DT_INT8, 6);
  EXPECT_EQ(DT_STRING, 7);
  EXPECT_EQ(DT_COMPLEX64, 8);
  EXPECT_EQ(DT_INT64, 9);
  EXPECT_EQ(DT_BOOL, 10);
  EXPECT_EQ(DT_BFLOAT16, 14);
  EXPECT_EQ(DT_UINT16, 17);
  EXPECT_EQ(DT_HALF, 19);
}

TEST(DataType, RefTypesAreValueTypesPlus100) {
  EXPECT_EQ(DT_FLOAT_REF, 101);
  EXPECT_EQ(DT_DOUBLE_REF, 102);
  EXPECT_EQ(DT_INT32_REF, 103);
  EXPECT_EQ(DT_UINT8_REF, 104);
  EXPECT_EQ(DT_INT16_REF, 105);
  EXPECT_EQ(DT_INT8_REF, 106);
  EXPECT_EQ(DT_STRING_REF, 107);
  EXPECT_EQ(DT_COMPLEX64_REF, 108);
  EXPECT_EQ(DT_INT64_REF, 109);
  EXPECT_EQ(DT_BOOL_REF, 110);
  EXPECT_EQ(DT_BFLOAT16_REF, 114);
  EXPECT_EQ(DT_UINT16_REF, 117);
  EXPECT_EQ(DT_HALF_REF, 119);
  for (DataType t : AllSupportedTypes()) {
    SCOPED_TRACE(DataTypeString(t));
    EXPECT_FALSE(IsRefType(t));
    DataType ref = MakeRefType(t);
    EXPECT_EQ(static_cast<int>(ref), static_cast<int>(t) + 100);
    EXPECT_TRUE(IsRefType(ref));
    EXPECT_EQ(BaseType(ref), t);
    EXPECT_EQ(BaseType(t), t);
    EXPECT_EQ(MakeRefType(ref), ref);
    EXPECT_EQ(DataTypeString(ref), DataTypeString(t) + "_ref");
  }
}

TEST(DataType, SupportedTypesAreExactlyTheThirteenInEnumOrder) {
  EXPECT_EQ(AllSupportedTypes(),
            (std::vector<DataType>{DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING,
                                   DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_HALF}));
  EXPECT_FALSE(DataTypeIsSupported(DT_INVALID));
  EXPECT_FALSE(DataTypeIsSupported(DT_QINT8));
  EXPECT_FALSE(DataTypeIsSupported(DT_RESOURCE));
  EXPECT_FALSE(DataTypeIsSupported(DT_FLOAT_REF));
}

TEST(DataType, StringRoundTripsForEverySupportedType) {
  for (DataType t : AllSupportedTypes()) {
    std::string name = DataTypeString(t);
    SCOPED_TRACE(name);
    auto parsed = DataTypeFromString(name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, t);
  }
}

TEST(DataType, ResourceFlowsButIsNotAValueType) {
  EXPECT_EQ(DataTypeString(DT_RESOURCE), "resource");
  EXPECT_EQ(DataTypeFromString("resource").value(), DT_RESOURCE);
  EXPECT_TRUE(DataTypeCanFlow(DT_RESOURCE));
  EXPECT_TRUE(DataTypeCanFlow(DT_FLOAT));
  EXPECT_FALSE(DataTypeCanFlow(DT_VARIANT));
  EXPECT_FALSE(DataTypeIsSupported(DT_RESOURCE));
}

TEST(Tensor, ResourceHandlesAreObjectsThatCopyAndPrint) {
  Tensor t(DT_RESOURCE, TensorShape({2}));
  ASSERT_TRUE(t.IsInitialized());
  EXPECT_EQ(t.data<ResourceHandle>()[1].name, "");
  ResourceHandle h;
  h.container = "localhost";
  h.name = std::string(100, 'w');  // longer than any small-string buffer
  h.type_name = "ResourceVariable";
  h.dtype = DT_FLOAT;
  t.data<ResourceHandle>()[0] = h;
  Tensor c = t.Clone();
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_EQ(c.data<ResourceHandle>()[0], h);
  EXPECT_THAT(t.DebugString(), HasSubstr("localhost/www"));
  TensorProto p;
  t.AsProtoTensorContent(&p);
  EXPECT_EQ(p.dtype(), DT_RESOURCE);
  EXPECT_TRUE(p.tensor_content().empty());
  EXPECT_FALSE(Tensor::FromProto(p).ok());  // handles are never decoded from bytes
}

TEST(DataType, NamesAreTensorFlowSpellings) {
  EXPECT_EQ(DataTypeString(DT_FLOAT), "float");
  EXPECT_EQ(DataTypeString(DT_INT32), "int32");
  EXPECT_EQ(DataTypeString(DT_COMPLEX64), "complex64");
  EXPECT_EQ(DataTypeString(DT_BFLOAT16), "bfloat16");
  EXPECT_EQ(DataTypeString(DT_HALF), "half");
  EXPECT_EQ(DataTypeString(DT_FLOAT_REF), "float_ref");
  EXPECT_EQ(DataTypeString(DT_INVALID), "invalid");
  EXPECT_THAT(DataTypeString(DT_QINT8), HasSubstr("11"));
  // Enum values from a hostile proto (tests/malformed_rpc_test): no recursion
  // per hundred, which overflowed the stack for 2^31 - 1.
  EXPECT_EQ(DataTypeString(static_cast<DataType>(9999)), "unsupported_dtype(9999)");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(2147483647)), "unsupported_dtype(2147483647)");
  EXPECT_EQ(DataTypeString(static_cast<DataType>(-3)), "unsupported_dtype(-3)");
  EXPECT_EQ(*DataTypeFromString("float32"), DT_FLOAT);
  EXPECT_EQ(*DataTypeFromString("float64"), DT_DOUBLE);
  EXPECT_EQ(*DataTypeFromString("float16"), DT_HALF);
}

TEST(DataType, FromStringRejectsUnknownNamesAndRefs) {
  for (const char* bad : {"", "Float", "floatt", "float_ref", "qint8", "DT_FLOAT"}) {
    SCOPED_TRACE(bad);
    auto parsed = DataTypeFromString(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(std::string("'") + bad + "'"));
  }
}

TEST(DataType, SizesAndClasses) {
  EXPECT_EQ(DataTypeSize(DT_FLOAT), 4);
  EXPECT_EQ(DataTypeSize(DT_DOUBLE), 8);
  EXPECT_EQ(DataTypeSize(DT_INT8), 1);
  EXPECT_EQ(DataTypeSize(DT_UINT16), 2);
  EXPECT_EQ(DataTypeSize(DT_COMPLEX64), 8);
  EXPECT_EQ(DataTypeSize(DT_BOOL), 1);
  EXPECT_EQ(DataTypeSize(DT_HALF), 2);
  EXPECT_EQ(DataTypeSize(DT_BFLOAT16), 2);
  EXPECT_EQ(DataTypeSize(DT_STRING), 0);
  EXPECT_EQ(DataTypeSize(DT_QINT8), 0);
  EXPECT_TRUE(DataTypeIsFloating(DT_BFLOAT16));
  EXPECT_FALSE(DataTypeIsFloating(DT_INT32));
  EXPECT_TRUE(DataTypeIsInteger(DT_UINT16));
  EXPECT_FALSE(DataTypeIsInteger(DT_BOOL));
  EXPECT_EQ(DataTypeToEnum<int64_t>::value, DT_INT64);
  EXPECT_EQ(DataTypeToEnum<half>::value, DT_HALF);
  EXPECT_EQ(DataTypeToEnum<tstring>::value, DT_STRING);
}

// ---- TensorShape ----

TEST(TensorShape, ScalarHasRankZeroAndOneElement) {
  TensorShape s;
  EXPECT_EQ(s.dims(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.DebugString(), "[]");
}

TEST(TensorShape, NumElementsIsTheProduct) {
  TensorShape s{2, 3, 4};
  EXPECT_EQ(s.dims(), 3);
  EXPECT_EQ(s.dim_size(1), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  s.AddDim(5);
  EXPECT_EQ(s.num_elements(), 120);
  EXPECT_EQ(s, (TensorShape{2, 3, 4, 5}));
  EXPECT_NE(s, (TensorShape{2, 3, 4}));
}

TEST(TensorShape, ZeroDimsGiveZeroElements) {
  EXPECT_EQ((TensorShape{0}).num_elements(), 0);
  EXPECT_EQ((TensorShape{2, 0, 3}).num_elements(), 0);
  auto s = TensorShape::Build({0, 1000000, 1000000});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_elements(), 0);
  EXPECT_EQ(s->dims(), 3);
}

TEST(TensorShape, BuildRejectsNegativeDims) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{-1}, {2, -3}, {4, 5, std::numeric_limits<int64_t>::min()}}) {
    auto s = TensorShape::Build(dims);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("negative"));
  }
}

TEST(TensorShape, BuildAcceptsExactly2To62Elements) {
  auto s = TensorShape::Build({int64_t{1} << 31, int64_t{1} << 31});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_elements(), kMaxTensorElements);
  EXPECT_EQ(kMaxTensorElements, int64_t{1} << 62);
  auto one_dim = TensorShape::Build({int64_t{1} << 62});
  ASSERT_TRUE(one_dim.ok()) << one_dim.status();
}

TEST(TensorShape, BuildRejectsProductsOver2To62) {
  const int64_t big = int64_t{1} << 31;
  const std::vector<std::vector<int64_t>> cases = {
      {(int64_t{1} << 62) + 1},
      {std::numeric_limits<int64_t>::max()},
      {big, big, 2},
      {3, int64_t{1} << 61},
      // Would wrap to a small positive number in unchecked int64 arithmetic.
      {int64_t{1} << 32, int64_t{1} << 32, 3},
      {big, big + 1},
  };
  for (const auto& dims : cases) {
    auto s = TensorShape::Build(dims);
    ASSERT_FALSE(s.ok()) << s->DebugString();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("overflow"));
  }
}

// Issue 22, class 1: a zero dim does not switch the bound off. [0, 2^62, 4]
// has no elements, but dropping its 0 (a reduction over axis 0) or a
// row-major stride (4 * 2^62) would overflow, so it is rejected; every dim
// and the product of the non-zero dims stay within 2^62, wherever the 0 is.
TEST(TensorShape, ZeroDimsDoNotSwitchOffTheBound) {
  const int64_t big = int64_t{1} << 62;
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {0, big, 4},
           {big, 0, 4},
           {4, big, 0},
           {0, std::numeric_limits<int64_t>::max()},
           {0, int64_t{1} << 32, int64_t{1} << 32, 0},
           {0, int64_t{1} << 31, int64_t{1} << 31, 2},
       }) {
    auto s = TensorShape::Build(dims);
    ASSERT_FALSE(s.ok()) << s->DebugString();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("non-zero dimensions exceeds 2^62"));
  }
  // Zero-element shapes inside the bound are fine, and count zero elements.
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {0, big}, {big, 0}, {0, int64_t{1} << 31, 0, int64_t{1} << 31}, {0}, {3, 0, 5}}) {
    auto s = TensorShape::Build(dims);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->num_elements(), 0);
  }
  // TryAddDim after a 0 still checks, and leaves the shape as it was.
  TensorShape z{0, int64_t{1} << 40};
  EXPECT_EQ(z.TryAddDim(int64_t{1} << 30).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(z.dims(), 2);
  EXPECT_TRUE(z.TryAddDim(int64_t{1} << 22).ok());
  EXPECT_EQ(z.num_elements(), 0);
  EXPECT_DEATH(TensorShape({0, big, 4}), "non-zero dimensions");
}

TEST(TensorShape, RankIsBounded) {
  std::vector<int64_t> dims(kMaxTensorRank, 1);
  EXPECT_TRUE(TensorShape::Build(dims).ok());
  dims.push_back(1);
  auto s = TensorShape::Build(dims);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("more than 254 dimensions"));
}

TEST(TensorShape, TryAddDimLeavesTheShapeUnchangedOnError) {
  TensorShape s{int64_t{1} << 40};
  absl::Status st = s.TryAddDim(int64_t{1} << 30);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.dims(), 1);
  EXPECT_EQ(s.num_elements(), int64_t{1} << 40);
  EXPECT_EQ(s.TryAddDim(-2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.dims(), 1);
  EXPECT_TRUE(s.TryAddDim(4).ok());
  EXPECT_EQ(s.num_elements(), int64_t{1} << 42);
}

TEST(TensorShape, ConstructorChecksItsPrecondition) {
  EXPECT_DEATH(TensorShape({2, -1}), "negative");
}

TEST(TensorShape, ProtoRoundTrip) {
  TensorShape s{7, 0, 3};
  TensorShapeProto proto;
  s.AsProto(&proto);
  ASSERT_EQ(proto.dim_size(), 3);
  EXPECT_EQ(proto.dim(0).size(), 7);
  EXPECT_FALSE(proto.unknown_rank());
  auto back = TensorShape::FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(TensorShape, FromProtoRejectsPartialShapes) {
  TensorShapeProto unknown_rank;
  unknown_rank.set_unknown_rank(true);
  EXPECT_EQ(TensorShape::FromProto(unknown_rank).status().code(), absl::StatusCode::kInvalidArgument);
  TensorShapeProto unknown_dim;
  unknown_dim.add_dim()->set_size(2);
  unknown_dim.add_dim()->set_size(-1);
  EXPECT_EQ(TensorShape::FromProto(unknown_dim).status().code(), absl::StatusCode::kInvalidArgument);
  TensorShapeProto huge;
  huge.add_dim()->set_size(int64_t{1} << 40);
  huge.add_dim()->set_size(int64_t{1} << 40);
  EXPECT_EQ(TensorShape::FromProto(huge).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Tensor buffers ----

bool IsAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kTensorAlignment == 0; }

TEST(Tensor, BuffersAre64ByteAlignedForEveryTypeAndSize) {
  EXPECT_EQ(kTensorAlignment, 64u);
  for (DataType t : AllSupportedTypes()) {
    for (int64_t n : {0, 1, 3, 17, 64, 1000}) {
      SCOPED_TRACE(DataTypeString(t) + " x " + std::to_string(n));
      Tensor x(t, TensorShape{n});
      EXPECT_TRUE(x.IsInitialized());
      EXPECT_EQ(x.dtype(), t);
      EXPECT_EQ(x.NumElements(), n);
      ASSERT_NE(x.raw_data(), nullptr);
      EXPECT_TRUE(IsAligned(x.raw_data())) << x.raw_data();
      size_t element = t == DT_STRING ? sizeof(tstring) : DataTypeSize(t);
      EXPECT_EQ(x.TotalBytes(), n * element);
    }
  }
}

TEST(Tensor, ZeroElementBuffersAreDistinct) {
  Tensor a(DT_FLOAT, TensorShape{0});
  Tensor b(DT_FLOAT, TensorShape{0, 4});
  EXPECT_NE(a.raw_data(), b.raw_data());
  EXPECT_FALSE(a.SharesBufferWith(b));
}

TEST(Tensor, DefaultTensorIsUninitialized) {
  Tensor t;
  EXPECT_EQ(t.dtype(), DT_INVALID);
  EXPECT_FALSE(t.IsInitialized());
  EXPECT_EQ(t.raw_data(), nullptr);
  EXPECT_FALSE(t.SharesBufferWith(Tensor()));
}

TEST(Tensor, CopySharesTheBuffer) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3});
  Tensor b = a;
  EXPECT_TRUE(b.SharesBufferWith(a));
  EXPECT_EQ(b.raw_data(), a.raw_data());
  b.data<float>()[1] = 20;
  EXPECT_EQ(a.data<float>()[1], 20);
}

TEST(Tensor, CloneIsADeepCopy) {
  Tensor a = Tensor::FromVector<int32_t>({1, 2, 3, 4});
  Tensor c = a.Clone();
  EXPECT_FALSE(c.SharesBufferWith(a));
  EXPECT_NE(c.raw_data(), a.raw_data());
  EXPECT_TRUE(IsAligned(c.raw_data()));
  EXPECT_EQ(c.dtype(), DT_INT32);
  EXPECT_EQ(c.shape(), a.shape());
  c.data<int32_t>()[0] = 100;
  EXPECT_EQ(a.data<int32_t>()[0], 1);
  EXPECT_EQ(c.data<int32_t>()[3], 4);
}

TEST(Tensor, CloneOfAnEmptyTensorIsAnEmptyTensor) {
  Tensor a(DT_DOUBLE, TensorShape{3, 0});
  Tensor c = a.Clone();
  EXPECT_EQ(c.shape(), (TensorShape{3, 0}));
  EXPECT_EQ(c.dtype(), DT_DOUBLE);
  EXPECT_TRUE(c.IsInitialized());
}

TEST(Tensor, StringTensorsConstructCopyCloneAndDestroy) {
  // Long strings live on the heap: a missing destructor leaks (asan), a
  // missing constructor crashes on assignment.
  const std::string long_a(100, 'a');
  const std::string long_b(200, 'b');
  Tensor clone;
  {
    Tensor t(DT_STRING, TensorShape{2, 3});
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<tstring>()[i], "");
    t.data<tstring>()[0] = long_a;
    t.data<tstring>()[5] = long_b;
    Tensor shared = t;
    clone = t.Clone();
    shared.data<tstring>()[1] = "via copy";
    EXPECT_EQ(t.data<tstring>()[1], "via copy");
    t.data<tstring>()[0] = "changed";
  }
  ASSERT_EQ(clone.NumElements(), 6);
  EXPECT_EQ(clone.data<tstring>()[0], long_a);
  EXPECT_EQ(clone.data<tstring>()[1], "");
  EXPECT_EQ(clone.data<tstring>()[5], long_b);
  Tensor scalar = Tensor::Scalar<tstring>(std::string(64, 'z'));
  EXPECT_EQ(scalar.scalar<tstring>(), std::string(64, 'z'));
}

TEST(Tensor, ReshapedSharesTheBufferWithANewShape) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6});
  auto r = a.Reshaped(TensorShape{2, 3});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->SharesBufferWith(a));
  EXPECT_EQ(r->shape(), (TensorShape{2, 3}));
  EXPECT_EQ(a.shape(), (TensorShape{6}));
  EXPECT_EQ((r->matrix<float>()(1, 0)), 4);
  auto bad = a.Reshaped(TensorShape{4, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("[4,2]"));
}

TEST(Tensor, EigenViewsMapTheBuffer) {
  Tensor t(DT_FLOAT, TensorShape{2, 2});
  t.flat<float>().setConstant(1.5f);
  t.matrix<float>()(1, 1) = 7;
  EXPECT_EQ(t.data<float>()[3], 7);
  EXPECT_EQ(t.data<float>()[0], 1.5f);
  EXPECT_EQ((t.tensor<float, 2>()(0, 1)), 1.5f);
}

TEST(Tensor, TypedAccessChecksTheDtype) {
  Tensor t(DT_FLOAT, TensorShape{2});
  EXPECT_DEATH(t.data<int32_t>(), "dtype mismatch");
}

TEST(Tensor, AllocateReportsBadTypesAndExhaustion) {
  auto bad = Tensor::Allocate(CpuAllocator(), DT_QINT8, TensorShape{2});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto ref = Tensor::Allocate(CpuAllocator(), DT_FLOAT_REF, TensorShape{2});
  EXPECT_EQ(ref.status().code(), absl::StatusCode::kInvalidArgument);

  class FailingAllocator : public Allocator {
   public:
    std::string Name() const override { return "failing"; }
    void* AllocateRaw(size_t, size_t) override { return nullptr; }
    void DeallocateRaw(void*, size_t) override {}
    AllocatorStats GetStats() const override { return {}; }
  } failing;
  auto oom = Tensor::Allocate(&failing, DT_FLOAT, TensorShape{16});
  ASSERT_FALSE(oom.ok());
  EXPECT_EQ(oom.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(oom.status().message(), HasSubstr("failing"));
}

// A shape whose element count fits in 2^62 but whose byte count does not fit
// in memory's address space must not wrap to a small allocation.
TEST(Tensor, AllocateRejectsByteCountsThatOverflow) {
  const int64_t n = (int64_t{1} << 61) + 1;  // * 8 bytes wraps to 8 in 64 bits
  for (DataType t : {DT_INT64, DT_DOUBLE, DT_COMPLEX64, DT_STRING}) {
    SCOPED_TRACE(DataTypeString(t));
    auto x = Tensor::Allocate(CpuAllocator(), t, TensorShape{n});
    ASSERT_FALSE(x.ok());
    EXPECT_EQ(x.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// ---- Allocator ----

TEST(Allocator, StatsFollowTensorLifetimes) {
  Allocator* a = CpuAllocator();
  EXPECT_EQ(a->Name(), "cpu");
  const AllocatorStats before = a->GetStats();
  {
    Tensor t(DT_DOUBLE, TensorShape{1000});
    const AllocatorStats during = a->GetStats();
    EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, 8000);
    EXPECT_EQ(during.num_allocs - before.num_allocs, 1);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_GE(during.largest_alloc_size, 8000);
    Tensor copy = t;  // shares; no new allocation
    EXPECT_EQ(a->GetStats().bytes_in_use, during.bytes_in_use);
    EXPECT_EQ(a->GetStats().num_allocs, during.num_allocs);
  }
  EXPECT_EQ(a->GetStats().bytes_in_use, before.bytes_in_use);
}

TEST(Allocator, ZeroByteRequestsReturnUniqueAlignedPointers) {
  Allocator* a = CpuAllocator();
  void* p = a->AllocateRaw(kTensorAlignment, 0);
  void* q = a->AllocateRaw(kTensorAlignment, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_NE(p, q);
  EXPECT_TRUE(IsAligned(p));
  a->DeallocateRaw(p, 0);
  a->DeallocateRaw(q, 0);
}

// Records every call, so tests can see which allocator a Tensor uses and that
// it frees what it allocated with the same size.
class RecordingAllocator : public Allocator {
 public:
  std::string Name() const override { return "recording"; }
  void* AllocateRaw(size_t alignment, size_t num_bytes) override {
    ++allocs;
    last_alignment = alignment;
    in_use += static_cast<int64_t>(num_bytes);
    return CpuAllocator()->AllocateRaw(alignment, num_bytes);
  }
  void DeallocateRaw(void* ptr, size_t num_bytes) override {
    ++frees;
    in_use -= static_cast<int64_t>(num_bytes);
    CpuAllocator()->DeallocateRaw(ptr, num_bytes);
  }
  AllocatorStats GetStats() const override {
    AllocatorStats s;
    s.bytes_in_use = in_use;
    return s;
  }
  int allocs = 0, frees = 0;
  size_t last_alignment = 0;
  int64_t in_use = 0;
};

TEST(Allocator, TensorsReturnTheirBufferToTheAllocatorTheyCameFrom) {
  RecordingAllocator rec;
  {
    Tensor t(&rec, DT_HALF, TensorShape{3, 5});
    EXPECT_EQ(rec.allocs, 1);
    EXPECT_EQ(rec.last_alignment, kTensorAlignment);
    EXPECT_EQ(rec.in_use, 30);
    Tensor s(&rec, DT_STRING, TensorShape{4});
    EXPECT_EQ(rec.in_use, 30 + 4 * static_cast<int64_t>(sizeof(tstring)));
    s.data<tstring>()[2] = std::string(50, 'x');
  }
  EXPECT_EQ(rec.frees, 2);
  EXPECT_EQ(rec.in_use, 0);
}

// ---- TensorProto ----

template <typename T>
T ValueFor(int i) {
  return static_cast<T>(i * 3 - 7);
}
template <>
bool ValueFor<bool>(int i) { return i % 3 == 1; }
template <>
uint8_t ValueFor<uint8_t>(int i) { return static_cast<uint8_t>(200 + i); }
template <>
uint16_t ValueFor<uint16_t>(int i) { return static_cast<uint16_t>(60000 + i); }
template <>
half ValueFor<half>(int i) { return half(0.5f * i - 1.0f); }
template <>
bfloat16 ValueFor<bfloat16>(int i) { return bfloat16(0.25f * i - 2.0f); }
template <>
complex64 ValueFor<complex64>(int i) { return complex64(1.5f * i, -0.5f * i); }
template <>
tstring ValueFor<tstring>(int i) { return std::string(static_cast<size_t>(i * 7), static_cast<char>('a' + i)); }
template <>
double ValueFor<double>(int i) { return 1e300 / (i + 1); }
template <>
int64_t ValueFor<int64_t>(int i) { return (int64_t{1} << 50) * (i % 2 == 0 ? 1 : -1) + i; }

// A tensor of `dtype` and `shape` with distinct, exactly representable values.
Tensor MakeTensor(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  SLUICE_SWITCH_ALL_TYPES(dtype, ADD_FAILURE() << "unsupported", {
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = ValueFor<T>(static_cast<int>(i));
  });
  return t;
}

void ExpectSameValues(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  SLUICE_SWITCH_ALL_TYPES(a.dtype(), ADD_FAILURE() << "unsupported", {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      EXPECT_TRUE(a.data<T>()[i] == b.data<T>()[i]) << "element " << i;
    }
  });
}

TEST(TensorProto, RoundTripsEverySupportedType) {
  for (DataType dtype : AllSupportedTypes()) {
    for (const TensorShape& shape : {TensorShape{}, TensorShape{2, 3}, TensorShape{0, 4}}) {
      SCOPED_TRACE(DataTypeString(dtype) + " " + shape.DebugString());
      Tensor original = MakeTensor(dtype, shape);
      TensorProto proto;
      original.AsProtoTensorContent(&proto);
      EXPECT_EQ(proto.dtype(), dtype);
      ASSERT_EQ(proto.tensor_shape().dim_size(), shape.dims());
      if (dtype == DT_STRING) {
        EXPECT_EQ(proto.string_val_size(), shape.num_elements());
        EXPECT_TRUE(proto.tensor_content().empty());
      } else {
        EXPECT_EQ(proto.tensor_content().size(), shape.num_elements() * DataTypeSize(dtype));
      }
      auto back = Tensor::FromProto(proto);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_FALSE(back->SharesBufferWith(original));
      EXPECT_TRUE(IsAligned(back->raw_data()));
      ExpectSameValues(original, *back);
    }
  }
}

TEST(TensorProto, TensorContentIsLittleEndianBytes) {
  Tensor t = Tensor::FromVector<int32_t>({0x01020304});
  TensorProto proto;
  t.AsProtoTensorContent(&proto);
  EXPECT_EQ(proto.tensor_content(), std::string("\x04\x03\x02\x01", 4));
}

TensorProto ProtoOf(DataType dtype, std::vector<int64_t> dims) {
  TensorProto p;
  p.set_dtype(dtype);
  for (int64_t d : dims) p.mutable_tensor_shape()->add_dim()->set_size(d);
  return p;
}

TEST(TensorProto, TypedFieldsFillTheTensor) {
  TensorProto p = ProtoOf(DT_FLOAT, {2, 2});
  for (float f : {1.f, 2.f, 3.f, 4.f}) p.add_float_val(f);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (TensorShape{2, 2}));
  EXPECT_EQ(t->SummarizeValue(10), "1 2 3 4");
}

TEST(TensorProto, ASingleValueBroadcastsToTheWholeShape) {
  TensorProto p = ProtoOf(DT_DOUBLE, {2, 3});
  p.add_double_val(2.5);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->data<double>()[i], 2.5);
}

TEST(TensorProto, FewerValuesRepeatTheLastOneAsTensorFlowDoes) {
  TensorProto p = ProtoOf(DT_INT64, {4});
  p.add_int64_val(5);
  p.add_int64_val(-9);
  auto t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->SummarizeValue(10), "5 -9 -9 -9");
}

TEST(TensorProto, NoValuesMeansZeros) {
  auto t = Tensor::FromProto(ProtoOf(DT_INT32, {3}));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->SummarizeValue(10), "0 0 0");
  auto s = Tensor::FromProto(ProtoOf(DT_STRING, {2}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data<tstring>()[1], "");
}

TEST(TensorProto, IntValFeedsTheSmallIntegerTypes) {
  struct Case {
    DataType dtype;
    std::vector<int32_t> values;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{{DT_INT8, {-128, 127}, "-128 127"},
                                         {DT_UINT8, {0, 255}, "0 255"},
                                         {DT_INT16, {-32768, 32767}, "-32768 32767"},
                                         {DT_UINT16, {0, 65535}, "0 65535"},
                                         {DT_INT32, {-5, 6}, "-5 6"}}) {
    SCOPED_TRACE(DataTypeString(c.dtype));
    TensorProto p = ProtoOf(c.dtype, {2});
    for (int32_t v : c.values) p.add_int_val(v);
    auto t = Tensor::FromProto(p);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->SummarizeValue(10), c.expected);
  }
}

TEST(TensorProto, BoolStringAndComplexFields) {
  TensorProto b = ProtoOf(DT_BOOL, {3});
  b.add_bool_val(true);
  b.add_bool_val(false);
  auto bt = Tensor::FromProto(b);
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_EQ(bt->SummarizeValue(10), "1 0 0");

  TensorProto s = ProtoOf(DT_STRING, {2});
  s.add_string_val("hello");
  s.add_string_val(std::string(300, 'q'));
  auto st = Tensor::FromProto(s);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->data<tstring>()[0], "hello");
  EXPECT_EQ(st->data<tstring>()[1], std::string(300, 'q'));

  TensorProto c = ProtoOf(DT_COMPLEX64, {2});
  for (float f : {1.f, -2.f, 3.f, -4.f}) c.add_scomplex_val(f);
  auto ct = Tensor::FromProto(c);
  ASSERT_TRUE(ct.ok()) << ct.status();
  EXPECT_EQ(ct->data<complex64>()[1], complex64(3, -4));

  TensorProto odd = ProtoOf(DT_COMPLEX64, {2});
  for (float f : {1.f, -2.f, 3.f}) odd.add_scomplex_val(f);
  EXPECT_EQ(Tensor::FromProto(odd).status().code(), absl::StatusCode::kInvalidArgument);
}

// Issue 22, class 12: a C++ bool loaded from a byte other than 0/1 is
// undefined behaviour (ASan's UBSan aborts on it), so tensor_content of a
// bool tensor must hold only 0 and 1; ValidateProto says so without
// allocating, and names the element.
TEST(TensorProto, BoolContentMustBeZeroOrOne) {
  TensorProto ok = ProtoOf(DT_BOOL, {3});
  ok.set_tensor_content(std::string("\x01\x00\x01", 3));
  auto t = Tensor::FromProto(ok);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->SummarizeValue(10), "1 0 1");
  for (char bad : {'\x02', '\xff', 'A'}) {
    TensorProto p = ProtoOf(DT_BOOL, {3});
    p.set_tensor_content(std::string("\x00\x01", 2) + bad);
    for (auto status : {Tensor::FromProto(p).status(), Tensor::ValidateProto(p).status()}) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(status.message(), HasSubstr("bool element 2 is stored as byte"));
    }
  }
  EXPECT_TRUE(ValidateBoolBytes(std::string("\x00\x01", 2)).ok());
  EXPECT_FALSE(ValidateBoolBytes("\x07").ok());
}

TEST(TensorProto, HalfValHoldsTheBitsOfHalfAndBfloat16) {
  TensorProto h = ProtoOf(DT_HALF, {2});
  h.add_half_val(0x3E00);  // 1.5 in IEEE half
  h.add_half_val(0xC000);  // -2
  auto ht = Tensor::FromProto(h);
  ASSERT_TRUE(ht.ok()) << ht.status();
  EXPECT_EQ(static_cast<float>(ht->data<half>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(ht->data<half>()[1]), -2.0f);

  TensorProto bf = ProtoOf(DT_BFLOAT16, {3});
  bf.add_half_val(0x3FC0);  // 1.5 in bfloat16
  auto bt = Tensor::FromProto(bf);
  ASSERT_TRUE(bt.ok()) << bt.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<float>(bt->data<bfloat16>()[i]), 1.5f);

  TensorProto too_many = ProtoOf(DT_HALF, {1});
  too_many.add_half_val(0);
  too_many.add_half_val(0);
  EXPECT_EQ(Tensor::FromProto(too_many).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProto, TooManyValuesIsAnError) {
  TensorProto p = ProtoOf(DT_FLOAT, {2});
  for (float f : {1.f, 2.f, 3.f}) p.add_float_val(f);
  auto t = Tensor::FromProto(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("float_val"));

  TensorProto empty = ProtoOf(DT_INT32, {0});
  empty.add_int_val(1);
  EXPECT_EQ(Tensor::FromProto(empty).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProto, WrongTensorContentSizeIsAnError) {
  for (size_t bytes : {size_t{4}, size_t{7}, size_t{9}, size_t{100}}) {
    TensorProto p = ProtoOf(DT_FLOAT, {2});
    p.set_tensor_content(std::string(bytes, '\0'));
    auto t = Tensor::FromProto(p);
    ASSERT_FALSE(t.ok()) << bytes;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr("tensor_content"));
  }
  TensorProto s = ProtoOf(DT_STRING, {1});
  s.set_tensor_content("abcd");
  EXPECT_EQ(Tensor::FromProto(s).status().code(), absl::StatusCode::kInvalidArgument);
}

// A few bytes of tensor_content must not describe a tensor whose byte count
// wraps around 2^64 back to those few bytes.
TEST(TensorProto, TensorContentSizeCheckDoesNotWrap) {
  TensorProto p = ProtoOf(DT_INT64, {(int64_t{1} << 61) + 1});  // 2^64 + 8 bytes
  p.set_tensor_content(std::string(8, '\x01'));
  auto t = Tensor::FromProto(p);
  ASSERT_FALSE(t.ok()) << t->DebugString();
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProto, BroadcastToAShapeWhoseBytesOverflowIsAnError) {
  TensorProto p = ProtoOf(DT_INT64, {(int64_t{1} << 61) + 1});
  p.add_int64_val(3);
  EXPECT_EQ(Tensor::FromProto(p).status().code(), absl::StatusCode::kInvalidArgument);
  TensorProto s = ProtoOf(DT_STRING, {(int64_t{1} << 59) + 1});  // * 32 bytes wraps
  s.add_string_val("x");
  EXPECT_EQ(Tensor::FromProto(s).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProto, UnsupportedDtypesAreErrors) {
  for (DataType dtype : {DT_INVALID, DT_QINT8, DT_RESOURCE, DT_VARIANT, DT_COMPLEX128, DT_FLOAT_REF,
                         static_cast<DataType>(999)}) {
    SCOPED_TRACE(static_cast<int>(dtype));
    TensorProto p = ProtoOf(dtype, {1});
    auto t = Tensor::FromProto(p);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr("dtype"));
  }
}

TEST(TensorProto, BadShapesAreErrors) {
  EXPECT_EQ(Tensor::FromProto(ProtoOf(DT_FLOAT, {-1})).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromProto(ProtoOf(DT_FLOAT, {int64_t{1} << 40, int64_t{1} << 40})).status().code(),
            absl::StatusCode::kInvalidArgument);
  TensorProto unknown = ProtoOf(DT_FLOAT, {});
  unknown.mutable_tensor_shape()->set_unknown_rank(true);
  EXPECT_EQ(Tensor::FromProto(unknown).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProto, FromProtoUsesTheGivenAllocator) {
  RecordingAllocator rec;
  {
    TensorProto p = ProtoOf(DT_FLOAT, {4});
    p.add_float_val(1);
    auto t = Tensor::FromProto(p, &rec);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(rec.allocs, 1);
    EXPECT_EQ(rec.in_use, 16);
  }
  EXPECT_EQ(rec.in_use, 0);
}

// ---- DebugString ----

TEST(Tensor, DebugStringShowsTypeShapeAndValues) {
  Tensor t = Tensor::FromVector<float>({1, 2.5f, 3, 4}, TensorShape{2, 2});
  EXPECT_EQ(t.DebugString(), "Tensor<float, [2,2]: 1 2.5 3 4>");
  EXPECT_EQ(t.DebugString(2), "Tensor<float, [2,2]: 1 2.5...>");
  EXPECT_EQ(Tensor::Scalar<int32_t>(-3).DebugString(), "Tensor<int32, []: -3>");
  EXPECT_EQ(Tensor::FromVector<int8_t>({-1, 65}).DebugString(), "Tensor<int8, [2]: -1 65>");
  EXPECT_EQ(Tensor::FromVector<uint8_t>({255}).DebugString(), "Tensor<uint8, [1]: 255>");
  Tensor b(DT_BOOL, TensorShape{2});
  b.data<bool>()[0] = true;
  b.data<bool>()[1] = false;
  EXPECT_EQ(b.DebugString(), "Tensor<bool, [2]: 1 0>");
  EXPECT_EQ(Tensor::Scalar<tstring>("hi").DebugString(), "Tensor<string, []: hi>");
  EXPECT_EQ(Tensor::Scalar<complex64>(complex64(1, -2)).DebugString(), "Tensor<complex64, []: (1,-2)>");
  EXPECT_EQ(Tensor::Scalar<half>(half(0.5f)).DebugString(), "Tensor<half, []: 0.5>");
  EXPECT_EQ(Tensor(DT_FLOAT, TensorShape{0}).DebugString(), "Tensor<float, [0]: >");
  EXPECT_EQ(Tensor().DebugString(), "Tensor<invalid, []: <uninitialized>>");
}

}  // namespace
}  // namespace sluice
