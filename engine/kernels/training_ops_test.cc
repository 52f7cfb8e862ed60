// The training ops (engine/ops/training_ops.cc) through a Session: variables
// made with VariableV2 and initialized by Assign, three update steps with
// fresh gradients fed each step, and after every step the op's output (the
// forwarded ref) and every variable and slot compared with a float64
// reference of the update rule. Ops with a resource form (ResourceApply*)
// run the same cases on resource variables (VarHandleOp, AssignVariableOp,
// ReadVariableOp; no output to check); ResourceScatterUpdate has only that
// form. FTRL (V1 and V2, multiply_linear_by_lr, lr_power -0.5 and not) is
// checked against TensorFlow's FTRL-proximal rule in float64. Also: concurrent updates lose nothing (the
// kernels lock), and bad input (uninitialized variables, mismatched shapes,
// out-of-range indices, non-scalar hyperparameters) fails with the node named.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using State = std::vector<std::vector<double>>;  // var, then slots

Tensor Make(DataType dtype, const TensorShape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    if (dtype == DT_FLOAT) t.data<float>()[i] = static_cast<float>(values[i]);
    else t.data<double>()[i] = values[i];
  }
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> out(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    out[i] = t.dtype() == DT_FLOAT ? t.data<float>()[i] : t.data<double>()[i];
  }
  return out;
}

// The value a dtype stores for x (the reference works on stored inputs).
double Stored(DataType dtype, double x) { return dtype == DT_FLOAT ? static_cast<double>(static_cast<float>(x)) : x; }

struct Input {
  enum Kind { kScalar, kGrad, kIndices } kind;
  double scalar = 0;
};
Input Scalar(double v) { return {Input::kScalar, v}; }
Input Grad() { return {Input::kGrad, 0}; }
Input Indices() { return {Input::kIndices, 0}; }

struct ApplyCase {
  std::string op;
  int num_refs = 1;
  TensorShape shape;                   // of the variable and slots
  std::vector<double> slot_init;       // initial value of every slot (var is random)
  std::vector<Input> inputs;           // after the refs, in the op's order
  TensorShape grad_shape;              // defaults to `shape`
  bool scalar_grad = false;            // a scalar grad (scatter's scalar updates)
  std::vector<int64_t> indices;        // for sparse ops
  DataType index_type = DT_INT32;
  std::map<std::string, AttrValue> attrs;
  // Applies one step to `state` in float64; `scalars` in input order.
  std::function<void(State*, const std::vector<double>& grad, const std::vector<double>& scalars)> reference;
  bool has_resource_form = false;  // "Resource" + op exists with the same inputs
  bool resource_only = false;      // no ref form
  std::string resource_type_attr = "T";  // "dtype" for ResourceScatter*
};

std::unique_ptr<Session> NewTestSession(const GraphDef& graph) {
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  absl::Status s = (*session)->Create(graph);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(session).value();
}

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected, DataType dtype,
                const std::string& where) {
  ASSERT_EQ(actual.size(), expected.size()) << where;
  const double tol = dtype == DT_FLOAT ? 2e-5 : 1e-12;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), tol * std::max(1.0, std::abs(expected[i])))
        << where << " at " << i << ": got " << actual[i] << ", expected " << expected[i];
  }
}

int g_container = 0;

