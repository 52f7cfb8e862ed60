// Test helper for ckpt_test.sh: writes RUN_DIR/checkpoints/ckpt-1 and ckpt-2
// with the Saver (a float matrix, a partitioned embedding, an int64 step).
// With --rewrite-files CKPT_DIR it instead replaces CKPT_DIR/FILES with the
// lines read from stdin plus a valid CRC trailer (to craft inventories).
#include <cstdio>
#include <iostream>

#include "absl/strings/str_format.h"
#include "engine/platform/crc32c.h"
#include "checkpoint/saver.h"
#include "checkpoint/store_format.h"
#include "engine/graph/graph_def_builder.h"

int main(int argc, char** argv) {
  using namespace sluice;
  using namespace sluice::checkpoint;
  if (argc == 3 && std::string(argv[1]) == "--rewrite-files") {
    std::string text, line;
    while (std::getline(std::cin, line)) {
      if (!line.empty()) text += line + "\n";
    }
    absl::StrAppendFormat(&text, "crc32c %08x\n", crc32c::Value(text));
    absl::Status s = WriteFileAtomically(Env::Default(), JoinPath(argv[2], kFilesName), text);
    if (!s.ok()) std::fprintf(stderr, "make_test_checkpoints: %s\n", s.ToString().c_str());
    return s.ok() ? 0 : 1;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_checkpoints RUN_DIR | --rewrite-files CKPT_DIR < lines\n");
    return 2;
  }
  GraphDefBuilder b;
  std::string w = b.Variable("dense/kernel", DT_FLOAT, TensorShape({4, 3}));
  std::string e0 = b.Variable("emb/part_0", DT_FLOAT, TensorShape({1, 2}));
  std::string e1 = b.Variable("emb/part_1", DT_FLOAT, TensorShape({1, 2}));
  std::string gs = b.Variable("global_step", DT_INT64, TensorShape({}));
  std::vector<float> wv;
  for (int i = 0; i < 12; ++i) wv.push_back(i - 5.5f);
  std::vector<std::string> init = {
      b.Assign("iw", w, b.Const("w0", Tensor::FromVector<float>(wv, TensorShape({4, 3}))), DT_FLOAT),
      b.Assign("ie0", e0, b.Const("e00", Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}))), DT_FLOAT),
      b.Assign("ie1", e1, b.Const("e10", Tensor::FromVector<float>({3, 4}, TensorShape({1, 2}))), DT_FLOAT),
      b.Assign("igs", gs, b.Const("gs0", Tensor::Scalar<int64_t>(0)), DT_INT64)};
  b.NoOp("init", init);
  b.AssignAdd("step", gs, b.Const("one", Tensor::Scalar<int64_t>(1)), DT_INT64);
  SaverOptions o;
  o.run_dir = argv[1];
  o.background = false;
  auto saver = Saver::Create(o, {{"dense/kernel", "", DT_FLOAT},
                                 {"emb/part_0", "emb", DT_FLOAT, "0,1:-", TensorShape({2, 2})},
                                 {"emb/part_1", "emb", DT_FLOAT, "1,1:-", TensorShape({2, 2})},
                                 {"global_step", "", DT_INT64}});
  auto session = NewSession();
  absl::Status s = saver.status();
  if (s.ok()) s = (*session)->Create(b.graph());
  if (s.ok()) s = (*saver)->Extend(session->get());
  std::vector<Tensor> out;
  if (s.ok()) s = (*session)->Run({}, {}, {"init"}, &out);
  for (int step = 1; s.ok() && step <= 2; ++step) {
    s = (*session)->Run({}, {}, {"step"}, &out);
    if (s.ok()) s = (*saver)->Save(session->get(), step);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "make_test_checkpoints: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
