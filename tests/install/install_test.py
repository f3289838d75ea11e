# SPDX-License-Identifier: Apache-2.0
"""weir as a library, as a program outside the repository sees it.

find-package: installs the build tree into <build>/tests/install/prefix with
`cmake --install`, configures and builds examples/click-counter on its own
with find_package(weir) against that prefix (CMAKE_PREFIX_PATH), builds the
same example a second time with the flags `pkg-config --cflags --libs weir`
gives, and runs both through the click-counter check the pipeline tests use
(weirtest.click_counter), which checks every client's count against an
independent recount of the access log.

add-subdirectory: configures examples/embedded-bot-counter on its own with
weir's source tree added by add_subdirectory (-DWEIR_SOURCE_DIR) and no
build type, checks from the compile commands that weir's own objects are
built optimised (-O2, weir's default RelWithDebInfo) while the example's
keep the program's (empty) choice, builds it and runs it through the
bot-counter check the pipeline tests use, which checks every crawler's count.

The prefix and the examples' build folders are at fixed paths (under the build
tree; the add_subdirectory one beside it, <build>-add-subdirectory), emptied
first, so a compiler cache sees the same command lines.

The tree comes with --build-dir, its generator and compiler with --generator
and --compiler.
"""
import json
import os
import shutil

from weirtest import run
from weirtest.click_counter import check_click_counter, check_embedded_bot_counter


def launcher(build):
    """The build tree's compiler launcher (ccache), if any."""
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("CMAKE_CXX_COMPILER_LAUNCHER:"):
            return line.split("=", 1)[1].strip()
    return ""


def test_find_package(repo, build_dir, work, pytestconfig):
    build = build_dir
    generator = pytestconfig.getoption("generator")
    compiler = pytestconfig.getoption("compiler")
    assert generator and compiler, "this test needs --generator and --compiler"
    root = build / "tests" / "install" / "work"
    shutil.rmtree(root, ignore_errors=True)
    prefix = root / "prefix"
    launch = launcher(build)

    run(["cmake", "--install", build, "--prefix", prefix], timeout=600)
    # The core's headers and those of the kinds, installed from the kinds'
    # folders (src/kinds/<category>s/<type>/include/).
    for f in ["include/weir/api/job.hpp", "include/weir/file/source.hpp",
              "include/weir/file/sink.hpp", "include/weir/print/sink.hpp"]:
        assert (prefix / f).is_file(), f"{f} not installed"
    configs = list(prefix.glob("lib*/**/cmake/weir/weirConfig.cmake"))
    assert len(configs) == 1, f"expected one weirConfig.cmake under {prefix}, found {configs}"
    pcs = list(prefix.glob("lib*/**/pkgconfig/weir.pc"))
    assert len(pcs) == 1, f"expected one weir.pc under {prefix}, found {pcs}"

    # find_package(weir) from the example's own CMakeLists.txt.
    example_build = root / "click-counter-cmake"
    configure = ["cmake", "-S", repo / "examples" / "click-counter", "-B", example_build,
                 "-G", generator, f"-DCMAKE_CXX_COMPILER={compiler}",
                 f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    if launch:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={launch}")
    run(configure, timeout=600)
    run(["cmake", "--build", example_build, "-j", "2"], timeout=600)
    cmake_example = example_build / "click_counter"

    # pkg-config: the flags a Makefile would use.
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcs[0].parent))
    flags = run(["pkg-config", "--cflags", "--libs", "weir"], env=env).stdout.split()
    assert f"-I{prefix}/include" in flags, f"pkg-config --cflags lacks -I{prefix}/include: {flags}"
    pc_example = root / "click_counter_pkgconfig"
    compile_cmd = ([launch] if launch else []) + [
        compiler, "-O2", "-o", pc_example,
        repo / "examples" / "click-counter" / "main.cpp", *flags]
    run(compile_cmd, timeout=600)

    for example in (cmake_example, pc_example):
        run_dir = work / example.name
        run_dir.mkdir()
        check_click_counter(example, repo, run_dir)


def compile_flags(build_dir, source):
    """The compile command of `source` (a path ending) in build_dir's compile_commands.json."""
    commands = json.loads((build_dir / "compile_commands.json").read_text())
    for c in commands:
        if c["file"].endswith(source):
            return c.get("command") or " ".join(c["arguments"])
    raise AssertionError(f"no compile command for {source} in {build_dir}/compile_commands.json")


def test_add_subdirectory(repo, build_dir, work, pytestconfig):
    generator = pytestconfig.getoption("generator")
    compiler = pytestconfig.getoption("compiler")
    assert generator and compiler, "this test needs --generator and --compiler"
    launch = launcher(build_dir)
    # Beside the build tree, at its depth: the compile commands of weir's objects
    # then match the main build's (relative to the repository through ccache's
    # base_dir), so a compiler cache serves most of them.
    example_build = build_dir.parent / f"{build_dir.name}-add-subdirectory"
    shutil.rmtree(example_build, ignore_errors=True)
    # No CMAKE_BUILD_TYPE: the program sets none, and weir must still be optimised.
    configure = ["cmake", "-S", repo / "examples" / "embedded-bot-counter", "-B", example_build,
                 "-G", generator, f"-DCMAKE_CXX_COMPILER={compiler}",
                 f"-DWEIR_SOURCE_DIR={repo}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    if launch:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={launch}")
    run(configure, timeout=600)
    weir_cmd = compile_flags(example_build, "src/api/job.cpp")
    assert "-O2" in weir_cmd.split(), (
        f"weir's own objects are not optimised without a build type:\n{weir_cmd}")
    example_cmd = compile_flags(example_build, "embedded-bot-counter/main.cpp")
    assert "-O2" not in example_cmd.split(), (
        f"the program's own objects took weir's build type:\n{example_cmd}")
    run(["cmake", "--build", example_build, "-j", "2", "--target", "embedded_bot_counter"],
        timeout=900)
    check_embedded_bot_counter(example_build / "embedded_bot_counter", repo, work)