void RunApplyCase(const ApplyCase& c, DataType dtype, bool resource = false) {
  const std::string op = resource ? "Resource" + c.op : c.op;
  const std::string where = absl::StrCat(op, " ", DataTypeString(dtype));
  const std::string container = absl::StrCat("training_ops_test_", g_container++);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(-1, 1);
  const TensorShape grad_shape = c.scalar_grad ? TensorShape({}) : c.grad_shape.dims() > 0 ? c.grad_shape : c.shape;

  GraphDefBuilder b;
  State state(c.num_refs);
  std::vector<std::string> refs, inits, reads;
  for (int i = 0; i < c.num_refs; ++i) {
    std::vector<double>& v = state[i];
    v.resize(c.shape.num_elements());
    for (double& x : v) x = Stored(dtype, i == 0 ? uniform(rng) : c.slot_init[i - 1]);
    const std::string init_value = b.Const(absl::StrCat("init_value", i), Make(dtype, c.shape, v));
    if (resource) {
      refs.push_back(b.Node(absl::StrCat("v", i), "VarHandleOp", {},
                            {{"dtype", MakeAttr(dtype)}, {"shape", MakeAttr(c.shape)}, {"container", MakeAttr(container)}}));
      inits.push_back(
          b.Node(absl::StrCat("init", i), "AssignVariableOp", {refs.back(), init_value}, {{"dtype", MakeAttr(dtype)}}));
      reads.push_back(b.Node(absl::StrCat("read", i), "ReadVariableOp", {refs.back()}, {{"dtype", MakeAttr(dtype)}}));
    } else {
      refs.push_back(b.Variable(absl::StrCat("v", i), dtype, c.shape, container));
      inits.push_back(b.Assign(absl::StrCat("init", i), refs.back(), init_value, dtype));
      reads.push_back(b.Identity(absl::StrCat("read", i), refs.back(), dtype));
    }
  }
  std::vector<std::string> inputs = refs;
  std::vector<double> scalars;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Input& in = c.inputs[i];
    if (in.kind == Input::kScalar) {
      scalars.push_back(Stored(dtype, in.scalar));
      inputs.push_back(b.Const(absl::StrCat("s", i), Make(dtype, TensorShape({}), {in.scalar})));
    } else if (in.kind == Input::kGrad) {
      inputs.push_back(b.Placeholder("grad", dtype));
    } else {
      Tensor idx(c.index_type, TensorShape({static_cast<int64_t>(c.indices.size())}));
      for (size_t j = 0; j < c.indices.size(); ++j) {
        if (c.index_type == DT_INT32) idx.data<int32_t>()[j] = static_cast<int32_t>(c.indices[j]);
        else idx.data<int64_t>()[j] = c.indices[j];
      }
      inputs.push_back(b.Const("indices", idx));
    }
  }
  std::map<std::string, AttrValue> attrs = c.attrs;
  attrs[resource ? c.resource_type_attr : "T"] = MakeAttr(dtype);
  if (!c.indices.empty()) attrs["Tindices"] = MakeAttr(c.index_type);
  const std::string apply = b.Node("apply", op, inputs, attrs);

  auto session = NewTestSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, inits, &out).ok()) << where;
  for (int step = 0; step < 3; ++step) {
    std::vector<double> grad(grad_shape.num_elements());
    for (double& g : grad) g = Stored(dtype, uniform(rng));
    c.reference(&state, grad, scalars);
    // A resource variable's value read before the step keeps its value
    // (copy-on-write); a ref variable's reader aliases it, as in TensorFlow.
    std::vector<Tensor> before;
    absl::Status s = session->Run({}, {reads[0]}, {}, &before);
    ASSERT_TRUE(s.ok()) << where << ": " << s;
    const std::vector<double> before_values = Values(before[0]);
    if (resource) {
      s = session->Run({{"grad", Make(dtype, grad_shape, grad)}}, {}, {apply}, &out);
      ASSERT_TRUE(s.ok()) << where << ": " << s;
    } else {
      s = session->Run({{"grad", Make(dtype, grad_shape, grad)}}, {apply}, {}, &out);
      ASSERT_TRUE(s.ok()) << where << ": " << s;
      ExpectNear(Values(out[0]), state[0], dtype, absl::StrCat(where, " step ", step, " output"));
    }
    if (resource) {
      EXPECT_EQ(Values(before[0]), before_values) << where << " step " << step;
    }
    s = session->Run({}, reads, {}, &out);
    ASSERT_TRUE(s.ok()) << where << ": " << s;
    for (int i = 0; i < c.num_refs; ++i) {
      ExpectNear(Values(out[i]), state[i], dtype, absl::StrCat(where, " step ", step, " ref ", i));
    }
  }
  Session::Reset({container});
}

