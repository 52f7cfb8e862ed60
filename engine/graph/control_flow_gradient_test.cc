// cond and while_loop (engine/graph/control_flow_builders.h) and their
// gradients (while_gradient.h, the Switch/Merge gradients), run through a
// Session: forward values against the same computation written out in C++,
// and every gradient against central finite differences in float64 through a
// loop with a fixed trip count, one whose trip count depends on the data, a
// cond (both branches), nested loops, a cond in a loop, a loop in a cond and
// per-iteration (stacked) outputs. Stateful ops in a differentiated body are
// refused by name.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/graph/control_flow_builders.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_builder.h"
#include "engine/runtime/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

class ControlFlowGradientTest : public ::testing::Test {
 protected:
  ControlFlowGradientTest() : b_(&graph_) {}

  Output Placeholder(const std::string& name) {
    return b_.Op(name, "Placeholder", {}, {{"dtype", MakeAttr(DT_DOUBLE)}});
  }
  Output Const(const std::vector<double>& v, TensorShape shape) {
    return b_.Const("c", Tensor::FromVector<double>(v, shape));
  }
  static Tensor Vec(const std::vector<double>& v, TensorShape shape) { return Tensor::FromVector<double>(v, shape); }

  // Runs `fetches` with `feeds`, after (re)creating the session.
  std::vector<Tensor> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches) {
    if (session_ == nullptr) {
      EXPECT_TRUE(b_.ok()) << b_.status();
      GraphDef def;
      graph_.ToGraphDef(&def);
      auto s = NewSession(SessionOptions());
      EXPECT_TRUE(s.ok()) << s.status();
      session_ = std::move(s).value();
      absl::Status created = session_->Create(def);
      EXPECT_TRUE(created.ok()) << created;
    }
    std::vector<Tensor> out;
    absl::Status st = session_->Run(feeds, fetches, {}, &out);
    EXPECT_TRUE(st.ok()) << st;
    return out;
  }

  double Scalar(const std::vector<std::pair<std::string, Tensor>>& feeds, const Output& y) {
    std::vector<Tensor> out = Run(feeds, {y.name()});
    return out.empty() ? NAN : out[0].data<double>()[0];
  }

  // d y / d x for every placeholder in `xs` (fed with `values`) against
  // central differences. y must be a double scalar.
  // `extra_feeds`: other placeholders' values (not differentiated).
  void CheckGradients(const Output& y, const std::vector<Output>& xs, const std::vector<Tensor>& values,
                      double tolerance = 1e-6, const std::vector<std::pair<std::string, Tensor>>& extra_feeds = {}) {
    std::vector<Gradient>& grads = last_grads_;
    absl::Status s = AddSymbolicGradients(&graph_, {y}, xs, {}, &grads);
    ASSERT_TRUE(s.ok()) << s;
    session_.reset();  // the graph grew
    std::vector<std::string> fetches;
    for (size_t i = 0; i < xs.size(); ++i) {
      ASSERT_TRUE(grads[i].present()) << "no gradient for " << xs[i].name();
      fetches.push_back(DenseGradient(&b_, grads[i]).name());
    }
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i].name(), values[i]);
    feeds.insert(feeds.end(), extra_feeds.begin(), extra_feeds.end());
    std::vector<Tensor> analytic = Run(feeds, fetches);
    ASSERT_EQ(analytic.size(), xs.size());
    const double eps = 1e-6;
    for (size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(analytic[i].NumElements(), values[i].NumElements()) << xs[i].name();
      for (int64_t e = 0; e < values[i].NumElements(); ++e) {
        auto shifted = [&](double delta) {
          std::vector<std::pair<std::string, Tensor>> f = feeds;
          Tensor t = Vec(std::vector<double>(values[i].data<double>(), values[i].data<double>() + values[i].NumElements()),
                         values[i].shape());
          t.data<double>()[e] += delta;
          f[i].second = t;
          return Scalar(f, y);
        };
        const double numeric = (shifted(eps) - shifted(-eps)) / (2 * eps);
        const double got = analytic[i].data<double>()[e];
        EXPECT_NEAR(got, numeric, tolerance * std::max(1.0, std::fabs(numeric)))
            << "d y / d " << xs[i].name() << "[" << e << "]";
      }
    }
  }

  Graph graph_;
  GraphBuilder b_;
  std::vector<Gradient> last_grads_;
  std::unique_ptr<Session> session_;
};

