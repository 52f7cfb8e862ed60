// Einsum equations: parsing (explicit and implicit output, "..."), errors,
// and resolution against shapes (sizes, broadcasting, ranks).
#include "engine/framework/einsum_equation.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

std::string RoundTrip(const std::string& equation) {
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(equation);
  if (!eq.ok()) return std::string(eq.status().message());
  return EinsumEquationString(eq->inputs, eq->output);
}

TEST(EinsumEquationTest, ParsesExplicitAndImplicitForms) {
  EXPECT_EQ(RoundTrip("ab,bc->ac"), "ab,bc->ac");
  EXPECT_EQ(RoundTrip("bsd,de->bse"), "bsd,de->bse");
  EXPECT_EQ(RoundTrip("...ij,...jk->...ik"), "...ij,...jk->...ik");
  EXPECT_EQ(RoundTrip(" ab , bc -> ca "), "ab,bc->ca");
  EXPECT_EQ(RoundTrip("ij->"), "ij->");
  // Implicit: letters used once, ASCII order (upper case first), after "...".
  EXPECT_EQ(RoundTrip("ij,jk"), "ij,jk->ik");
  EXPECT_EQ(RoundTrip("ba"), "ba->ab");
  EXPECT_EQ(RoundTrip("bA,Ac"), "bA,Ac->bc");
  EXPECT_EQ(RoundTrip("zB,a"), "zB,a->Baz");
  EXPECT_EQ(RoundTrip("...ij,jk"), "...ij,jk->...ik");
  EXPECT_EQ(RoundTrip("ii"), "ii->");
}

TEST(EinsumEquationTest, RejectsMalformedEquations) {
  for (const char* bad : {"ab,bc->a1", "a.b->a", "a..->a", "......a->a", "ab->aa", "ab->c", "ab->a->b",
                          "ab,bc->a,c", "a$b"}) {
    absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(bad);
    EXPECT_FALSE(eq.ok()) << bad;
    if (!eq.ok()) {
      EXPECT_EQ(eq.status().code(), absl::StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(eq.status().message().find(bad), std::string::npos) << eq.status().message();
    }
  }
}

TEST(EinsumEquationTest, ResolvesSizesAndBroadcastsEllipsis) {
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation("...ij,...jk->...ik");
  ASSERT_TRUE(eq.ok());
  absl::StatusOr<EinsumPlan> plan = ResolveEinsum(*eq, {{5, 1, 2, 3}, {4, 3, 7}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->output_dims, (std::vector<int64_t>{5, 4, 2, 7}));
  // Right-aligned ellipsis labels: input 1's one "..." dim is the second.
  EXPECT_EQ(plan->input_labels[1][0], kFirstEllipsisLabel + 1);
  EXPECT_EQ(plan->input_labels[0][0], kFirstEllipsisLabel);
  EXPECT_EQ(plan->label_size[kFirstEllipsisLabel + 1], 4);

  // Unknown dims (shape inference) take the other input's size.
  plan = ResolveEinsum(*ParseEinsumEquation("ab,bc->ac"), {{-1, 3}, {-1, -1}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->output_dims, (std::vector<int64_t>{-1, -1}));
  plan = ResolveEinsum(*ParseEinsumEquation("ab,bc->ca"), {{2, -1}, {3, 4}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->output_dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(plan->label_size[1], 3);

  // An unknown "..." dim beside a 1 stays unknown (it may broadcast the 1).
  plan = ResolveEinsum(*ParseEinsumEquation("...i,...i->...i"), {{-1, 3}, {1, 3}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->output_dims, (std::vector<int64_t>{-1, 3}));
  plan = ResolveEinsum(*ParseEinsumEquation("...i,...i->...i"), {{-1, 3}, {5, 3}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->output_dims, (std::vector<int64_t>{5, 3}));
}

TEST(EinsumEquationTest, ResolutionErrorsNameTheProblem) {
  auto error = [](const char* equation, std::vector<std::vector<int64_t>> dims) {
    absl::StatusOr<EinsumPlan> plan = ResolveEinsum(*ParseEinsumEquation(equation), dims);
    return plan.ok() ? std::string("ok") : std::string(plan.status().message());
  };
  EXPECT_NE(error("ab,bc->ac", {{2, 3}, {4, 5}}).find("label 'b' is 3 in input 0 but 4 in input 1"),
            std::string::npos);
  EXPECT_NE(error("ab,bc->ac", {{2, 3}}).find("1 inputs"), std::string::npos);
  EXPECT_NE(error("abc->a", {{2, 3}}).find("input 0 has rank 2"), std::string::npos);
  EXPECT_NE(error("...ab->a", {{2}}).find("at least 2"), std::string::npos);
  EXPECT_NE(error("...a,...a->...a", {{2, 3}, {4, 3}}).find("do not broadcast"), std::string::npos);
  absl::StatusOr<EinsumPlan> diagonal = ResolveEinsum(*ParseEinsumEquation("ii->i"), {{3, 3}});
  ASSERT_FALSE(diagonal.ok());
  EXPECT_EQ(diagonal.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace sluice