void RunBothTypes(const ApplyCase& c) {
  for (bool resource : {false, true}) {
    if (resource && !c.has_resource_form) continue;
    if (!resource && c.resource_only) continue;
    RunApplyCase(c, DT_FLOAT, resource);
    RunApplyCase(c, DT_DOUBLE, resource);
  }
}

const TensorShape kShape({3, 4});

TEST(TrainingOps, ApplyGradientDescent) {
  ApplyCase c;
  c.op = "ApplyGradientDescent";
  c.has_resource_form = true;
  c.shape = kShape;
  c.inputs = {Scalar(0.1), Grad()};
  c.reference = [](State* s, const std::vector<double>& g, const std::vector<double>& k) {
    for (size_t i = 0; i < g.size(); ++i) (*s)[0][i] -= k[0] * g[i];
  };
  RunBothTypes(c);
}

void MomentumReference(State* s, const std::vector<double>& g, double lr, double momentum, bool nesterov,
                       const std::vector<int64_t>& rows, int64_t row_size) {
  auto& var = (*s)[0];
  auto& accum = (*s)[1];
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t j = 0; j < row_size; ++j) {
      const int64_t i = rows[r] * row_size + j;
      const double gi = g[r * row_size + j];
      accum[i] = accum[i] * momentum + gi;
      var[i] -= nesterov ? gi * lr + accum[i] * momentum * lr : lr * accum[i];
    }
  }
}

std::vector<int64_t> AllRows(int64_t n) {
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i;
  return rows;
}

TEST(TrainingOps, ApplyMomentumPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    ApplyCase c;
    c.op = "ApplyMomentum";
    c.has_resource_form = true;
    c.num_refs = 2;
    c.shape = kShape;
    c.slot_init = {0.3};
    c.inputs = {Scalar(0.05), Grad(), Scalar(0.9)};
    c.attrs = {{"use_nesterov", MakeAttr(nesterov)}};
    c.reference = [nesterov](State* s, const std::vector<double>& g, const std::vector<double>& k) {
      MomentumReference(s, g, k[0], k[1], nesterov, AllRows(static_cast<int64_t>(g.size())), 1);
    };
    RunBothTypes(c);
  }
}

void AdagradReference(State* s, const std::vector<double>& g, double lr, bool update, const std::vector<int64_t>& rows,
                      int64_t row_size) {
  auto& var = (*s)[0];
  auto& accum = (*s)[1];
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t j = 0; j < row_size; ++j) {
      const int64_t i = rows[r] * row_size + j;
      const double gi = g[r * row_size + j];
      if (update) accum[i] += gi * gi;
      var[i] -= lr * gi / std::sqrt(accum[i]);
    }
  }
}

TEST(TrainingOps, ApplyAdagrad) {
  for (bool update_slots : {true, false}) {
    ApplyCase c;
    c.op = "ApplyAdagrad";
    c.has_resource_form = true;
    c.num_refs = 2;
    c.shape = kShape;
    c.slot_init = {0.1};
    c.inputs = {Scalar(0.2), Grad()};
    c.attrs = {{"update_slots", MakeAttr(update_slots)}};
    c.reference = [update_slots](State* s, const std::vector<double>& g, const std::vector<double>& k) {
      AdagradReference(s, g, k[0], update_slots, AllRows(static_cast<int64_t>(g.size())), 1);
    };
    RunBothTypes(c);
  }
}

