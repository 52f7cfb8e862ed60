// ImageToFloat on the GPU against the CPU kernel: one graph runs the op on
// CPU:0 and on GPU:0 from the same uint8 placeholder (so the GPU path
// includes the copies), for empty, tiny, odd-length (the one-pixel tail) and
// batch-sized images and two scales; the outputs must be equal bit for bit
// (both compute float(pixel) * scale in float32). Without a GPU every test
// prints "SKIP: no GPU" and passes. Also a staged batch on the GPU (Stage
// and Unstage, inputs/gpu/staging_ops_gpu.cc): tuples staged by earlier Runs
// (their _Recv copies) come out of later ones in order, converted on the GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/gpu/gpu_device.h"
#include "engine/runtime/gpu/gpu_test_util.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

const char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";

Tensor RandomPixels(const TensorShape& shape, uint32_t seed) {
  Tensor t(DT_UINT8, shape);
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(gen() & 0xff);
  if (t.NumElements() > 1) {  // both ends of the range
    t.data<uint8_t>()[0] = 0;
    t.data<uint8_t>()[1] = 255;
  }
  return t;
}

void CheckImageToFloat(const TensorShape& shape, float scale) {
  const std::string what = absl::StrCat("ImageToFloat of ", shape.DebugString(), " scale ", scale);
  GraphDefBuilder b;
  b.Node("pixels", "Placeholder", {}, {{"dtype", MakeAttr(DT_UINT8)}});
  b.Node("on_cpu", "ImageToFloat", {"pixels"}, {{"scale", MakeAttr(scale)}});
  b.Node("on_gpu", "ImageToFloat", {"pixels"}, {{"scale", MakeAttr(scale)}});
  GraphDef g = b.graph();
  for (NodeDef& n : *g.mutable_node()) n.set_device(n.name() == "on_gpu" ? kGpu : kCpu);
  SessionOptions options;
  options.allow_soft_placement = false;  // the GPU kernel must exist
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok()) << session.status();
  absl::Status s = (*session)->Create(g);
  ASSERT_TRUE(s.ok()) << what << ": " << s;
  std::vector<Tensor> out;
  s = (*session)->Run({{"pixels", RandomPixels(shape, static_cast<uint32_t>(shape.num_elements()))}},
                      {"on_cpu:0", "on_gpu:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << what << ": " << s;
  ASSERT_EQ(out[1].dtype(), DT_FLOAT) << what;
  ASSERT_EQ(out[0].shape(), out[1].shape()) << what;
  int64_t differ = 0;
  for (int64_t i = 0; i < out[0].NumElements(); ++i) {
    if (std::memcmp(&out[0].data<float>()[i], &out[1].data<float>()[i], sizeof(float)) != 0 && ++differ <= 5) {
      ADD_FAILURE() << what << ": element " << i << " cpu " << out[0].data<float>()[i] << " gpu "
                    << out[1].data<float>()[i];
    }
  }
  EXPECT_EQ(differ, 0) << what;
}

TEST(ImageToFloatGpu, MatchesTheCpuKernelBitForBit) {
  SLUICE_SKIP_WITHOUT_GPU();
  for (float scale : {1.0f / 255.0f, 1.0f}) {
    for (const TensorShape& shape : {TensorShape({0, 28, 28, 1}), TensorShape({1}), TensorShape({3}),
                                     TensorShape({7, 5}), TensorShape({128, 28, 28, 1}),
                                     TensorShape({1024 * 784 + 3})}) {
      CheckImageToFloat(shape, scale);
    }
  }
}

// GPU:0's device object.
gpu::GpuDevice* TheGpu() {
  for (const auto& d : DeviceMgr::Local()->devices()) {
    if (d->device_type() == kDeviceGpu) return static_cast<gpu::GpuDevice*>(d.get());
  }
  return nullptr;
}

// Holds `dev`'s host-to-device streams (the plain one and the staged
// batches') back for `ms` milliseconds (a host function that sleeps on
// each), so that the copies queued behind them land late.
void HoldCopies(gpu::GpuDevice* dev, int ms) {
  for (cudaStream_t stream : {dev->host_to_device_stream(), dev->staged_host_to_device_stream()}) {
    ASSERT_EQ(cudaLaunchHostFunc(
                  stream,
                  [](void* p) { std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(p))); },
                  reinterpret_cast<void*>(static_cast<intptr_t>(ms))),
              cudaSuccess);
  }
}

