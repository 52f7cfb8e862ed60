// FakeSession: a Session test double for the training loop's and the hooks' tests. It runs
// no graph: Create/Extend collect the nodes they are given, and Run records the call and
// answers each fetch with the value set for it (SetValue), or a float scalar 0 when none is
// set, unless a handler set with SetHandler answers instead.
//
// Thread safety: every method may be called concurrently (queue runners call Run from their
// own threads).
#ifndef SLUICE_MODELS_TRAINING_FAKE_SESSION_H_
#define SLUICE_MODELS_TRAINING_FAKE_SESSION_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace training {

class FakeSession : public Session {
 public:
  struct Call {
    RunOptions options;
    std::vector<std::pair<std::string, Tensor>> feeds;
    std::vector<std::string> fetches;
    std::vector<std::string> targets;
  };
  // Fills `outputs` (one tensor per fetch) and, optionally, `metadata` (may be null).
  using Handler = std::function<absl::Status(const Call& call, std::vector<Tensor>* outputs, RunMetadata* metadata)>;

  absl::Status Create(const GraphDef& graph) override;
  absl::Status Extend(const GraphDef& graph) override;
  using Session::Run;
  absl::Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  absl::Status Close() override;

  void SetValue(const std::string& fetch, const Tensor& value);
  void SetHandler(Handler handler);
  // The status the next Extend returns.
  void SetExtendStatus(absl::Status s);

  std::vector<Call> calls() const;
  // The calls whose targets include `target`.
  std::vector<Call> CallsWithTarget(const std::string& target) const;
  GraphDef graph() const;  // every node given to Create and Extend

 private:
  mutable absl::Mutex mu_;
  GraphDef graph_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Tensor> values_ ABSL_GUARDED_BY(mu_);
  Handler handler_ ABSL_GUARDED_BY(mu_);
  absl::Status extend_status_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_FAKE_SESSION_H_