TEST(TrainingOps, ApplyRMSProp) {
  ApplyCase c;
  c.op = "ApplyRMSProp";
  c.has_resource_form = true;
  c.num_refs = 3;
  c.shape = kShape;
  c.slot_init = {0.5, 0.1};
  c.inputs = {Scalar(0.01), Scalar(0.9), Scalar(0.5), Scalar(1e-3), Grad()};
  c.reference = [](State* s, const std::vector<double>& g, const std::vector<double>& k) {
    const double lr = k[0], rho = k[1], momentum = k[2], epsilon = k[3];
    for (size_t i = 0; i < g.size(); ++i) {
      double& ms = (*s)[1][i];
      double& mom = (*s)[2][i];
      ms = ms * rho + g[i] * g[i] * (1 - rho);
      mom = mom * momentum + lr * g[i] / std::sqrt(ms + epsilon);
      (*s)[0][i] -= mom;
    }
  };
  RunBothTypes(c);
}

TEST(TrainingOps, ApplyAdamPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    ApplyCase c;
    c.op = "ApplyAdam";
    c.has_resource_form = true;
    c.num_refs = 3;
    c.shape = kShape;
    c.slot_init = {0.1, 0.2};
    c.inputs = {Scalar(0.9 * 0.9), Scalar(0.999 * 0.999), Scalar(0.01), Scalar(0.9), Scalar(0.999), Scalar(1e-8),
                Grad()};
    c.attrs = {{"use_nesterov", MakeAttr(nesterov)}};
    c.reference = [nesterov](State* s, const std::vector<double>& g, const std::vector<double>& k) {
      const double b1p = k[0], b2p = k[1], lr = k[2], b1 = k[3], b2 = k[4], eps = k[5];
      const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
      for (size_t i = 0; i < g.size(); ++i) {
        double& m = (*s)[1][i];
        double& v = (*s)[2][i];
        m += (g[i] - m) * (1 - b1);
        v += (g[i] * g[i] - v) * (1 - b2);
        const double num = nesterov ? m * b1 + (1 - b1) * g[i] : m;
        (*s)[0][i] -= lr_t * num / (std::sqrt(v) + eps);
      }
    };
    RunBothTypes(c);
  }
}

// Rows 2, 0, 2 (a duplicate: applied twice, in order) of a [4, 3] variable.
const std::vector<int64_t> kRows = {2, 0, 2};

TEST(TrainingOps, SparseApplyMomentum) {
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    for (bool nesterov : {false, true}) {
      ApplyCase c;
      c.op = "SparseApplyMomentum";
      c.has_resource_form = true;
      c.num_refs = 2;
      c.shape = TensorShape({4, 3});
      c.grad_shape = TensorShape({3, 3});
      c.indices = kRows;
      c.index_type = index_type;
      c.slot_init = {0.2};
      c.inputs = {Scalar(0.1), Grad(), Indices(), Scalar(0.8)};
      c.attrs = {{"use_nesterov", MakeAttr(nesterov)}};
      c.reference = [nesterov](State* s, const std::vector<double>& g, const std::vector<double>& k) {
        MomentumReference(s, g, k[0], k[1], nesterov, kRows, 3);
      };
      RunBothTypes(c);
    }
  }
}

TEST(TrainingOps, SparseApplyAdagrad) {
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    ApplyCase c;
    c.op = "SparseApplyAdagrad";
    c.has_resource_form = true;
    c.num_refs = 2;
    c.shape = TensorShape({4, 3});
    c.grad_shape = TensorShape({3, 3});
    c.indices = kRows;
    c.index_type = index_type;
    c.slot_init = {0.1};
    c.inputs = {Scalar(0.3), Grad(), Indices()};
    c.reference = [](State* s, const std::vector<double>& g, const std::vector<double>& k) {
      AdagradReference(s, g, k[0], true, kRows, 3);
    };
    RunBothTypes(c);
  }
}

