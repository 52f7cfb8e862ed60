#!/bin/bash
# Regenerates the generated seed corpora under tests/fuzz/corpus/: make_seeds writes the binary
# seeds with our own writers; the experiment seeds are the example configs, each behind the
# experiment_config target's option byte (0: no override line). corpus/graphdef_run/ is written
# by hand (text GraphDefs) and left alone.
# Usage: bash tests/fuzz/make_seeds.sh   (from the workspace root)
set -euo pipefail
cd "$(dirname "$0")/../.."
nice -n 19 bazel build //tests/fuzz:make_seeds
for t in record_reader event_file idx_csv checkpoint_reader example_parse experiment_config worker_request; do
  rm -rf "tests/fuzz/corpus/$t"
done
mkdir -p tests/fuzz/corpus/experiment_config
bazel-bin/tests/fuzz/make_seeds "$PWD/tests/fuzz/corpus"
for f in configs/*.pbtxt; do
  { printf '\0'; cat "$f"; } > "tests/fuzz/corpus/experiment_config/$(basename "$f" .pbtxt)"
done
# One seed with an override line (option byte 1).
{ printf '\1'; echo 'train.steps=7'; cat configs/fashion_mlp.pbtxt; } > tests/fuzz/corpus/experiment_config/fashion_mlp_override
ls -l tests/fuzz/corpus/*
