"""ps_sdk: the C++ client SDK as an installable tree (see README.md here).

Produces one tar with
  include/   the public headers: what `roots` include, transitively, of this
             repository's headers (found by the compiler with -MM, so a
             header the public ones stop including leaves the SDK by itself)
  lib/       libps_client.a (every archive of `deps`' closure merged) and
             libps_client.so.0 (the same objects, linked against Debian's
             libraries)
  lib/pkgconfig/ps_client{,_static}.pc, lib/cmake/ps_client/*.cmake (from
             templates;
             relocatable: they find the prefix from their own location)
"""

def _ps_sdk_impl(ctx):
    headers = depset(transitive = [
        d[CcInfo].compilation_context.headers
        for d in ctx.attr.deps
    ])
    archives = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for library in linker_input.libraries:
                archive = library.pic_static_library or library.static_library
                if archive and archive not in archives:
                    archives.append(archive)
    args = ctx.actions.args()
    args.add(ctx.outputs.out)
    args.add(ctx.bin_dir.path)
    args.add(ctx.file.pc_template)
    args.add(ctx.file.pc_static_template)
    args.add(ctx.file.cmake_template)
    args.add(ctx.file.cmake_version_template)
    args.add(ctx.attr.version)
    args.add_joined(ctx.attr.roots, join_with = ",")
    args.add_all(archives)
    ctx.actions.run(
        executable = ctx.executable._packager,
        arguments = [args],
        inputs = depset(
            archives + [
                ctx.file.pc_template,
                ctx.file.pc_static_template,
                ctx.file.cmake_template,
                ctx.file.cmake_version_template,
            ],
            transitive = [headers],
        ),
        outputs = [ctx.outputs.out],
        mnemonic = "PsSdk",
        progress_message = "Packaging the C++ SDK %s" % ctx.outputs.out.short_path,
        use_default_shell_env = True,
    )
    return [DefaultInfo(
        files = depset([ctx.outputs.out]),
        runfiles = ctx.runfiles(files = [ctx.outputs.out]),
    )]

ps_sdk = rule(
    implementation = _ps_sdk_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "roots": attr.string_list(doc = "public headers, workspace-relative"),
        "pc_template": attr.label(allow_single_file = True),
        "pc_static_template": attr.label(allow_single_file = True),
        "cmake_template": attr.label(allow_single_file = True),
        "cmake_version_template": attr.label(allow_single_file = True),
        "version": attr.string(),
        "out": attr.output(),
        "_packager": attr.label(
            default = ":package_sdk.sh",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
    },
)
