"""Repository rule that finds the CUDA toolkit (no rules_cuda offline).

Generates @local_cuda with:
  //:defs.bzl    CUDA_AVAILABLE (bool) and NVCC (path or "")
  //:cudart      cc_library linking cudart + cuBLAS (empty when CUDA is absent)
The toolkit root is $CUDA_PATH, else /usr/local/cuda.
"""

def _cuda_configure_impl(ctx):
    root = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(root + "/bin/nvcc")
    available = nvcc.exists
    if available:
        ctx.symlink(root + "/include", "include")
        ctx.symlink(root + "/lib64", "lib64")
        build = """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "cudart",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp"]),
    includes = ["include"],
    linkopts = [
        "-L{root}/lib64",
        "-Wl,-rpath,{root}/lib64",
        "-lcublas",
        "-lcudart",
        "-ldl",
        "-lrt",
        "-lpthread",
    ],
)
""".format(root = root)
    else:
        build = """
package(default_visibility = ["//visibility:public"])
cc_library(name = "cudart")
"""
    ctx.file("BUILD.bazel", build)
    ctx.file("defs.bzl", "CUDA_AVAILABLE = {}\nNVCC = \"{}\"\nCUDA_ROOT = \"{}\"\n".format(
        "True" if available else "False",
        str(nvcc) if available else "",
        root if available else "",
    ))
    ctx.file("WORKSPACE", "workspace(name = \"local_cuda\")\n")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