// The staging area a training input uses beside a GPU step: the Stage on
// GPU:0 (its inputs copied there by _Recv), the Unstage colocated by _class,
// ImageToFloat on the GPU after it; an int32 component (host memory on a GPU)
// goes through too. With the Stage's kOrdersItsInputCopiesAttr (as AddBatch
// sets it) the _Recv kernels leave the compute stream alone and the Unstage
// waits for the copies' event instead; without it, the compute stream waits
// at each _Recv. The copies are held back on their stream for 400 ms: the
// compute stream must stay free of them with the attr and wait for them
// without it (so the attr took effect), and both ways the bytes must arrive
// (so something waited for them before ImageToFloat read them).
void CheckStagedTuplesComeOutOfLaterRunsInOrder(bool stage_orders_copies) {
  const std::string what = stage_orders_copies ? "the Stage orders the copies" : "each _Recv orders its copy";
  const std::vector<DataType> types = {DT_UINT8, DT_INT64, DT_INT32};
  const std::string area = stage_orders_copies ? "staged_on_gpu_fenced" : "staged_on_gpu";
  GraphDefBuilder b;
  b.Node("pixels", "Placeholder", {}, {{"dtype", MakeAttr(DT_UINT8)}});
  b.Node("labels", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  b.Node("count", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  b.Node("stage", "Stage", {"pixels", "labels", "count"},
         {{"dtypes", MakeAttr(types)}, {"shared_name", MakeAttr(area)},
          {kOrdersItsInputCopiesAttr, MakeAttr(stage_orders_copies)}});
  b.Node("unstage", "Unstage", {},
         {{"dtypes", MakeAttr(types)}, {"shared_name", MakeAttr(area)}, {"_class", MakeAttr("loc:@stage")}});
  b.Node("converted", "ImageToFloat", {"unstage:0"}, {{"scale", MakeAttr(1.0f)}});
  GraphDef g = b.graph();
  for (NodeDef& n : *g.mutable_node()) {
    if (n.name() == "stage" || n.name() == "converted") n.set_device(kGpu);
    if (n.op() == "Placeholder") n.set_device(kCpu);
  }
  SessionOptions options;
  options.allow_soft_placement = false;
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Create(g).ok());
  gpu::GpuDevice* dev = TheGpu();
  ASSERT_NE(dev, nullptr);
  ASSERT_EQ(dev->Synchronize().ok(), true);
  HoldCopies(dev, 400);
  std::vector<Tensor> batches;
  for (uint32_t k = 0; k < 2; ++k) {
    // Other bytes in each pass: a buffer read before its copy landed would
    // hold an earlier pass's.
    batches.push_back(RandomPixels(TensorShape({4096, 28, 28, 1}), 7 + k + (stage_orders_copies ? 100 : 0)));
    std::vector<Tensor> none;
    absl::Status s = (*session)->Run({{"pixels", batches.back()},
                                      {"labels", Tensor::FromVector<int64_t>({int64_t{10} + k, int64_t{20} + k})},
                                      {"count", Tensor::Scalar<int32_t>(static_cast<int32_t>(100 + k))}},
                                     {}, {"stage"}, &none);
    ASSERT_TRUE(s.ok()) << what << ": " << s;
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaStreamSynchronize(dev->compute_stream()), cudaSuccess);
  const auto compute_waited = std::chrono::steady_clock::now() - start;
  if (stage_orders_copies) {
    EXPECT_LT(compute_waited, std::chrono::milliseconds(200)) << what << ": the compute stream waited for the copies";
  } else {
    EXPECT_GT(compute_waited, std::chrono::milliseconds(100)) << what << ": the compute stream did not wait";
  }
  for (uint32_t k = 0; k < 2; ++k) {
    std::vector<Tensor> out;
    absl::Status s = (*session)->Run({}, {"converted:0", "unstage:1", "unstage:2"}, {}, &out);
    ASSERT_TRUE(s.ok()) << what << ": " << s;
    ASSERT_EQ(out[0].shape(), batches[k].shape()) << what;
    for (int64_t i = 0; i < out[0].NumElements(); ++i) {
      ASSERT_EQ(out[0].data<float>()[i], static_cast<float>(batches[k].data<uint8_t>()[i]))
          << what << ": batch " << k << " " << i;
    }
    EXPECT_EQ(out[1].data<int64_t>()[1], int64_t{20} + k) << what;
    EXPECT_EQ(out[2].scalar<int32_t>(), static_cast<int32_t>(100 + k)) << what;
  }
  std::vector<Tensor> out;
  EXPECT_FALSE((*session)->Run({}, {"unstage:2"}, {}, &out).ok()) << what;  // empty: an error, not a wait
}

TEST(StagingGpu, StagedTuplesComeOutOfLaterRunsInOrder) {
  SLUICE_SKIP_WITHOUT_GPU();
  CheckStagedTuplesComeOutOfLaterRunsInOrder(false);
  CheckStagedTuplesComeOutOfLaterRunsInOrder(true);
}

}  // namespace
}  // namespace sluice