TEST(TrainingOps, ScatterAddAndSub) {
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    for (const char* op : {"ScatterAdd", "ScatterSub"}) {
      const double sign = std::string(op) == "ScatterAdd" ? 1 : -1;
      ApplyCase c;
      c.op = op;
      c.has_resource_form = true;
      c.resource_type_attr = "dtype";
      c.shape = TensorShape({4, 3});
      c.grad_shape = TensorShape({3, 3});
      c.indices = kRows;
      c.index_type = index_type;
      c.inputs = {Indices(), Grad()};
      c.reference = [sign](State* s, const std::vector<double>& g, const std::vector<double>&) {
        for (size_t r = 0; r < kRows.size(); ++r) {
          for (int j = 0; j < 3; ++j) (*s)[0][kRows[r] * 3 + j] += sign * g[r * 3 + j];
        }
      };
      RunBothTypes(c);
    }
  }
}

TEST(TrainingOps, ScatterUpdateTensorAndScalar) {
  for (bool scalar : {false, true}) {
    ApplyCase c;
    c.op = "ScatterUpdate";
    c.has_resource_form = true;
    c.resource_type_attr = "dtype";
    c.shape = TensorShape({4, 3});
    c.grad_shape = TensorShape({3, 3});
    c.scalar_grad = scalar;
    c.indices = kRows;
    c.inputs = {Indices(), Grad()};
    c.reference = [scalar](State* s, const std::vector<double>& g, const std::vector<double>&) {
      for (size_t r = 0; r < kRows.size(); ++r) {
        for (int j = 0; j < 3; ++j) (*s)[0][kRows[r] * 3 + j] = scalar ? g[0] : g[r * 3 + j];
      }
    };
    RunBothTypes(c);
  }
}

// FTRL-proximal in float64, as TensorFlow defines it (training_ops.cc there),
// on `rows` of `row_size` elements: state is var, accum, linear.
void FtrlReference(State* s, const std::vector<double>& g, double lr, double l1, double l2, double shrinkage,
                   double lr_power, bool multiply_linear_by_lr, const std::vector<int64_t>& rows, int64_t row_size) {
  auto& var = (*s)[0];
  auto& accum = (*s)[1];
  auto& linear = (*s)[2];
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t j = 0; j < row_size; ++j) {
      const int64_t i = rows[r] * row_size + j;
      const double gi = g[r * row_size + j];
      const double g_shrunk = gi + 2 * shrinkage * var[i];
      const double new_accum = accum[i] + gi * gi;
      const double sigma = std::pow(new_accum, -lr_power) - std::pow(accum[i], -lr_power);
      double l1_eff, quadratic;
      if (multiply_linear_by_lr) {
        linear[i] += g_shrunk * lr - sigma * var[i];
        l1_eff = l1 * lr;
        quadratic = std::pow(new_accum, -lr_power) + 2 * l2 * lr;
      } else {
        linear[i] += g_shrunk - sigma / lr * var[i];
        l1_eff = l1;
        quadratic = std::pow(new_accum, -lr_power) / lr + 2 * l2;
      }
      var[i] = std::abs(linear[i]) > l1_eff ? (std::clamp(linear[i], -l1_eff, l1_eff) - linear[i]) / quadratic : 0;
      accum[i] = new_accum;
    }
  }
}

TEST(TrainingOps, ApplyFtrlAndV2) {
  for (bool v2 : {false, true}) {
    for (bool multiply : {false, true}) {
      for (double lr_power : {-0.5, -0.6}) {
        ApplyCase c;
        c.op = v2 ? "ApplyFtrlV2" : "ApplyFtrl";
        c.has_resource_form = true;
        c.num_refs = 3;
        c.shape = kShape;
        c.slot_init = {0.1, 0.0};
        const double shrinkage = v2 ? 0.05 : 0.0;
        c.inputs = {Grad(), Scalar(0.3), Scalar(0.01), Scalar(0.02)};
        if (v2) c.inputs.push_back(Scalar(shrinkage));
        c.inputs.push_back(Scalar(lr_power));
        c.attrs = {{"multiply_linear_by_lr", MakeAttr(multiply)}};
        c.reference = [v2, multiply](State* s, const std::vector<double>& g, const std::vector<double>& k) {
          FtrlReference(s, g, k[0], k[1], k[2], v2 ? k[3] : 0.0, v2 ? k[4] : k[3], multiply,
                        AllRows(static_cast<int64_t>(g.size())), 1);
        };
        RunBothTypes(c);
      }
    }
  }
}

