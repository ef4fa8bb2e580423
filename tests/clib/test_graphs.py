"""CUDA graphs in gdev-py's libcudart: explicit DAGs and multi-stream capture, by nvcc-built
programs (progs/rt_graph_*.cu) run unchanged on a mounted gdevd, plain and on the ASan/UBSan
build of the libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.cbuild import PROGS, clib_dir, compile_program
from tests.clib.runner import asan_env, build_rt_program, gdev_run, need_cuda_h

DAG = (
    # 8 nodes, roots copy-in and memset, 7 edges; types memcpy, child graph, host, event
    # record; the kernel node's argument a=3 copied when added (the variable changed after)
    "dag nodes=8 roots=2 edges=7 root0=1 root1=1 rest=2,1 types=1,4,3,7 a=3 func=1\n"
    # cudaGraphDebugDotPrint: 7 edges, the child's one, the dashed link to it; two clusters
    "dot arrows=9 clusters=2\n"
    # c = (3i+1) + 7*2 summed by the host node on each of three launches; a=5 and a second
    # copy-out target set on the executable graph only
    "run sums=1513500,1513500,1513500 calls=4 event=cudaSuccess exec5=2512500 kept=1513500 "
    "node_a=3\n"
    "update=cudaSuccess,0 sum=3511500 topo=cudaErrorGraphExecUpdateFailure,2\n"
    "errors dup=cudaErrorInvalidValue self=cudaErrorInvalidValue "
    "foreign=cudaErrorInvalidValue cycle=cudaErrorInvalidValue missing=cudaErrorInvalidValue "
    "left=2,0 acyclic=cudaSuccess wrong=cudaErrorInvalidValue "
    "device_launch=cudaErrorNotSupported\n")

CAPTURE = (
    # the forked stream shares the capture's id and graph; its frontier is its kernel;
    # copy, kernel | memset, kernel -> add -> copy back -> host: 7 nodes, 2 roots, 6 edges
    "capture same_id=1 graph=1 front=1,0 after=0 nodes=7 roots=2 edges=6 ran=0\n"
    "launch sums=16793600,16793600,16793600 calls=3\n"
    # z = x + x (one node set on the executable graph), then x = 3i by cudaGraphExecUpdate
    "update set=33546240 exec_update=cudaSuccess,0 sum=25180160\n"
    "errors unjoined=cudaErrorStreamCaptureUnjoined,1 s2=0 "
    "unmatched=cudaErrorStreamCaptureUnmatched invalidated=cudaErrorStreamCaptureInvalidated "
    "begin=cudaSuccess,cudaErrorIllegalState nested=1,4 calls=5\n"
    # a 2D memset, 2D and symbol copies captured: run at launch, the host's values read then
    "flat nodes=4 early=0 bytes=448 var=1,2,3,40\n")


MEM = (
    # cudaMallocAsync .. cudaFreeAsync captured: allocation and free nodes around the work, the
    # address fixed at capture, 8 KiB of graph memory until the last graph holding it goes
    "captured nodes=5 types=10,11 same_ptr=1,1 size=8192 used=8192 sums=18432,18432,18432 "
    "after=0 high=8192\n"
    # an allocation node by hand, not freed in the graph: cudaFree hands it back to the graph
    "explicit sums=2048,2048 not_graph=cudaErrorInvalidValue empty=cudaErrorInvalidValue "
    "left=0 high=0\n")


MORE = (
    # table = 1..8: four from index 2, then two from index 6 after new parameters
    "symbols out=3,4,5,6 again=7,8 past=cudaErrorInvalidValue "
    "dir=cudaErrorInvalidMemcpyDirection\n"
    # the destructor runs once (weight 10), when the executable graph, the last holder, goes
    "userobj kept=0,0,0 gone=10 release_null=cudaErrorInvalidValue "
    "flags=cudaErrorInvalidValue\n"
    # 8 blocks add 1..8 and sync the grid (launched cooperatively by the attribute): 36
    "attrs priority=3 unset=0 sum=36 seen=36 copied=3 not_kernel=cudaErrorInvalidValue\n"
    # memset 2 then 2*3+4; the executable graph's kernel given a=5: 2*5+4
    "generic first=10 exec=14 wrong=cudaErrorInvalidValue\n"
    # a capture into the program's graph ends without a graph back; an ordinary one needs it
    "capture_to_graph nodes=1 null_out=cudaErrorInvalidValue\n"
    "rt_graph_more ok\n")


def _build(tmp_path_factory, name: str) -> Path:
    return build_rt_program(name, tmp_path_factory.mktemp("graphs"))


@pytest.fixture(scope="module")
def rt_graph_dag(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_graph_dag")


@pytest.fixture(scope="module")
def rt_graph_capture(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_graph_capture")


def test_explicit_dag_runs_in_dependency_order_and_takes_updates(gdevd, rt_graph_dag) -> None:
    assert gdev_run(gdevd.mount, rt_graph_dag) == DAG


def test_capture_across_streams_builds_the_fork_join_dag(gdevd, rt_graph_capture) -> None:
    assert gdev_run(gdevd.mount, rt_graph_capture) == CAPTURE


@pytest.fixture(scope="module")
def rt_graph_mem(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_graph_mem")


def test_memory_nodes_keep_their_address_for_the_graphs_life(gdevd, rt_graph_mem) -> None:
    assert gdev_run(gdevd.mount, rt_graph_mem) == MEM


def test_graphs_under_asan_ubsan(gdevd, rt_graph_dag, rt_graph_capture, rt_graph_mem) -> None:
    """Both programs on the sanitized libraries: no leak, overflow or use after free in the
    graph code (node removal, clones, updates, capture teardown)."""
    env = asan_env()
    assert gdev_run(gdevd.mount, rt_graph_dag, env) == DAG
    assert gdev_run(gdevd.mount, rt_graph_capture, env) == CAPTURE
    assert gdev_run(gdevd.mount, rt_graph_mem, env) == MEM


def test_symbol_nodes_user_objects_attributes_generic_params(gdevd, tmp_path_factory) -> None:
    """CUDA 12's further graph calls (progs/rt_graph_more.cu), plain and under ASan/UBSan."""
    prog = _build(tmp_path_factory, "rt_graph_more")
    assert gdev_run(gdevd.mount, prog) == MORE
    assert gdev_run(gdevd.mount, prog, asan_env()) == MORE


def test_libcudart_so_12_takes_cuda_12_arguments(gdevd, tmp_path) -> None:
    """The calls whose arguments CUDA 13 changed answer a program built for CUDA 12 (plain
    names without edge data, _v2/_v3 with it) from libcudart.so.12."""
    need_cuda_h()
    libs = clib_dir()
    prog = compile_program(PROGS / "rt_abi12.c", tmp_path / "rt_abi12", None, f"-L{libs}",
                           "-l:libcudart.so.12", f"-Wl,-rpath,{libs}")
    assert gdev_run(gdevd.mount, prog) == (
        "abi12 err=0 edges=2 deps=1 dependents=1 left=1 capture=1,1,1 n=1,1 roots=2\n")
