"""cuda_library: compiles .cu files with nvcc from the CUDA prefix (/usr/local/cuda) and wraps
the objects as a cc_library. Bazel 4.2.3 has no CUDA rules and we vendor none, so each .cu file
becomes one genrule running nvcc; the object is listed twice (as .o and .pic.o, both built with
-fPIC) so static and shared links both find it.

A .cu file may include CUDA headers, its own library's `hdrs` and the headers named in
`cu_hdrs` (all passed to nvcc's sandbox); keep .cu files to kernels and plain launch functions,
with the OpKernel glue in .cc files compiled by the C++ toolchain.

Device code is built for Hopper (sm_90: the H100 and H200 we are lent) with PTX for compute_90
so newer GPUs JIT it."""

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler",
    "-fPIC",
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_90,code=compute_90",
    "--expt-relaxed-constexpr",
    "-I.",
]

def cuda_library(name, srcs, hdrs = [], cu_hdrs = [], deps = [], copts = [], **kwargs):
    objs = []
    for src in srcs:
        stem = name + "_" + src.replace("/", "_").rsplit(".", 1)[0]
        native.genrule(
            name = stem + "_nvcc",
            srcs = [src] + hdrs + cu_hdrs,
            outs = [stem + ".o", stem + ".pic.o"],
            cmd = " ".join([NVCC] + NVCC_FLAGS + copts + [
                "-c $(location " + src + ")",
                "-o $(location " + stem + ".o)",
                "&& cp $(location " + stem + ".o) $(location " + stem + ".pic.o)",
            ]),
            message = "nvcc " + src,
        )
        objs.append(stem + ".pic.o")
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["//third_party:cuda_runtime"],
        **kwargs
    )