// i < 4: v = tanh(W v + x). W and x are captured; v0 is the initial value.
TEST_F(ControlFlowGradientTest, WhileLoopWithCapturedTensors) {
  Output w = Placeholder("w"), x = Placeholder("x"), v0 = Placeholder("v0");
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 4)}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output wv = b.Op("wv", "MatMul", {w, b.Op("col", "Reshape", {v[1], b.Const("s", Tensor::FromVector<int32_t>({3, 1}))})});
        Output pre = b.Op("pre", "Add", {b.Op("flat", "Reshape", {wv, b.Const("s3", Tensor::FromVector<int32_t>({3}))}), x});
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}), b.Op("tanh", "Tanh", {pre})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output y = b_.Op("y", "Sum", {b_.Op("sq", "Square", {loop->outputs[1]}), b_.Const("axis", Tensor::Scalar<int32_t>(0))});

  const std::vector<double> wv = {0.5, -0.3, 0.2, 0.1, 0.4, -0.6, -0.2, 0.3, 0.7}, xv = {0.1, -0.2, 0.3},
                            v0v = {0.4, 0.5, -0.6};
  // The forward value, computed here.
  std::vector<double> v = v0v;
  for (int it = 0; it < 4; ++it) {
    std::vector<double> next(3);
    for (int r = 0; r < 3; ++r) {
      double s = xv[r];
      for (int c = 0; c < 3; ++c) s += wv[r * 3 + c] * v[c];
      next[r] = std::tanh(s);
    }
    v = next;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"w", Vec(wv, TensorShape({3, 3}))}, {"x", Vec(xv, TensorShape({3}))}, {"v0", Vec(v0v, TensorShape({3}))}};
  std::vector<Tensor> out = Run(feeds, {loop->outputs[1].name(), loop->trip_count.name()});
  ASSERT_EQ(out.size(), 2u);
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(out[0].data<double>()[r], v[r], 1e-12);
  EXPECT_EQ(out[1].data<int32_t>()[0], 4);

  session_.reset();
  CheckGradients(y, {w, x, v0}, {feeds[0].second, feeds[1].second, feeds[2].second});
}

