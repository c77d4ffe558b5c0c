"""cuda_library: compiles .cu files with nvcc in a genrule (no rules_cuda offline).

Usage:
    load("//third_party/cuda:cuda.bzl", "cuda_library")
    cuda_library(
        name = "kernels",
        srcs = ["kernels.cu"],
        hdrs = ["kernels.h"],   # plain C++ headers: launcher declarations only
        nvcc_hdrs = ["//common/optimizers:adam.h"],  # optional
    )

When nvcc is absent (@local_cuda reports CUDA_AVAILABLE = False) or the build
uses --config=cpu, the target is a cc_library with the headers only (no
objects, no cudart), and cuda_enabled_select() picks its `if_false` branch,
so callers must guard their use with PS_WITH_CUDA.

nvcc sees the .cu files, `hdrs`, every *.h of the calling package and
`nvcc_hdrs` (headers from other packages: nvcc runs in a genrule, which does
not see the headers of `deps`); includes are relative to the workspace root.
Warnings are errors (-Wall -Wextra on the host side, like PS_COPTS).
Targets: sm_80 and sm_90 machine code plus compute_90 PTX for newer GPUs.
`copts` are extra nvcc flags.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")
load("@rules_cc//cc:defs.bzl", "cc_library")

CUDA_ARCH_FLAGS = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

NVCC_WARNING_FLAGS = [
    "-Werror=all-warnings",
    "-Xcompiler=-Wall,-Wextra,-Werror,-Wno-unused-parameter",
]

def cuda_enabled_select(if_true, if_false = []):
    """select() that is `if_true` when CUDA code is compiled into this build."""
    if not CUDA_AVAILABLE:
        return if_false
    return select({
        "//third_party/cuda:cpu_only": if_false,
        "//conditions:default": if_true,
    })

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], nvcc_hdrs = [], **kwargs):
    if not CUDA_AVAILABLE:
        cc_library(name = name, hdrs = hdrs, deps = deps, **kwargs)
        return

    # A label may appear only once in a genrule's srcs.
    inputs = []
    for f in hdrs + native.glob(["*.h"]) + nvcc_hdrs:
        if f not in inputs and f not in srcs:
            inputs.append(f)
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".pic.o")
        native.genrule(
            name = obj + "_nvcc",
            srcs = [src] + inputs,
            outs = [obj],
            cmd = " ".join([
                NVCC,
                "-c",
                "-std=c++17",
                "-O3",
                "-lineinfo",
                "-Xcompiler=-fPIC",
                "-I.",
                "-I$(GENDIR)",
            ] + NVCC_WARNING_FLAGS + CUDA_ARCH_FLAGS + copts + [
                "-o $@",
                "$(location " + src + ")",
            ]),
            message = "nvcc " + src,
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = cuda_enabled_select(objs),
        hdrs = hdrs,
        deps = deps + cuda_enabled_select(["@local_cuda//:cudart"]),
        **kwargs
    )