TEST(TrainingOps, SparseApplyFtrlAndV2) {
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    for (bool v2 : {false, true}) {
      for (bool multiply : {false, true}) {
        ApplyCase c;
        c.op = v2 ? "SparseApplyFtrlV2" : "SparseApplyFtrl";
        c.has_resource_form = true;
        c.num_refs = 3;
        c.shape = TensorShape({4, 3});
        c.grad_shape = TensorShape({3, 3});
        c.indices = kRows;
        c.index_type = index_type;
        c.slot_init = {0.1, 0.0};
        c.inputs = {Grad(), Indices(), Scalar(0.3), Scalar(0.01), Scalar(0.02)};
        if (v2) c.inputs.push_back(Scalar(0.05));
        c.inputs.push_back(Scalar(v2 ? -0.6 : -0.5));
        c.attrs = {{"multiply_linear_by_lr", MakeAttr(multiply)}};
        c.reference = [v2, multiply](State* s, const std::vector<double>& g, const std::vector<double>& k) {
          FtrlReference(s, g, k[0], k[1], k[2], v2 ? k[3] : 0.0, v2 ? k[4] : k[3], multiply, kRows, 3);
        };
        RunBothTypes(c);
      }
    }
  }
}

TEST(TrainingOps, ConcurrentUpdatesLoseNothing) {
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({8}), "training_concurrent");
  std::string init = b.Assign("init", v, b.Const("zeros", Make(DT_FLOAT, TensorShape({8}), std::vector<double>(8, 0))),
                              DT_FLOAT);
  std::string apply = b.Node("apply", "ApplyGradientDescent",
                             {v, b.Const("alpha", Make(DT_FLOAT, TensorShape({}), {1})),
                              b.Const("delta", Make(DT_FLOAT, TensorShape({8}), std::vector<double>(8, 1)))},
                             {{"T", MakeAttr(DT_FLOAT)}});
  std::string read = b.Identity("read", v, DT_FLOAT);
  auto session = NewTestSession(b.graph());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init}, &out).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<Tensor> unused;
      for (int i = 0; i < 250; ++i) {
        if (!session->Run({}, {}, {apply}, &unused).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(session->Run({}, {read}, {}, &out).ok());
  for (double x : Values(out[0])) EXPECT_EQ(x, -1000.0);
  Session::Reset({"training_concurrent"});
}

// Runs `op` once on variables of `var_shape` (initialized unless
// `uninitialized`) and returns the status.
absl::Status RunOnce(const std::string& op, int num_refs, const TensorShape& var_shape,
                     const std::vector<std::pair<std::string, Tensor>>& extra, bool uninitialized = false) {
  const std::string container = absl::StrCat("training_ops_error_", g_container++);
  GraphDefBuilder b;
  std::vector<std::string> inputs, inits;
  for (int i = 0; i < num_refs; ++i) {
    inputs.push_back(b.Variable(absl::StrCat("v", i), DT_FLOAT, var_shape, container));
    inits.push_back(b.Assign(absl::StrCat("init", i), inputs.back(),
                             b.Const(absl::StrCat("c", i), Make(DT_FLOAT, var_shape,
                                                                std::vector<double>(var_shape.num_elements(), 1))),
                             DT_FLOAT));
  }
  std::map<std::string, AttrValue> attrs = {{"T", MakeAttr(DT_FLOAT)}};
  for (const auto& [name, value] : extra) {
    inputs.push_back(b.Const(name, value));
    if (value.dtype() == DT_INT32 || value.dtype() == DT_INT64) attrs["Tindices"] = MakeAttr(value.dtype());
  }
  std::string apply = b.Node("the_update", op, inputs, attrs);
  auto session = NewSession(SessionOptions());
  if (!session.ok()) return session.status();
  absl::Status s = (*session)->Create(b.graph());
  std::vector<Tensor> out;
  if (s.ok() && !uninitialized) s = (*session)->Run({}, {}, inits, &out);
  if (s.ok()) s = (*session)->Run({}, {apply}, {}, &out);
  Session::Reset({container});
  return s;
}

Tensor F(const TensorShape& shape) { return Make(DT_FLOAT, shape, std::vector<double>(shape.num_elements(), 0.5)); }

void ExpectInvalid(const absl::Status& s, const std::string& substring) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(substring), std::string::npos) << s;
  EXPECT_NE(s.message().find("the_update"), std::string::npos) << s;
}