// i < n: h = tanh(h W + x), h a [2, 3] batch, as a recurrent layer. W's
// gradient in each iteration is MatMul(h, dz, transpose_a): the backward loop
// appends both operands and takes one product after the loop (no per-iteration
// accumulator). Checked with 3 iterations and with none (W's gradient zero).
TEST_F(ControlFlowGradientTest, RecurrentKernelGradientIsOneProductAfterTheLoop) {
  Output w = Placeholder("w"), x = Placeholder("x"), h0 = Placeholder("h0");
  Output n = b_.Op("n", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), h0},
      [&](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], n}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output pre = b.Op("pre", "Add", {b.Op("hw", "MatMul", {v[1], w}), x});
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}), b.Op("tanh", "Tanh", {pre})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output y = b_.Op("y", "Sum", {b_.Op("sq", "Square", {loop->outputs[1]}), b_.Const("axes", Tensor::FromVector<int32_t>({0, 1}))});
  const Tensor wv = Vec({0.5, -0.3, 0.2, 0.1, 0.4, -0.6, -0.2, 0.3, 0.7}, TensorShape({3, 3}));
  const Tensor xv = Vec({0.1, -0.2, 0.3}, TensorShape({3}));
  const Tensor h0v = Vec({0.4, 0.5, -0.6, -0.1, 0.2, 0.3}, TensorShape({2, 3}));
  for (int trips : {3, 0}) {
    SCOPED_TRACE(trips);
    CheckGradients(y, {w, x, h0}, {wv, xv, h0v}, 1e-6, {{"n", Tensor::Scalar<int32_t>(trips)}});
    ASSERT_EQ(last_grads_.size(), 3u);
    const Output dw = last_grads_[0].dense;
    ASSERT_TRUE(dw.valid());
    EXPECT_EQ(dw.node->type_string(), "MatMul") << dw.node->name();
    EXPECT_THAT(dw.node->name(), HasSubstr("summed_product"));
    // h's gradient dz W^T reads W transposed once before the backward loop.
    int hoisted = 0;
    for (Node* n : graph_.nodes()) {
      if (n->type_string() == "Transpose" && absl::StrContains(n->name(), "transposed")) ++hoisted;
      if (n->type_string() == "MatMul" && absl::StrContains(n->name(), "while_grad")) {
        bool tb = false;
        ASSERT_TRUE(GetNodeAttr(n->def(), "transpose_b", &tb).ok());
        EXPECT_FALSE(tb) << n->name();
      }
    }
    EXPECT_GE(hoisted, 1);
    if (trips == 0) {
      std::vector<Tensor> zero_trips = Run({{"w", wv}, {"x", xv}, {"h0", h0v}, {"n", Tensor::Scalar<int32_t>(0)}},
                                           {dw.name()});
      ASSERT_EQ(zero_trips.size(), 1u);
      for (int64_t e = 0; e < zero_trips[0].NumElements(); ++e) EXPECT_EQ(zero_trips[0].data<double>()[e], 0.0);
    }
  }
}

