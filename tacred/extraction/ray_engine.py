"""``tacred extract --engine ray``: one streaming Ray Data pipeline for the whole run, on this machine or a cluster.

The driver lists the input files and never opens them: a Ray Data reader (:class:`~tacred.extraction.ray_stages.
DocumentBlocks`) streams each file on the cluster as blocks of ``chunk_size`` documents, ``map_batches`` over a fixed
pool of actors (:class:`~tacred.extraction.ray_stages.ChunkExtractor`, each loading the model and spaCy once)
extracts them, and a Ray Data writer (:class:`~tacred.extraction.ray_stages.MentionShards`) writes each block's
mentions and then its record into the output folder. Sources and output folder must therefore be on storage that
every node sees at the same path. A rerun skips the blocks recorded in ``done/``; Ray re-runs the reads and blocks
that a dead actor or node took with it, and a block written twice is the same file, so every mention is written once.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tacred.errors import TacredError
from tacred.extraction.documents import InputFormatError, folder_files, format_of
from tacred.extraction.output import ShardSink, Totals
from tacred.extraction.runner import ExtractorSettings


class RayEngineError(TacredError, RuntimeError):
    """Ray is missing, no Ray cluster answers at the address given, or the input is not one Ray can read."""


class RayPipelineError(RayEngineError):
    """The pipeline failed on the cluster (beyond what Ray retries); the same command goes on where it stopped."""


def connect(address: str | None) -> tuple[int, int, int]:
    """Join the Ray cluster at ``address`` (None: start Ray on this machine); its CPUs, the most CPUs of one node,
    and its nodes."""
    try:
        import ray
    except ImportError as err:
        raise RayEngineError(f"Ray is not installed ({err}); pip install 'tacred[ray]'") from None
    if not ray.is_initialized():
        if address is not None:
            _check_reachable(address)
        options: dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
        if address is None:
            options["include_dashboard"] = False
        try:
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise RayEngineError(f"no Ray cluster at {address!r}: {err}") from None
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.CRITICAL)  # failures raise (one line, see _cause)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = sys.stderr.isatty()
    context.print_on_execution_start = False
    nodes = [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]
    return int(ray.cluster_resources().get("CPU", 1)), max([*nodes, 1]), max(len(nodes), 1)


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``HOST:PORT`` address that nothing answers at is an error now (Ray itself would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise RayEngineError(f"no Ray cluster answers at {address} ({err.strerror or err}); start one with "
                             "`ray start --head` or give its head's HOST:PORT") from None


def pool_size(cpus: int, node_cpus: int, workers: int | None, num_threads: int | None) -> tuple[int, int]:
    """``(actors, torch threads per actor)``; each actor reserves as many CPUs as it has threads. Neither given:
    one single-threaded actor per CPU of the cluster; only ``workers``: the cluster's CPUs shared out among them
    (at most one node's); only ``num_threads``: as many actors as the cluster's CPUs hold."""
    threads = num_threads or (1 if workers is None else max(1, min(cpus // workers, node_cpus)))
    return workers or max(1, cpus // threads), threads


def source_files(sources: Sequence[str], fmt: str, lines: bool) -> list[tuple[str, str, str]]:
    """The input files in input order as ``(absolute path, name, format)``, named as a local run names them."""
    found: list[tuple[str, str, str]] = []
    for source in sources:
        if source == "-":
            raise RayEngineError("--engine ray reads files, not standard input (-): its actors read the sources "
                                 "where they run; save the input to a file, or leave out --engine ray")
        path = Path(source)
        for file in folder_files(path) if path.is_dir() else [path]:
            found.append((os.path.abspath(file), str(file), format_of(file, fmt, lines)))
    seen: set[str] = set()
    for absolute, name, _ in found:
        if absolute in seen:
            raise RayEngineError(f"{name} is given twice; --engine ray reads each file once")
        seen.add(absolute)
    return found


def finished_blocks(folder: Path) -> set[tuple[int, int]]:
    """The ``(file, block)`` keys of the blocks a previous run of this command recorded in ``done/``."""
    from tacred.extraction.ray_stages import block_key

    keys = {p.stem: block_key(p.stem) for p in (folder / "done").glob("part-*.json")}
    if None in keys.values():
        stray = next(name for name, key in keys.items() if key is None)
        raise RayEngineError(f"{folder / 'done' / stray}.json is not a record of a Ray run's block")
    return set(keys.values())  # type: ignore[arg-type]


def run_on_ray(settings: ExtractorSettings, sources: Sequence[str], sink: ShardSink, *, fmt: str = "auto",
               lines: bool = False, text_column: str = "text", id_column: str = "id", chunk_size: int = 64,
               address: str | None = None, workers: int | None = None) -> Totals:
    """Extract every block of ``sources`` that ``sink``'s folder has not recorded, in one Ray Data pipeline, and
    return the folder's totals. ``workers``: actors (default one per CPU of the cluster)."""
    files = source_files(sources, fmt, lines)  # before Ray starts: standard input is an error at once
    cpus, node_cpus, nodes = connect(address)
    import numpy as np
    import ray
    from ray.data import ActorPoolStrategy

    from tacred.extraction.ray_stages import ChunkExtractor, DocumentBlocks, MentionShards, SourceFile

    folder = sink.folder.resolve()
    done = finished_blocks(folder)
    todo = {path: SourceFile(index, name, kind) for index, (path, name, kind) in enumerate(files)
            if not (kind == "text" and (index, 0) in done)}  # a one-document file that is done is not even opened
    if todo:
        # every row (a block of documents) its own Ray block, from the reader to the writer: Ray would otherwise
        # merge rows up to 128 MiB, so that one actor task took a whole file and its records came at its end
        ray.data.DataContext.get_current().target_max_block_size = 1
        actors, threads = pool_size(cpus, node_cpus, workers, settings.num_threads)
        keys = np.array(sorted(f << 32 | b for f, b in done), dtype=np.int64)
        reader = DocumentBlocks(todo, chunk_size=chunk_size, max_chars=settings.max_chars, text_column=text_column,
                                id_column=id_column, done=ray.put(keys))
        # reading and writing are light next to extraction: they reserve no CPU (the actors reserve them all), and
        # as many run at once as there are nodes (tasks without CPUs would each start a worker process)
        dataset = ray.data.read_datasource(reader, num_cpus=0, concurrency=nodes).map_batches(
            ChunkExtractor, batch_size=1, batch_format="pyarrow", compute=ActorPoolStrategy(size=actors),
            num_cpus=threads, fn_constructor_kwargs={"settings": asdict(replace(settings, num_threads=threads)),
                                                     "folder": str(folder)})
        try:
            dataset.write_datasink(MentionShards(str(folder), sink.fmt), ray_remote_args={"num_cpus": 0},
                                   concurrency=nodes)
        except Exception as err:  # noqa: BLE001 - Ray wraps what failed on the cluster; say what it was
            raise _cause(err) from None
    return sink.finish()


def _cause(err: BaseException) -> BaseException:
    """What failed on the cluster, unwrapped from Ray's exceptions: a source that cannot be read is the same
    one-line error as in a local run."""
    import ray.exceptions

    chain: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and all(current is not c for c in chain):
        chain.append(current)
        current = getattr(current, "cause", None) or current.__cause__
    for cause in reversed(chain):  # the innermost first: Ray's wrappers also pass as instances of the cause
        if isinstance(cause, InputFormatError) and not isinstance(cause, ray.exceptions.RayError):
            return InputFormatError(str(cause).splitlines()[0])  # Ray adds lines on its retries
    return RayPipelineError(f"the Ray pipeline failed ({type(err).__name__}: {str(err).splitlines()[0][:300]}); run "
                          "the same command to go on where it stopped")