TEST(TrainingOps, BadInputFailsNamingTheNode) {
  const TensorShape v({4, 3});
  ExpectInvalid(RunOnce("ApplyGradientDescent", 1, v, {{"a", F({})}, {"d", F({3, 4})}}), "shape");
  ExpectInvalid(RunOnce("ApplyGradientDescent", 1, v, {{"a", F({2})}, {"d", F(v)}}), "scalar");
  ExpectInvalid(RunOnce("ApplyMomentum", 2, v, {{"lr", F({})}, {"g", F({4, 2})}, {"m", F({})}}), "shape");
  ExpectInvalid(RunOnce("ApplyAdam", 3, v,
                        {{"b1p", F({})}, {"b2p", F({})}, {"lr", F({1})}, {"b1", F({})}, {"b2", F({})}, {"e", F({})},
                         {"g", F(v)}}),
                "scalar");
  ExpectInvalid(RunOnce("SparseApplyMomentum", 2, v,
                        {{"lr", F({})}, {"g", F({2, 3})}, {"i", Tensor::FromVector<int32_t>({0, 4})}, {"m", F({})}}),
                "out of range");
  ExpectInvalid(RunOnce("SparseApplyAdagrad", 2, v,
                        {{"lr", F({})}, {"g", F({2, 3})}, {"i", Tensor::FromVector<int64_t>({-1, 0})}}),
                "out of range");
  ExpectInvalid(RunOnce("SparseApplyAdagrad", 2, v,
                        {{"lr", F({})}, {"g", F({2, 2})}, {"i", Tensor::FromVector<int32_t>({1, 0})}}),
                "do not match");
  ExpectInvalid(RunOnce("ApplyFtrl", 3, v,
                        {{"g", F(v)}, {"lr", F({})}, {"l1", F({})}, {"l2", F({})},
                         {"p", Make(DT_FLOAT, TensorShape({}), {0.5})}}),
                "lr_power");
  ExpectInvalid(RunOnce("SparseApplyFtrl", 3, v,
                        {{"g", F({1, 3})}, {"i", Tensor::FromVector<int32_t>({4})}, {"lr", F({})}, {"l1", F({})},
                         {"l2", F({})}, {"p", F({})}}),
                "out of range");
  ExpectInvalid(RunOnce("ApplyFtrlV2", 3, v,
                        {{"g", F(v)}, {"lr", Make(DT_FLOAT, TensorShape({}), {0})}, {"l1", F({})}, {"l2", F({})},
                         {"s", F({})}, {"p", F({})}}),
                "lr is not a positive");
  ExpectInvalid(RunOnce("ScatterAdd", 1, v, {{"i", Tensor::FromVector<int32_t>({7})}, {"u", F({1, 3})}}),
                "out of range");
  ExpectInvalid(RunOnce("ScatterSub", 1, v, {{"i", Tensor::FromVector<int32_t>({1})}, {"u", F({1, 4})}}),
                "updates of shape");
  absl::Status s = RunOnce("ApplyGradientDescent", 1, v, {{"a", F({})}, {"d", F(v)}}, /*uninitialized=*/true);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the_update"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
