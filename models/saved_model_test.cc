// The SavedModel of an inference graph: signature keys, the one "serve" meta graph and its
// serving_default signature, refusals (an unfrozen variable, two outputs with one key), and the
// directory: saved_model.pb that parses back, an empty variables/, assets/vocab.txt, a trailing
// slash, and never a write over a directory that holds something.
#include "models/saved_model.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace models {
namespace {

InferenceGraph Graph() {
  InferenceGraph ig;
  NodeDef* image = ig.graph.add_node();
  image->set_name("image");
  image->set_op("Placeholder");
  NodeDef* logits = ig.graph.add_node();
  logits->set_name("outputs/logits");
  logits->set_op("Identity");
  logits->add_input("image");
  ig.inputs.push_back({"image", DT_FLOAT, PartialShape({-1, 4}), "feature"});
  ig.outputs.push_back({"outputs/logits", DT_FLOAT, PartialShape({-1, 4}), "logits"});
  ig.outputs.push_back({"outputs/logits/classes", DT_INT64, PartialShape({-1}), "classes"});
  return ig;
}

TEST(SavedModel, SignatureKeysDropOutputsAndTurnSlashesIntoUnderscores) {
  EXPECT_EQ(SignatureKey("outputs/logits/classes"), "logits_classes");
  EXPECT_EQ(SignatureKey("outputs/sampled_softmax/logits"), "sampled_softmax_logits");
  EXPECT_EQ(SignatureKey("image"), "image");
}

TEST(SavedModel, OneServeMetaGraphWithAPredictSignature) {
  auto model = BuildSavedModel(Graph());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->saved_model_schema_version(), 1);
  ASSERT_EQ(model->meta_graphs_size(), 1);
  const MetaGraphDef& meta = model->meta_graphs(0);
  ASSERT_EQ(meta.meta_info_def().tags_size(), 1);
  EXPECT_EQ(meta.meta_info_def().tags(0), "serve");
  EXPECT_EQ(meta.graph_def().node_size(), 2);
  ASSERT_EQ(meta.signature_def().count("serving_default"), 1u);
  const SignatureDef& sig = meta.signature_def().at("serving_default");
  EXPECT_EQ(sig.method_name(), "tensorflow/serving/predict");
  ASSERT_EQ(sig.inputs().count("image"), 1u);
  EXPECT_EQ(sig.inputs().at("image").name(), "image:0");
  EXPECT_EQ(sig.inputs().at("image").tensor_shape().dim_size(), 2);
  EXPECT_EQ(sig.inputs().at("image").tensor_shape().dim(0).size(), -1);
  ASSERT_EQ(sig.outputs().size(), 2u);
  EXPECT_EQ(sig.outputs().at("logits_classes").name(), "outputs/logits/classes:0");
  EXPECT_EQ(sig.outputs().at("logits_classes").dtype(), DT_INT64);
}

TEST(SavedModel, RefusesAnUnfrozenVariableAndTwoOutputsWithOneKey) {
  InferenceGraph unfrozen = Graph();
  NodeDef* v = unfrozen.graph.add_node();
  v->set_name("fc/kernel");
  v->set_op("VariableV2");
  EXPECT_TRUE(absl::IsInvalidArgument(BuildSavedModel(unfrozen).status()));
  InferenceGraph clash = Graph();
  clash.outputs.push_back({"outputs/logits_classes", DT_INT64, PartialShape({-1}), "clash"});
  auto s = BuildSavedModel(clash).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'logits_classes'")) << s;
}

TEST(SavedModel, WritesTheDirectoryWholeAndNeverOverAnother) {
  Env* env = Env::Default();
  const std::string root = FreshTestDir("saved_model_write");
  auto model = BuildSavedModel(Graph());
  ASSERT_TRUE(model.ok());
  const std::string dir = JoinPath(root, "model/1");
  ASSERT_TRUE(WriteSavedModel(env, dir + "/", *model, {"<unk>", "<eos>", "the"}).ok());
  auto bytes = ReadFileToString(env, JoinPath(dir, "saved_model.pb"));
  ASSERT_TRUE(bytes.ok());
  SavedModel back;
  ASSERT_TRUE(back.ParseFromString(*bytes));
  EXPECT_EQ(back.meta_graphs(0).signature_def().at("serving_default").outputs().size(), 2u);
  EXPECT_TRUE(env->IsDirectory(JoinPath(dir, "variables")));
  EXPECT_TRUE(env->GetChildren(JoinPath(dir, "variables"))->empty());
  EXPECT_EQ(*ReadFileToString(env, JoinPath(dir, "assets/vocab.txt")), "<unk>\n<eos>\nthe\n");
  auto siblings = env->GetChildren(JoinPath(root, "model"));
  ASSERT_TRUE(siblings.ok());
  EXPECT_EQ(*siblings, std::vector<std::string>{"1"});  // no temporary directory left
  // Again over it: refused, and what is there is untouched.
  absl::Status again = WriteSavedModel(env, dir, *model, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(again)) << again;
  EXPECT_TRUE(absl::StrContains(again.message(), "exists and is not empty")) << again;
  EXPECT_TRUE(env->FileExists(JoinPath(dir, "assets/vocab.txt")).ok());
  // Over a file: refused; into an empty directory: written, without assets.
  ASSERT_TRUE(WriteStringToFile(env, JoinPath(root, "file"), "x").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(WriteSavedModel(env, JoinPath(root, "file"), *model, {})));
  ASSERT_TRUE(env->CreateDirs(JoinPath(root, "empty")).ok());
  // A directory named like the temporary one is the user's: it is neither used nor deleted.
  ASSERT_TRUE(env->CreateDirs(absl::StrCat(JoinPath(root, "empty"), ".tmp-", ::getpid())).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(WriteSavedModel(env, JoinPath(root, "empty"), *model, {})));
  ASSERT_TRUE(env->DeleteRecursively(absl::StrCat(JoinPath(root, "empty"), ".tmp-", ::getpid())).ok());
  ASSERT_TRUE(WriteSavedModel(env, JoinPath(root, "empty"), *model, {}).ok());
  EXPECT_TRUE(env->FileExists(JoinPath(root, "empty/saved_model.pb")).ok());
  EXPECT_FALSE(env->FileExists(JoinPath(root, "empty/assets")).ok());
}

}  // namespace
}  // namespace models
}  // namespace sluice
