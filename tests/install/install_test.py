# SPDX-License-Identifier: Apache-2.0
"""The installed library, as a program outside the repository sees it.

Installs the build tree into <build>/tests/install/prefix with
`cmake --install`, configures and builds examples/click-counter on its own
with find_package(weir) against that prefix (CMAKE_PREFIX_PATH), builds the
same example a second time with the flags `pkg-config --cflags --libs weir`
gives, and runs both through the click-counter check the pipeline tests use
(weirtest.click_counter), which checks every client's count against an
independent recount of the access log.

The prefix and the example's build folder are at fixed paths under the build
tree (emptied first), so a compiler cache sees the same command lines.

The tree comes with --build-dir, its generator and compiler with --generator
and --compiler.
"""
import os
import shutil

from weirtest import run
from weirtest.click_counter import check_click_counter


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
    for f in ["include/weir/api/job.hpp", "include/weir/connectors/file_source.hpp"]:
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
