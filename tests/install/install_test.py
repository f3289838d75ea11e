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

components: installs the tree again (<build>/tests/install/components) and
configures small programs against it: find_package(weir REQUIRED COMPONENTS
<the connectors built>) must find them, define weir::<connector> for exactly
those and compile their headers through the targets; a connector not built
and an unknown name must fail find_package with a message naming the option
(or the components there are).

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


# The optional connectors' components (weir::<name>), the WEIR_HAVE_<NAME>
# that says whether the build tree built each, and a public header each
# target must make reachable.
CONNECTORS = {
    "kafka": ("KAFKA", ["weir/kafka/source.hpp", "weir/kafka/sink.hpp"]),
    "redis": ("REDIS", ["weir/redis/sink.hpp"]),
    "postgres": ("POSTGRES", ["weir/postgres/sink.hpp"]),
    "elasticsearch": ("HTTP", ["weir/elasticsearch/sink.hpp"]),
    "server": ("HTTP", ["weir/server/http_server.hpp"]),
}


def built_connectors(build):
    """The components the build tree built, from its CMakeCache.txt."""
    have = {}
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("WEIR_HAVE_"):
            name, value = line.split("=", 1)
            have[name.split(":")[0][len("WEIR_HAVE_"):]] = value.strip().upper() in ("ON", "1", "TRUE")
    for name, (option, _) in CONNECTORS.items():
        assert option in have, f"no WEIR_HAVE_{option} in {build}/CMakeCache.txt"
    return [name for name, (option, _) in CONNECTORS.items() if have[option]]


def configure_probe(root, name, components, generator, compiler, prefix, expect=0):
    """Configures a program that calls find_package(weir REQUIRED COMPONENTS
    <components>) against `prefix`, links every weir::<component> and
    includes their headers; prints the weir::<connector> targets defined."""
    src = root / f"{name}-src"
    src.mkdir(parents=True)
    headers = [h for c in components if c in CONNECTORS for h in CONNECTORS[c][1]]
    (src / "probe.cpp").write_text(
        "".join(f'#include "{h}"\n' for h in headers) + "int probe() { return 0; }\n")
    targets = " ".join(f"weir::{c}" for c in components)
    (src / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.25)
project(probe LANGUAGES CXX)
find_package(weir 0.1 REQUIRED COMPONENTS {" ".join(components)})
foreach(c IN ITEMS {" ".join(CONNECTORS)})
  if(TARGET weir::${{c}})
    list(APPEND defined ${{c}})
  endif()
endforeach()
message(STATUS "weir connector targets: [${{defined}}]")
add_library(probe OBJECT probe.cpp)
target_link_libraries(probe PRIVATE weir::weir {targets})
""")
    return run(["cmake", "-S", src, "-B", root / name, "-G", generator,
                f"-DCMAKE_CXX_COMPILER={compiler}", f"-DCMAKE_PREFIX_PATH={prefix}"],
               timeout=300, expect=expect)


def test_components(build_dir, pytestconfig):
    """weir::<connector> for each connector built, and only those; find_package
    COMPONENTS succeeds for those built and fails for the others (naming the
    option that builds them) and for an unknown name."""
    generator = pytestconfig.getoption("generator")
    compiler = pytestconfig.getoption("compiler")
    assert generator and compiler, "this test needs --generator and --compiler"
    root = build_dir / "tests" / "install" / "components"
    shutil.rmtree(root, ignore_errors=True)
    prefix = root / "prefix"
    run(["cmake", "--install", build_dir, "--prefix", prefix], timeout=600)
    built = built_connectors(build_dir)

    # The built connectors as required components: found, their targets
    # defined (and no other), their headers compile through the targets.
    p = configure_probe(root, "built", built, generator, compiler, prefix)
    assert f"weir connector targets: [{';'.join(built)}]" in p.stdout, p.stdout
    run(["cmake", "--build", root / "built"], timeout=300)
    pcs = {pc.name for pc in prefix.glob("lib*/**/pkgconfig/weir-*.pc")}
    assert pcs == {f"weir-{c}.pc" for c in built}, f"pkg-config modules {pcs}, built {built}"

    # A connector left out: find_package fails and names its option.
    for c in sorted(set(CONNECTORS) - set(built)):
        p = configure_probe(root, f"without-{c}", [c], generator, compiler, prefix, expect=None)
        assert p.returncode != 0, f"find_package(weir COMPONENTS {c}) succeeded without {c}"
        said = " ".join(p.stderr.split())  # CMake wraps the message
        assert f"weir was built without the {c} connector" in said, p.stderr
        assert f"-DWEIR_WITH_{CONNECTORS[c][0]}=ON" in said, p.stderr

    # A name that is no component.
    p = configure_probe(root, "unknown", ["kafkaa"], generator, compiler, prefix, expect=None)
    assert p.returncode != 0, "find_package(weir COMPONENTS kafkaa) succeeded"
    assert 'weir has no component "kafkaa"' in " ".join(p.stderr.split()), p.stderr


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
