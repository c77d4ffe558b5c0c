"""cuda_library: compiles .cu files with nvcc in a genrule (no rules_cuda offline).

Usage:
    load("//third_party/cuda:cuda.bzl", "cuda_library")
    cuda_library(
        name = "kernels",
        srcs = ["kernels.cu"],
        hdrs = ["kernels.h"],   # plain C++ headers: launcher declarations only
    )

When nvcc is absent (@local_cuda reports CUDA_AVAILABLE = False) or the build
uses --config=cpu, the target is an empty cc_library and `ps_cuda_enabled()`
(select key) is false, so callers must guard their use with PS_WITH_CUDA.
Targets: sm_80 and sm_90 machine code plus compute_90 PTX for newer GPUs.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")
load("@rules_cc//cc:defs.bzl", "cc_library")

CUDA_ARCH_FLAGS = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

def cuda_enabled_select(if_true, if_false = []):
    """select() that is `if_true` when CUDA code is compiled into this build."""
    if not CUDA_AVAILABLE:
        return if_false
    return select({
        "//third_party/cuda:cpu_only": if_false,
        "//conditions:default": if_true,
    })

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    if not CUDA_AVAILABLE:
        cc_library(name = name, hdrs = hdrs, deps = deps, **kwargs)
        return
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".o")
        native.genrule(
            name = obj + "_nvcc",
            srcs = [src] + hdrs + native.glob(["*.h"]),
            outs = [obj],
            cmd = " ".join([
                NVCC,
                "-c",
                "-std=c++17",
                "-O3",
                "-Xcompiler=-fPIC",
                "-I.",
                "-I$(GENDIR)",
            ] + CUDA_ARCH_FLAGS + copts + [
                "-o $@",
                "$(location " + src + ")",
            ]),
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = cuda_enabled_select(objs),
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        **kwargs
    )