// while sum(v) < 10: v = v * a + x. The trip count depends on the data.
TEST_F(ControlFlowGradientTest, WhileLoopWithDataDependentTripCount) {
  Output a = Placeholder("a"), x = Placeholder("x"), v0 = Placeholder("v0");
  auto loop = BuildWhileLoop(
      &b_, {v0},
      [](GraphBuilder& b, const std::vector<Output>& v) {
        return b.Op("less", "Less",
                    {b.Op("sum", "Sum", {v[0], b.Scalar<int32_t>("axis", 0)}), b.Scalar<double>("limit", 10.0)});
      },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        return WhileBody{{b.Op("next", "Add", {b.Op("scaled", "Mul", {v[0], a}), x})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output y = b_.Op("y", "Sum", {b_.Op("sq", "Square", {loop->outputs[0]}), b_.Scalar<int32_t>("axis", 0)});
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"a", Tensor::Scalar<double>(1.3)},
                                                             {"x", Vec({0.2, 0.1}, TensorShape({2}))},
                                                             {"v0", Vec({0.5, 0.4}, TensorShape({2}))}};
  std::vector<Tensor> trips = Run(feeds, {loop->trip_count.name()});
  ASSERT_EQ(trips.size(), 1u);
  int expected_trips = 0;
  for (double s0 = 0.5, s1 = 0.4; s0 + s1 < 10; ++expected_trips) s0 = s0 * 1.3 + 0.2, s1 = s1 * 1.3 + 0.1;
  EXPECT_EQ(trips[0].data<int32_t>()[0], expected_trips);
  EXPECT_GT(expected_trips, 5);
  // Other starting values take another number of iterations.
  std::vector<std::pair<std::string, Tensor>> far = feeds;
  far[2].second = Vec({4.0, 4.5}, TensorShape({2}));
  EXPECT_LT(Run(far, {loop->trip_count.name()})[0].data<int32_t>()[0], expected_trips);

  session_.reset();
  CheckGradients(y, {a, x, v0}, {feeds[0].second, feeds[1].second, feeds[2].second}, 1e-5);
}

// sum(x) > 0 ? sum(x * x * w) : sum(sin(x)) + w, checked with each branch taken.
TEST_F(ControlFlowGradientTest, CondBothBranches) {
  Output x = Placeholder("x"), w = Placeholder("w");
  Output pred = b_.Op("pred", "Greater", {b_.Op("sx", "Sum", {x, b_.Scalar<int32_t>("axis", 0)}), b_.Scalar<double>("zero", 0.0)});
  auto out = BuildCond(
      &b_, pred,
      [&](GraphBuilder& b) {
        return std::vector<Output>{
            b.Op("s", "Sum", {b.Op("xxw", "Mul", {b.Op("xx", "Mul", {x, x}), w}), b.Scalar<int32_t>("axis", 0)})};
      },
      [&](GraphBuilder& b) {
        return std::vector<Output>{b.Op("s", "Add", {b.Op("ss", "Sum", {b.Op("sin", "Sin", {x}), b.Scalar<int32_t>("axis", 0)}), w})};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  Output y = b_.Op("y", "Mul", {(*out)[0], w});  // w also reaches y outside the cond
  const Tensor wv = Tensor::Scalar<double>(0.7);
  const Tensor positive = Vec({0.3, -0.1, 0.5}, TensorShape({3})), negative = Vec({-0.3, 0.1, -0.5}, TensorShape({3}));
  EXPECT_NEAR(Scalar({{"x", positive}, {"w", wv}}, y), (0.09 + 0.01 + 0.25) * 0.7 * 0.7, 1e-12);
  EXPECT_NEAR(Scalar({{"x", negative}, {"w", wv}}, y), (std::sin(-0.3) + std::sin(0.1) + std::sin(-0.5) + 0.7) * 0.7,
              1e-12);
  session_.reset();
  CheckGradients(y, {x, w}, {positive, wv});
  CheckGradients(y, {x, w}, {negative, wv});
}

// Outer: 3 iterations of { inner: 2 iterations of v = tanh(v * w); v = v + x }.
TEST_F(ControlFlowGradientTest, NestedLoops) {
  Output w = Placeholder("w"), x = Placeholder("x"), v0 = Placeholder("v0");
  auto counted = [](int n) {
    return [n](GraphBuilder& b, const std::vector<Output>& v) {
      return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", n)});
    };
  };
  auto outer = BuildWhileLoop(&b_, {b_.Scalar<int32_t>("i0", 0), v0}, counted(3),
                              [&](GraphBuilder& b, const std::vector<Output>& v) {
                                auto inner = BuildWhileLoop(
                                    &b, {b.Scalar<int32_t>("j0", 0), v[1]}, counted(2),
                                    [&](GraphBuilder& ib, const std::vector<Output>& u) {
                                      return WhileBody{{ib.Op("j1", "Add", {u[0], ib.Scalar<int32_t>("one", 1)}),
                                                        ib.Op("t", "Tanh", {ib.Op("vw", "Mul", {u[1], w})})},
                                                       {}};
                                    },
                                    {"inner"});
                                EXPECT_TRUE(inner.ok()) << inner.status();
                                return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}),
                                                  b.Op("plus_x", "Add", {inner->outputs[1], x})},
                                                 {}};
                              },
                              {"outer"});
  ASSERT_TRUE(outer.ok()) << outer.status();
  Output y = b_.Op("y", "Sum", {b_.Op("sq", "Square", {outer->outputs[1]}), b_.Scalar<int32_t>("axis", 0)});
  const Tensor wv = Vec({0.8, -1.1}, TensorShape({2})), xv = Vec({0.1, 0.2}, TensorShape({2})),
               v0v = Vec({0.5, -0.4}, TensorShape({2}));
  double v[2] = {0.5, -0.4};
  const double wd[2] = {0.8, -1.1}, xd[2] = {0.1, 0.2};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int e = 0; e < 2; ++e) v[e] = std::tanh(v[e] * wd[e]);
    }
    for (int e = 0; e < 2; ++e) v[e] += xd[e];
  }
  EXPECT_NEAR(Scalar({{"w", wv}, {"x", xv}, {"v0", v0v}}, y), v[0] * v[0] + v[1] * v[1], 1e-12);
  session_.reset();
  CheckGradients(y, {w, x, v0}, {wv, xv, v0v});
}

