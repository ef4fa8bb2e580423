"""CUDA graphs in gdev-py's libcudart: explicit DAGs and multi-stream capture, by nvcc-built
programs (progs/rt_graph_*.cu) run unchanged on a mounted gdevd, plain and on the ASan/UBSan
build of the libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import asan_env, build_rt_program, gdev_run

DAG = (
    # 8 nodes, roots copy-in and memset, 7 edges; types memcpy, child graph, host, event
    # record; the kernel node's argument a=3 copied when added (the variable changed after)
    "dag nodes=8 roots=2 edges=7 root0=1 root1=1 types=1,4,3,7 a=3 func=1\n"
    # c = (3i+1) + 7*2 summed by the host node on each of three launches; a=5 and a second
    # copy-out target set on the executable graph only
    "run sums=1513500,1513500,1513500 calls=4 event=cudaSuccess exec5=2512500 kept=1513500 "
    "node_a=3\n"
    "update=cudaSuccess,0 sum=3511500 topo=cudaErrorGraphExecUpdateFailure,2\n"
    "errors dup=cudaErrorInvalidValue self=cudaErrorInvalidValue "
    "foreign=cudaErrorInvalidValue cycle=cudaErrorInvalidValue missing=cudaErrorInvalidValue "
    "left=2,0 acyclic=cudaSuccess wrong=cudaErrorInvalidValue\n")

CAPTURE = (
    # the forked stream shares the capture's id and graph; its frontier is its kernel;
    # copy, kernel | memset, kernel -> add -> copy back -> host: 7 nodes, 2 roots, 6 edges
    "capture same_id=1 graph=1 front=1,0 after=0 nodes=7 roots=2 edges=6 ran=0\n"
    "launch sums=16793600,16793600,16793600 calls=3\n"
    "errors unjoined=cudaErrorStreamCaptureUnjoined,1 s2=0 "
    "unmatched=cudaErrorStreamCaptureUnmatched invalidated=cudaErrorStreamCaptureInvalidated "
    "begin=cudaSuccess,cudaErrorIllegalState nested=1,4 calls=3\n")


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


def test_graphs_under_asan_ubsan(gdevd, rt_graph_dag, rt_graph_capture) -> None:
    """Both programs on the sanitized libraries: no leak, overflow or use after free in the
    graph code (node removal, clones, updates, capture teardown)."""
    env = asan_env()
    assert gdev_run(gdevd.mount, rt_graph_dag, env) == DAG
    assert gdev_run(gdevd.mount, rt_graph_capture, env) == CAPTURE
