"""sluice_fuzz_target: one fuzz target as a libFuzzer binary and as a replay test.

    load("//tests/fuzz:fuzz.bzl", "sluice_fuzz_target")

    sluice_fuzz_target(
        name = "record_reader",              # corpus/record_reader/, regressions/record_reader/
        srcs = ["record_reader_fuzzer.cc"],  # defines LLVMFuzzerTestOneInput
        deps = ["//engine/platform"],
    )

makes
  <name>_fuzz_test  a cc_test that feeds every file of corpus/<name>/ and regressions/<name>/
                    through LLVMFuzzerTestOneInput with our own main (replay_main.cc): built by
                    the normal gcc config, so `bazel test //...` checks seeds and reproducers
                    without clang and without building anything twice;
  <name>_fuzzer     the libFuzzer binary. With --config=fuzz (clang, --define=sluice_fuzz=1) it
                    links -fsanitize=fuzzer; otherwise it is the replay binary again. Tagged
                    "manual": `//...` skips it, tests/fuzz/run_fuzzers.sh builds it by name.
"""

def sluice_fuzz_target(name, srcs, deps = [], size = "small"):
    corpus = native.glob(["corpus/" + name + "/**"])
    regressions = native.glob(["regressions/" + name + "/**"])

    native.cc_library(
        name = name + "_fuzz_lib",
        testonly = 1,
        srcs = srcs,
        deps = deps,
        alwayslink = 1,
    )

    native.cc_test(
        name = name + "_fuzz_test",
        size = size,
        data = corpus + regressions,
        args = [
            "tests/fuzz/corpus/" + name,
            "tests/fuzz/regressions/" + name,
        ],
        deps = [
            ":" + name + "_fuzz_lib",
            "//tests/fuzz:replay_main",
        ],
    )

    native.cc_binary(
        name = name + "_fuzzer",
        testonly = 1,
        deps = [":" + name + "_fuzz_lib"] + select({
            "//tests/fuzz:fuzzing": [],
            "//conditions:default": ["//tests/fuzz:replay_main"],
        }),
        linkopts = select({
            "//tests/fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        tags = ["manual"],
    )