// A scan: the loop stacks v at every iteration, and y weighs each step.
TEST_F(ControlFlowGradientTest, StackedPerIterationOutputs) {
  Output w = Placeholder("w"), v0 = Placeholder("v0"), weights = Placeholder("weights");
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 4)}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output next = b.Op("t", "Tanh", {b.Op("vw", "Mul", {v[1], w})});
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}), next}, {b.Op("sq", "Square", {next})}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  ASSERT_EQ(loop->stacked.size(), 1u);
  // y = sum(stacked * weights): every iteration's value counts.
  Output y = b_.Op("y", "Sum", {b_.Op("weighted", "Mul", {loop->stacked[0], weights}),
                                b_.Const("axes", Tensor::FromVector<int32_t>({0, 1}))});
  const Tensor wv = Vec({0.9, -0.7}, TensorShape({2})), v0v = Vec({0.6, 0.3}, TensorShape({2})),
               weights_v = Vec({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({4, 2}));
  std::vector<Tensor> stacked = Run({{"w", wv}, {"v0", v0v}, {"weights", weights_v}}, {loop->stacked[0].name()});
  ASSERT_EQ(stacked.size(), 1u);
  ASSERT_EQ(stacked[0].shape(), TensorShape({4, 2}));
  double v[2] = {0.6, 0.3};
  const double wd[2] = {0.9, -0.7};
  for (int i = 0; i < 4; ++i) {
    for (int e = 0; e < 2; ++e) {
      v[e] = std::tanh(v[e] * wd[e]);
      EXPECT_NEAR(stacked[0].data<double>()[i * 2 + e], v[e] * v[e], 1e-12);
    }
  }
  session_.reset();
  CheckGradients(y, {w, v0, weights}, {wv, v0v, weights_v});
}

// Rows of a captured table gathered in the body (the same row in several
// iterations): the table's gradient leaves the loop sparse, rows appended per
// iteration, and densifies to the finite differences.
TEST_F(ControlFlowGradientTest, SparseGradientOfCapturedTable) {
  Output table = Placeholder("table"), v0 = Placeholder("v0");
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 5)}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output row = b.Op("row", "Gather", {table, b.Op("mod", "FloorMod", {v[0], b.Scalar<int32_t>("three", 3)})});
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}),
                          b.Op("t", "Tanh", {b.Op("m", "Mul", {v[1], row})})},
                         {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output y = b_.Op("y", "Sum", {loop->outputs[1], b_.Scalar<int32_t>("axis", 0)});
  CheckGradients(y, {table, v0},
                 {Vec({0.5, -0.8, 1.1, 0.3, -0.4, 0.9, 7, 7}, TensorShape({4, 2})), Vec({0.7, -0.6}, TensorShape({2}))});
  ASSERT_EQ(last_grads_.size(), 2u);
  EXPECT_TRUE(last_grads_[0].is_sparse);
}

