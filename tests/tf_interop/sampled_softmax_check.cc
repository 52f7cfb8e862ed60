// sampled_softmax_check: Sluice's side of tests/tf_interop/sampled_softmax_test
// (issue 19). Reads an input file that sampled_softmax_tf.py wrote (one tensor
// a line: `name dims values...`, dims comma-separated, "-" for a scalar):
// inputs x [B, D], weights [C, D], biases [C], labels [B], the sampler's
// values (sampled [S], true_expected [B, 1], sampled_expected [S]) and the
// scalars parts and remove_hits. Builds models::SampledSoftmaxLoss over the
// weights and biases split into `parts` (row r in part r % parts), feeds the
// sampler those values, and writes in the same format: loss (the mean
// sampled softmax loss), dweights and dbiases (its gradients, the parts'
// sparse gradients densified and put back in row order) and full_loss (the
// mean full softmax cross-entropy, models::FullSoftmaxLoss).
//
// Usage: sampled_softmax_check INPUT OUTPUT
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/graph/gradients.h"
#include "engine/runtime/session.h"
#include "models/embedding_ops.h"

namespace sluice {
namespace {

struct Array {
  std::vector<int64_t> dims;
  std::vector<double> values;
};

absl::Status ReadArrays(const std::string& path, std::map<std::string, Array>* out) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, dims;
    if (!(words >> name >> dims)) continue;
    Array a;
    if (dims != "-") {
      for (absl::string_view d : absl::StrSplit(dims, ',')) a.dims.push_back(std::stoll(std::string(d)));
    }
    double v;
    while (words >> v) a.values.push_back(v);
    (*out)[name] = a;
  }
  for (const char* need : {"x", "weights", "biases", "labels", "sampled", "true_expected", "sampled_expected", "parts",
                           "remove_hits"}) {
    if (out->count(need) == 0) return absl::InvalidArgumentError(absl::StrCat(path, " has no '", need, "'"));
  }
  return absl::OkStatus();
}

template <typename T>
Tensor Make(const Array& a) {
  std::vector<T> v(a.values.begin(), a.values.end());
  return Tensor::FromVector<T>(v, TensorShape(absl::Span<const int64_t>(a.dims)));
}

// Rows p, p + n, ... of a [rows, width] array.
Tensor PartOf(const Array& a, int n, int p) {
  const int64_t rows = a.dims[0], width = a.dims.size() > 1 ? a.dims[1] : 1;
  std::vector<float> v;
  for (int64_t r = p; r < rows; r += n) {
    for (int64_t j = 0; j < width; ++j) v.push_back(static_cast<float>(a.values[r * width + j]));
  }
  std::vector<int64_t> dims = a.dims;
  dims[0] = models::PartRows(rows, n, p);
  return Tensor::FromVector<float>(v, TensorShape(absl::Span<const int64_t>(dims)));
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sampled_softmax_check INPUT OUTPUT\n");
    return 2;
  }
  std::map<std::string, Array> a;
  absl::Status s = ReadArrays(argv[1], &a);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  const int n = static_cast<int>(a["parts"].values[0]);
  const int64_t classes = a["weights"].dims[0];
  Graph graph;
  GraphBuilder b(&graph);
  std::vector<Output> w_parts, b_parts;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (int p = 0; p < n; ++p) {
    w_parts.push_back(b.Op(absl::StrCat("w", p), "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}}));
    b_parts.push_back(b.Op(absl::StrCat("b", p), "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}}));
    feeds.push_back({w_parts.back().node->name(), PartOf(a["weights"], n, p)});
    feeds.push_back({b_parts.back().node->name(), PartOf(a["biases"], n, p)});
  }
  Output x = b.Op("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  Output labels = b.Op("labels", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  feeds.push_back({"x", Make<float>(a["x"])});
  feeds.push_back({"labels", Make<int64_t>(a["labels"])});
  models::SampledSoftmaxOptions o;
  o.num_classes = classes;
  o.num_sampled = static_cast<int64_t>(a["sampled"].values.size());
  o.remove_accidental_hits = a["remove_hits"].values[0] != 0;
  GraphBuilder sb = b.WithSubPrefix("sampled");
  Output per_example = models::SampledSoftmaxLoss(&sb, w_parts, b_parts, x, labels, o);
  Output axis = b.Const("axis", Tensor::FromVector<int32_t>({0}));
  Output loss = b.Op("loss", "Mean", {per_example, axis});
  GraphBuilder fb = b.WithSubPrefix("full");
  Output full = b.Op("full_loss", "Mean", {models::FullSoftmaxLoss(&fb, w_parts, b_parts, x, labels, classes), axis});
  if (!b.ok()) {
    std::fprintf(stderr, "building: %s\n", std::string(b.status().message()).c_str());
    return 1;
  }
  std::vector<Output> xs = w_parts;
  xs.insert(xs.end(), b_parts.begin(), b_parts.end());
  std::vector<Gradient> grads;
  s = AddSymbolicGradients(&graph, {loss}, xs, {}, &grads);
  if (!s.ok()) {
    std::fprintf(stderr, "gradients: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<std::string> fetches = {loss.name(), full.name()};
  GraphBuilder gb = b.WithSubPrefix("dense_gradients");
  for (const Gradient& g : grads) {
    if (!g.is_sparse) {
      std::fprintf(stderr, "a gradient of the weights or biases is dense; it must be sparse\n");
      return 1;
    }
    fetches.push_back(DenseGradient(&gb, g).name());
  }
  feeds.push_back({"sampled/sampler:0", Make<int64_t>(a["sampled"])});
  feeds.push_back({"sampled/sampler:1", Make<float>(a["true_expected"])});
  feeds.push_back({"sampled/sampler:2", Make<float>(a["sampled_expected"])});
  GraphDef def;
  graph.ToGraphDef(&def);
  auto session = NewSession();
  if (!session.ok() || !(s = (*session)->Create(def)).ok()) {
    std::fprintf(stderr, "session: %s\n", std::string((session.ok() ? s : session.status()).message()).c_str());
    return 1;
  }
  std::vector<Tensor> out;
  s = (*session)->Run(feeds, fetches, {}, &out);
  if (!s.ok()) {
    std::fprintf(stderr, "run: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  // Whole gradients in row order.
  const int64_t width = a["weights"].dims[1];
  std::vector<float> dw(classes * width), db(classes);
  for (int p = 0; p < n; ++p) {
    const Tensor& gw = out[2 + p];
    const Tensor& gbias = out[2 + n + p];
    for (int64_t r = 0; r < gw.dim_size(0); ++r) {
      const int64_t id = r * n + p;
      for (int64_t j = 0; j < width; ++j) dw[id * width + j] = gw.data<float>()[r * width + j];
      db[id] = gbias.data<float>()[r];
    }
  }
  std::ofstream f(argv[2]);
  f.precision(9);
  f << "loss - " << out[0].scalar<float>() << "\n";
  f << "full_loss - " << out[1].scalar<float>() << "\n";
  f << "dweights " << classes << "," << width;
  for (float v : dw) f << " " << v;
  f << "\ndbiases " << classes;
  for (float v : db) f << " " << v;
  f << "\n";
  return f.good() ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
