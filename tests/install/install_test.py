#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""weir as a library, as a program outside the repository sees it.

find-package: installs the build tree into <build>/tests/install/prefix with
`cmake --install`, configures and builds examples/click-counter on its own
with find_package(weir) against that prefix (CMAKE_PREFIX_PATH), builds the
same example a second time with the flags `pkg-config --cflags --libs weir`
gives, and runs both through the click-counter end-to-end test
(tests/integration/pipeline_tests.py), which checks every client's count
against an independent recount of the access log.

add-subdirectory: configures examples/embedded-bot-counter on its own with
weir's source tree added by add_subdirectory (-DWEIR_SOURCE_DIR) and no
build type, checks from the compile commands that weir's own objects are
built optimised (-O2, weir's default RelWithDebInfo) while the example's
keep the program's (empty) choice, builds it and runs it through the
embedded-example end-to-end test, which checks every crawler's count.

The prefix and the examples' build folders are at fixed paths (under the build
tree; the add_subdirectory one beside it, <build>-add-subdirectory), emptied
first, so a compiler cache sees the same command lines.

usage: install_test.py --build DIR --weir BIN --repo DIR --generator G --compiler CXX
                       [find-package | add-subdirectory]
"""
import json
import argparse
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def run(argv, **kw):
    print("+", " ".join(shlex.quote(str(a)) for a in argv), flush=True)
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=600 * SCALE, **kw)
    if proc.returncode != 0:
        raise Failure(f"{argv[0]} exited {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\n"
                      f"stderr:\n{proc.stderr[-4000:]}")
    return proc


def launcher(build):
    """The build tree's compiler launcher (ccache), if any."""
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("CMAKE_CXX_COMPILER_LAUNCHER:"):
            return line.split("=", 1)[1].strip()
    return ""


def compile_flags(build_dir, source):
    """The compile command of `source` (a path ending) in build_dir's compile_commands.json."""
    commands = json.loads((build_dir / "compile_commands.json").read_text())
    for c in commands:
        if c["file"].endswith(source):
            return c.get("command") or " ".join(c["arguments"])
    raise Failure(f"no compile command for {source} in {build_dir}/compile_commands.json")


def add_subdirectory(args, build, repo, launch):
    # Beside the build tree, at its depth: the compile commands of weir's objects
    # then match the main build's (relative to the repository through ccache's
    # base_dir), so a compiler cache serves most of them.
    example_build = build.parent / f"{build.name}-add-subdirectory"
    shutil.rmtree(example_build, ignore_errors=True)
    # No CMAKE_BUILD_TYPE: the program sets none, and weir must still be optimised.
    configure = ["cmake", "-S", repo / "examples" / "embedded-bot-counter", "-B", example_build,
                 "-G", args.generator, f"-DCMAKE_CXX_COMPILER={args.compiler}",
                 f"-DWEIR_SOURCE_DIR={repo}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    if launch:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={launch}")
    run(configure)
    weir_cmd = compile_flags(example_build, "src/api/job.cpp")
    if "-O2" not in weir_cmd.split():
        raise Failure(f"weir's own objects are not optimised without a build type:\n{weir_cmd}")
    example_cmd = compile_flags(example_build, "embedded-bot-counter/main.cpp")
    if "-O2" in example_cmd.split():
        raise Failure(f"the program's own objects took weir's build type:\n{example_cmd}")
    run(["cmake", "--build", example_build, "-j", "2", "--target", "embedded_bot_counter"])
    run([sys.executable, repo / "tests" / "integration" / "pipeline_tests.py",
         "--weir", args.weir, "--example", example_build / "embedded_bot_counter",
         "--repo", repo, "embedded-example"])
    print("install: add_subdirectory(weir) without a build type builds weir optimised; "
          "embedded-bot-counter passes")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--weir", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--generator", required=True)
    ap.add_argument("--compiler", required=True)
    ap.add_argument("mode", nargs="?", default="find-package",
                    choices=["find-package", "add-subdirectory"])
    args = ap.parse_args()
    build = pathlib.Path(args.build).resolve()
    repo = pathlib.Path(args.repo).resolve()
    launch = launcher(build)
    if args.mode == "add-subdirectory":
        return add_subdirectory(args, build, repo, launch)
    root = build / "tests" / "install" / "work"
    shutil.rmtree(root, ignore_errors=True)
    prefix = root / "prefix"

    run(["cmake", "--install", build, "--prefix", prefix])
    # The core's headers and those of the kinds, installed from the kinds'
    # folders (src/kinds/<category>s/<type>/include/).
    for f in ["include/weir/api/job.hpp", "include/weir/file/source.hpp",
              "include/weir/file/sink.hpp", "include/weir/print/sink.hpp"]:
        if not (prefix / f).is_file():
            raise Failure(f"{f} not installed")
    configs = list(prefix.glob("lib*/**/cmake/weir/weirConfig.cmake"))
    if len(configs) != 1:
        raise Failure(f"expected one weirConfig.cmake under {prefix}, found {configs}")
    pcs = list(prefix.glob("lib*/**/pkgconfig/weir.pc"))
    if len(pcs) != 1:
        raise Failure(f"expected one weir.pc under {prefix}, found {pcs}")

    # find_package(weir) from the example's own CMakeLists.txt.
    example_build = root / "click-counter-cmake"
    configure = ["cmake", "-S", repo / "examples" / "click-counter", "-B", example_build,
                 "-G", args.generator, f"-DCMAKE_CXX_COMPILER={args.compiler}",
                 f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    if launch:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={launch}")
    run(configure)
    run(["cmake", "--build", example_build, "-j", "2"])
    cmake_example = example_build / "click_counter"

    # pkg-config: the flags a Makefile would use.
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcs[0].parent))
    flags = run(["pkg-config", "--cflags", "--libs", "weir"], env=env).stdout.split()
    if f"-I{prefix}/include" not in flags:
        raise Failure(f"pkg-config --cflags lacks -I{prefix}/include: {flags}")
    pc_example = root / "click_counter_pkgconfig"
    compile_cmd = ([launch] if launch else []) + [
        args.compiler, "-O2", "-o", pc_example,
        repo / "examples" / "click-counter" / "main.cpp", *flags]
    run(compile_cmd)

    for example in (cmake_example, pc_example):
        run([sys.executable, repo / "tests" / "integration" / "pipeline_tests.py",
             "--weir", args.weir, "--example", example, "--repo", repo, "click-counter"])
    print("install: find_package(weir) and pkg-config builds of click-counter pass")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