// A cond in a loop body, and a loop in a cond branch.
TEST_F(ControlFlowGradientTest, CondInLoopAndLoopInCond) {
  Output x = Placeholder("x"), v0 = Placeholder("v0");
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 5)}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output positive = b.Op("pos", "Greater", {v[1], b.Scalar<double>("zero", 0.0)});
        auto c = BuildCond(
            &b, positive, [&](GraphBuilder& tb) { return std::vector<Output>{tb.Op("d", "Sub", {tb.Op("m", "Mul", {v[1], x}), x})}; },
            [&](GraphBuilder& eb) { return std::vector<Output>{eb.Op("s", "Add", {eb.Op("sin", "Sin", {v[1]}), x})}; });
        EXPECT_TRUE(c.ok()) << c.status();
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}), (*c)[0]}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output big = b_.Op("big", "Greater", {x, b_.Scalar<double>("half", 0.5)});
  auto outer = BuildCond(
      &b_, big, [&](GraphBuilder& tb) { return std::vector<Output>{tb.Op("sq", "Square", {loop->outputs[1]})}; },
      [&](GraphBuilder& eb) {
        auto inner = BuildWhileLoop(
            &eb, {eb.Scalar<int32_t>("k0", 0), x},
            [](GraphBuilder& b, const std::vector<Output>& v) {
              return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 3)});
            },
            [&](GraphBuilder& b, const std::vector<Output>& v) {
              return WhileBody{{b.Op("k1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}),
                                b.Op("cube", "Mul", {b.Op("sq", "Mul", {v[1], v[1]}), loop->outputs[1]})},
                               {}};
            });
        EXPECT_TRUE(inner.ok()) << inner.status();
        return std::vector<Output>{inner->outputs[1]};
      });
  ASSERT_TRUE(outer.ok()) << outer.status();
  Output y = (*outer)[0];
  auto reference = [](double xv, double v) {
    for (int i = 0; i < 5; ++i) v = v > 0 ? v * xv - xv : std::sin(v) + xv;
    if (xv > 0.5) return v * v;
    double u = xv;
    for (int k = 0; k < 3; ++k) u = u * u * v;
    return u;
  };
  for (double xv : {0.8, 0.3}) {
    EXPECT_NEAR(Scalar({{"x", Tensor::Scalar<double>(xv)}, {"v0", Tensor::Scalar<double>(0.4)}}, y), reference(xv, 0.4),
                1e-12)
        << xv;
  }
  session_.reset();
  CheckGradients(y, {x, v0}, {Tensor::Scalar<double>(0.8), Tensor::Scalar<double>(0.4)});
  CheckGradients(y, {x, v0}, {Tensor::Scalar<double>(0.3), Tensor::Scalar<double>(0.4)});
}

TEST_F(ControlFlowGradientTest, StatefulOpInBodyIsRefusedByName) {
  Output v0 = Placeholder("v0");
  auto loop = BuildWhileLoop(
      &b_, {b_.Scalar<int32_t>("i0", 0), v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("less", "Less", {v[0], b.Scalar<int32_t>("n", 2)}); },
      [&](GraphBuilder& b, const std::vector<Output>& v) {
        Output noise = b.Op("noise", "RandomUniform", {b.Const("shape", Tensor::FromVector<int32_t>({}, TensorShape({0})))},
                            {{"dtype", MakeAttr(DT_DOUBLE)}});
        return WhileBody{{b.Op("i1", "Add", {v[0], b.Scalar<int32_t>("one", 1)}), b.Op("m", "Mul", {v[1], noise})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(&graph_, {loop->outputs[1]}, {v0}, {}, &grads);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("noise"));
  EXPECT_THAT(s.message(), HasSubstr("RandomUniform"));
}

TEST_F(ControlFlowGradientTest, BuilderErrors) {
  Output v0 = Placeholder("v0");
  auto not_bool = BuildWhileLoop(
      &b_, {v0}, [](GraphBuilder&, const std::vector<Output>& v) { return v[0]; },
      [](GraphBuilder&, const std::vector<Output>& v) { return WhileBody{{v[0]}, {}}; });
  EXPECT_EQ(not_bool.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_bool.status().message(), HasSubstr("bool"));
  auto wrong_count = BuildWhileLoop(
      &b_, {v0},
      [](GraphBuilder& b, const std::vector<Output>& v) { return b.Op("l", "Less", {v[0], b.Scalar<double>("n", 1.0)}); },
      [](GraphBuilder&, const std::vector<Output>& v) { return WhileBody{{v[0], v[0]}, {}}; }, {"wrong"});
  EXPECT_EQ(wrong_count.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_count.status().message(), HasSubstr("2 values for 1 loop variables"));
  GraphBuilder fresh(&graph_);
  auto branches = BuildCond(
      &fresh, b_.Op("p", "Placeholder", {}, {{"dtype", MakeAttr(DT_BOOL)}}),
      [&](GraphBuilder&) { return std::vector<Output>{v0}; }, [&](GraphBuilder&) { return std::vector<Output>{}; });
  EXPECT_EQ(branches.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
