// Fuzz target: what the worker service decodes from the network (engine/distributed). The
// first byte picks the mode:
//   bit 0 clear: response decoding as a client does it: the rest is a RecvTensor response
//     (bit 1 clear; DecodeRecvTensorResponse) or an envelope holding a RunGraphResponse (bit 1
//     set; DecodeResponse), split into up to three chunks at offsets from the next two bytes
//     (gRPC hands bodies over in slices cut anywhere).
//   bit 0 set: request handling as the server does it: pieces (uint16 length, bytes) holding a
//     RegisterGraphRequest, a RunGraphRequest, a RecvTensorRequest and a CleanupGraphRequest,
//     parsed with ParseFromChunks and handed to an in-process Worker in that order (bit 1 set:
//     RunGraph gets the handle RegisterGraph returned). Graphs that graph_filter.h rules out
//     are skipped; _Send and _Recv stay in.
// Asserted: no crash; decoding errors are DataLoss or InvalidArgument; every call's done runs,
// at the latest after CleanupGraph (with an abort status) and CleanupAll.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "engine/distributed/grpc_tensor_coding.h"
#include "engine/distributed/worker.h"
#include "engine/distributed/worker.pb.h"
#include "engine/framework/local_devices.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/graph_filter.h"

namespace sluice {
namespace distributed {
namespace {

void FuzzDecoding(uint8_t options_byte, fuzz::InputBytes* input) {
  const size_t a = input->Byte();
  const size_t b = input->Byte();
  const absl::string_view body = input->rest();
  const size_t cut1 = std::min(a, body.size());
  const size_t cut2 = std::min(cut1 + b, body.size());
  const std::vector<absl::string_view> chunks = {body.substr(0, cut1), body.substr(cut1, cut2 - cut1),
                                                 body.substr(cut2)};
  absl::Status worker_status;
  absl::Status s;
  if (options_byte & 2) {
    RunGraphResponse response;
    s = DecodeResponse(chunks, &worker_status, &response);
    if (s.ok() && worker_status.ok()) {
      for (const NamedTensor& t : response.recv()) (void)Tensor::FromProto(t.tensor());
    }
  } else {
    RecvTensorResult result;
    s = DecodeRecvTensorResponse(chunks, &worker_status, &result);
  }
  FUZZ_CHECK(s.ok() || absl::IsDataLoss(s) || absl::IsInvalidArgument(s), "unexpected status: %s",
             s.ToString().c_str());
}

// A cluster of this task only: every other task is unknown (a Recv from one fails).
class NoPeers : public WorkerCache {
 public:
  WorkerInterface* GetWorker(const std::string& task) override { return nullptr; }
};

constexpr char kTask[] = "/job:worker/replica:0/task:0";

// One CPU device named for kTask, for every input.
DeviceMgr* Devices() {
  static DeviceMgr* devices = NewCpuDeviceMgr(1, 1, kTask).release();
  return devices;
}

// Waits up to `seconds` for a call's done.
bool Finished(std::future<absl::Status>* done, int seconds) {
  return done->wait_for(std::chrono::seconds(seconds)) == std::future_status::ready;
}

void FuzzRequests(uint8_t options_byte, fuzz::InputBytes* input) {
  RegisterGraphRequest register_request;
  RunGraphRequest run_request;
  RecvTensorRequest recv_request;
  CleanupGraphRequest cleanup_request;
  const absl::string_view p0 = input->Piece();
  const absl::string_view p1 = input->Piece();
  const absl::string_view p2 = input->Piece();
  const absl::string_view p3 = input->Piece();
  if (!ParseFromChunks({p0}, &register_request) || !ParseFromChunks({p1}, &run_request) ||
      !ParseFromChunks({p2}, &recv_request) || !ParseFromChunks({p3}, &cleanup_request)) {
    return;
  }
  if (!fuzz::Runnable(register_request.graph(), {"_Send", "_Recv"}) || fuzz::MayLoop(register_request.graph())) {
    return;  // a loop may never stop (RunGraph would wait on it)
  }
  for (const NamedTensor& t : run_request.send()) {
    if (t.tensor().tensor_content().size() > 4096) return;
    double product = 1;
    for (const auto& d : t.tensor().tensor_shape().dim()) fuzz::MultiplyDim(d.size(), &product);
    if (product > fuzz::kMaxProduct) return;
  }

  WorkerOptions options;
  options.task = kTask;
  options.device_mgr = Devices();
  options.inter_op_threads = 1;
  Worker worker(options);
  NoPeers peers;
  worker.set_worker_cache(&peers);
  auto call = [] {
    auto promise = std::make_shared<std::promise<absl::Status>>();
    return std::make_pair(promise->get_future(), [promise](const absl::Status& s) { promise->set_value(s); });
  };

  RegisterGraphResponse register_response;
  auto [registered, register_done] = call();
  worker.RegisterGraphAsync(&register_request, &register_response, register_done);
  FUZZ_CHECK(Finished(&registered, 10), "RegisterGraph did not finish");
  if (options_byte & 2) run_request.set_graph_handle(register_response.graph_handle());

  CallCancellation run_cancel, recv_cancel;
  RunGraphResponse run_response;
  auto [ran, run_done] = call();
  worker.RunGraphAsync(&run_request, &run_response, run_done, &run_cancel);
  RecvTensorResult recv_result;
  auto [received, recv_done] = call();
  worker.RecvTensorAsync(&recv_request, &recv_result, recv_done, &recv_cancel);
  if (!Finished(&ran, 1) || !Finished(&received, 1)) {
    // Waiting by design (a Recv whose Send never comes): the caller's cleanup must end it.
    cleanup_request.set_step_id(run_request.step_id());
    cleanup_request.mutable_abort()->set_code(static_cast<int>(absl::StatusCode::kAborted));
    cleanup_request.mutable_abort()->set_message("fuzz: cleanup");
  }
  CleanupGraphResponse cleanup_response;
  auto [cleaned, cleanup_done] = call();
  worker.CleanupGraphAsync(&cleanup_request, &cleanup_response, cleanup_done);
  FUZZ_CHECK(Finished(&cleaned, 10), "CleanupGraph did not finish");
  if (!Finished(&received, 1)) {
    // A RecvTensor of another step than the run's: its caller would cancel it.
    recv_cancel.StartCancel();
  }
  CleanupAllRequest all_request;
  CleanupAllResponse all_response;
  auto [all, all_done] = call();
  worker.CleanupAllAsync(&all_request, &all_response, all_done);
  FUZZ_CHECK(Finished(&all, 10), "CleanupAll did not finish");
  FUZZ_CHECK(Finished(&ran, 10), "RunGraph (step %lld) did not finish after CleanupGraph and CleanupAll",
             static_cast<long long>(run_request.step_id()));
  FUZZ_CHECK(Finished(&received, 10), "RecvTensor did not finish after its cancellation");
  if (std::getenv("FUZZ_VERBOSE") != nullptr) {  // what each call answered, to check the seeds
    std::fprintf(stderr, "RegisterGraph: %s\nRunGraph: %s\nRecvTensor: %s\nCleanupGraph: %s\n",
                 registered.get().ToString().c_str(), ran.get().ToString().c_str(),
                 received.get().ToString().c_str(), cleaned.get().ToString().c_str());
  }
}

}  // namespace
}  // namespace distributed
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  if (options_byte & 1) {
    sluice::distributed::FuzzRequests(options_byte, &input);
  } else {
    sluice::distributed::FuzzDecoding(options_byte, &input);
  }
  return 0;
}
