"""The memory service process (`claude-mem service`): one per data folder.

It holds the service lock (`<data dir>/service.lock`) for its whole life, so there is never a
second one, and a lock cannot go stale (the kernel drops it with the process). It listens on a
Unix socket (0600, see protocol.py), owns the embedding model and the Chroma client, keeps the
index in step with SQLite (catching up on start, so killing it at any moment loses nothing), and
answers searches with the one search function. It exits after `service_idle_s` without a request.

Heavy modules (chromadb, onnxruntime, numpy) are imported only after the lock is taken: a second
service started by a racing client exits in milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

from claude_mem.jsonfile import write_json_atomic
from claude_mem.logs import log_line
from claude_mem.processes import take_lock
from claude_mem.processes.malloc import give_large_blocks_back
from claude_mem.service import protocol
from claude_mem.service.memory import IdleTrim
from claude_mem.service.threads import FirstIdle
from claude_mem.settings import Config

SEARCH_THREADS = 2  # searches at once; more would only contend for 2 cores and the index lock
READ_TIMEOUT_S = 10.0  # a client that connects and sends nothing is dropped
IDLE_CHECK_S = 1.0


class Service:
    def __init__(self, config: Config, *, idle_s: float | None = None, mcp_host: Any = None) -> None:
        self.config = config
        self.mcp_host = mcp_host  # hosts the sessions' MCP servers (mcp/host.py), given by entry.py
        self.idle_s = config.service_idle_s if idle_s is None else idle_s
        self.started = time.time()
        self.last_request = time.monotonic()
        self.requests = 0
        self.errors = 0
        self.pool = FirstIdle(SEARCH_THREADS, thread_name_prefix="claude-mem-search")  # threads.py: why not a plain pool
        self.trim = IdleTrim(self.pool)  # the heap's free memory given back once idle (memory.py)
        self.local = threading.local()
        self.indexer: Any = None
        # The index settings (chroma_url, semantic_index, embedder) in use, or being switched to (_adopt).
        self._adopted = (config.chroma_url or "", bool(config.semantic_index), str(config.embedder))
        self.stopping: asyncio.Event | None = None
        self.loaded = False
        self.socket_path = protocol.socket_path(config.data_dir)

    def log(self, message: str) -> None:
        log_line(self.config.logs_dir, "service", message)

    # --- lifecycle ------------------------------------------------------------------------------

    def run(self) -> str:
        config = self.config
        config.ensure_dirs()
        lock_fd = take_lock(protocol.lock_path(config.data_dir), wait_s=0.5)  # past a client's probe of it
        if lock_fd is None:
            return "another service is running for this data folder"
        # Who holds it, for `stop` before the info file is written (that waits for the model).
        # A stop signalled before the event loop takes the signals over ends it as one during the
        # import does (_on_signal), not by the default action (exit status -15).
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _exit_while_loading)
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, str(os.getpid()).encode(), 0)
        give_large_blocks_back()  # before the model, Chroma and the threads allocate anything
        try:
            return asyncio.run(self._serve())
        finally:
            for path in (self.socket_path, protocol.info_path(config.data_dir)):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            os.close(lock_fd)

    async def _serve(self) -> str:
        self.stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal)
        # Everything heavy is imported once, here, before any thread runs: two threads importing
        # chromadb at once trip Python's module-lock deadlock detection.
        await asyncio.to_thread(self._import)
        self.loaded = True
        server = await self._listen()
        # Idle is counted from when it can be asked: on a busy machine the import above took
        # longer than a short service_idle_s, and the service left as soon as it listened, its
        # first clients' rows for a second service to pick up (seen at load ~10).
        self.last_request = time.monotonic()
        self._write_info()
        self._start_index()
        if self.mcp_host is not None:  # after the model's warm-up, which the first searches wait for
            self.mcp_host.start_loading(getattr(self, "warming", None))
        self.log(f"listening on {self.socket_path} (pid {os.getpid()})")
        reason = "stopped"
        try:
            async with server:
                reason = await self._until_stopped()
        finally:
            await asyncio.to_thread(self._close)
        self.log(f"exiting ({reason}) after {self.requests} request(s)")
        return reason

    def _on_signal(self) -> None:
        assert self.stopping is not None
        if not self.loaded:
            # Still importing: no socket, info file or index write to close yet, and the import
            # cannot be cut short, so `stop` (doctor, uninstall) would wait seconds for it.
            os._exit(0)
        self.stopping.set()

    async def _listen(self) -> asyncio.AbstractServer:
        path = self.socket_path
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        # A long data-dir path puts the socket under the temp dir (protocol.py): a folder there made
        # by someone else could let them swap the socket, so it must be ours, and ours alone.
        if os.stat(folder).st_uid != os.getuid():
            raise PermissionError(f"{folder} belongs to another user: refusing to put the memory service's socket there")
        if folder != self.config.data_dir:
            os.chmod(folder, 0o700)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # ours to remove: we hold the lock, so whoever made it is gone
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        return await asyncio.start_unix_server(self._connection, sock=sock, limit=protocol.MAX_REQUEST + 1)

    async def _until_stopped(self) -> str:
        assert self.stopping is not None
        while True:
            try:
                await asyncio.wait_for(self.stopping.wait(), IDLE_CHECK_S)
                return "signal" if not getattr(self, "stop_asked", False) else "asked to stop"
            except TimeoutError:
                pass
            # Idle is judged before polling: a poll hands the indexer a job, and a failing index
            # (Chroma away) would otherwise look busy at every check and keep the service forever.
            idle = time.monotonic() - self.last_request
            if idle >= self.idle_s and (self.indexer is None or self.indexer.idle()):
                return "idle"
            if self.indexer is not None:
                self.indexer.poll()
            if self.indexer is not None and self.indexer.switch_to is not None:
                await self._switch()

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "started_at_epoch": int(self.started * 1000), "socket": self.socket_path,
                "version": protocol.VERSION, "python": sys.executable}
        write_json_atomic(protocol.info_path(self.config.data_dir), info)

    def _import(self, config: Config | None = None) -> None:
        config = config or self.config
        import claude_mem.recall.search  # noqa: F401
        import claude_mem.store.db  # noqa: F401

        if config.semantic_index:
            import numpy  # noqa: F401

            import claude_mem.index.semantic_index  # noqa: F401
            from claude_mem.index import embed  # chromadb, onnxruntime, tokenizers
            from claude_mem.index.embedders import multilingual_installed

            embed.cache_optimized_model(os.path.join(config.data_dir, "models"))
            if multilingual_installed():
                import claude_mem.index.multilingual  # noqa: F401  (the model itself loads on first use)

    async def _adopt(self, wanted: Any) -> None:
        """Use the index the client is configured for. Settings change (`settings set chroma_url`,
        an environment variable) while the service runs; the latest client's choice wins, and
        the new index is caught up from SQLite like any other."""
        if not isinstance(wanted, dict):
            return
        choice = (str(wanted.get("chroma_url") or ""), bool(wanted.get("semantic_index", True)),
                  str(wanted.get("embedder") or self.config.embedder))
        if choice == self._adopted:
            return
        # Said at once: a request racing this one, with the same settings, does not start it again.
        self._adopted = choice
        url, enabled, embedder = choice
        self.log(f"index settings changed: chroma_url {url or '(embedded)'}, semantic_index {enabled}, embedder {embedder}")
        config = Config(self.config.data_dir, {**self.config.values, "chroma_url": url, "semantic_index": enabled,
                                               "embedder": embedder})
        if enabled:
            # Seconds of imports (numpy, onnxruntime, tokenizers) off the event loop, which keeps
            # answering meanwhile, from the index in use until the new one replaces it.
            await asyncio.to_thread(self._import, config)
            if self._adopted != choice:
                return  # a later request asked for other settings while these loaded
        # Only the model changed: the index in use answers until the new one holds every row.
        answering = self.index if (url, enabled) == (self.config.chroma_url or "", bool(self.config.semantic_index)) else None
        if self.indexer is not None:
            self.indexer.close(0.0)  # its thread ends after the job under way; answering must not wait for it
        self.indexer = None
        self.config = config
        self._start_index(answering)

    async def _switch(self) -> None:
        """Auto's switch of embedder, which the indexing thread found the store calls for now."""
        indexer = self.indexer
        self.log(f"embedder {indexer.switch_to.name} ({indexer.switch_to.reason}): its index is filled from SQLite")
        await asyncio.to_thread(self._import, self.config)
        if self.indexer is indexer:  # else the settings changed meanwhile (_adopt), and the store was judged again
            answering = self.index
            indexer.close(0.0)
            self._start_index(answering)

    @property
    def index(self) -> Any:
        return self.indexer.answering() if self.indexer is not None else None

    def _start_index(self, answering: Any = None) -> None:
        """Index with the embedder the store calls for (embedders.choose); `answering`, another
        embedder's index, serves searches until the new one holds every row."""
        self.indexer = None
        if not self.config.semantic_index:
            return
        from claude_mem.index.embedders import choose, embedder_named
        from claude_mem.index.semantic_index import Index
        from claude_mem.service.indexer import Indexer

        choice = choose(self.config, self.conn())
        if answering is None and choice.switched:  # switched while no service ran: MiniLM's index may exist
            answering = Index(self.config, embedder=embedder_named("minilm"))
        self.indexer = Indexer(self.config, Index(self.config, embedder=embedder_named(choice.name)), self.log, choice, answering)
        self.indexer.start()
        self.warming = self.pool.submit(self._warm_up)

    def _warm_up(self) -> None:
        """Load the embedding model now, so the first search (a hook's, on a budget) finds it warm."""
        with contextlib.suppress(Exception):
            self.indexer.index.embed_query("warm up")

    def _close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.indexer is not None and not self.indexer.close(3.0):
            self.log("indexing not finished; the next service catches up")

    # --- requests -------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with self.trim.busy():  # an MCP session's connection stays open: its first request ends here all the same
                if not _same_user(writer):
                    answer: dict[str, Any] = {"ok": False, "error": "refused: another user"}
                else:
                    answer = await self._answer(reader)
                hosted = answer.pop("mcp", None)
                writer.write(json.dumps(answer, ensure_ascii=False, default=str).encode() + b"\n")
                await writer.drain()
            if hosted is not None:  # from here on the connection carries one session's MCP messages
                await self.mcp_host.serve(reader, writer, hosted, lambda: setattr(self, "last_request", time.monotonic()))
        except (ConnectionError, OSError):
            pass  # the client gave up (a hook past its budget): nothing to tell it
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> dict[str, Any]:
        try:
            line = await asyncio.wait_for(reader.readuntil(b"\n"), READ_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            return self._error(f"request over {protocol.MAX_REQUEST} bytes")
        except asyncio.IncompleteReadError as exc:
            if len(exc.partial) > protocol.MAX_REQUEST:
                return self._error(f"request over {protocol.MAX_REQUEST} bytes")
            line = exc.partial
        except TimeoutError:
            return self._error("no request within the time allowed")
        try:
            op, args = protocol.parse_request(line)
        except ValueError as exc:
            return self._error(str(exc))
        handler = OPS.get(op)
        if handler is None or (op == "mcp" and self.mcp_host is None):
            return self._error(f"unknown op {op!r} (known: {', '.join(OPS)})")
        self.requests += 1
        self.last_request = time.monotonic()
        await self._adopt(args.get("settings"))
        try:
            result = await handler(self, args)
        except (ValueError, TypeError, KeyError) as exc:
            return self._error(f"{op}: {exc}")
        except Exception as exc:  # the service must outlive any one request
            if type(exc).__name__ == "IndexUnavailable":  # says what is wrong already (Chroma down, folder gone)
                return self._error(str(exc))
            self.log(f"error: {op} failed: {type(exc).__name__}: {exc}")
            return self._error(f"{op} failed: {type(exc).__name__}: {exc}")
        finally:
            self.last_request = time.monotonic()
        if op == "mcp":
            return {"ok": True, "result": result, "mcp": args}
        return {"ok": True, "result": result}

    def _error(self, message: str) -> dict[str, Any]:
        self.errors += 1
        return {"ok": False, "error": message}

    def conn(self) -> Any:
        """This thread's SQLite connection (searches run on a small pool)."""
        conn = getattr(self.local, "conn", None)
        if conn is None:
            from claude_mem.store.db import connect

            conn = self.local.conn = connect(self.config.db_path)
        return conn

    # --- ops ------------------------------------------------------------------------------------

    async def op_ping(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid(), "version": protocol.VERSION}

    async def op_status(self, args: dict[str, Any]) -> dict[str, Any]:
        status: dict[str, Any] = {
            "pid": os.getpid(), "uptime_s": round(time.time() - self.started, 1), "requests": self.requests,
            "errors": self.errors, "idle_s": self.idle_s, "socket": self.socket_path, "rss_bytes": _own_rss(), "trims": self.trim.trims,
        }
        if self.indexer is not None:
            status["index"] = self.indexer.state()
            status["embedder"] = self.indexer.embedder()
            status["index_lag"] = await asyncio.get_running_loop().run_in_executor(self.pool, self._lag)
        return status

    async def op_progress(self, args: dict[str, Any]) -> dict[str, Any]:
        """The indexing job under way, if any: cheap, for a command drawing its progress bar."""
        return {"job": self.indexer.state()["job"] if self.indexer is not None else None}

    def _lag(self) -> int:
        from claude_mem.store.overview import unindexed_rows

        return unindexed_rows(self.conn())

    async def op_index(self, args: dict[str, Any]) -> dict[str, Any]:
        """Rows a worker committed (new rows are found anyway, rewritten ones not); `wait_s`: worker/loop.py."""
        if self.indexer is None:
            return {"queued": False, "why": "the semantic index is off"}
        indexed = self.indexer.notify(*([int(i) for i in args.get(key) or []] for key in ("observations", "summaries", "prompts")))
        if not args.get("wait_s"):
            return {"queued": True}
        return {"queued": True, "indexed": await self.indexer.indexed_within(indexed, float(args["wait_s"]))}

    async def op_search(self, args: dict[str, Any]) -> dict[str, Any]:
        query, filters = protocol.decode_search(args)
        wait_s = float(args.get("wait_s") or 0)
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._search, query, filters, wait_s)

    def _search(self, query: str, filters: dict[str, Any], wait_s: float = 0.0) -> dict[str, Any]:
        from claude_mem.index.semantic_index import NOT_BUILT_NOTE, OFF_NOTE
        from claude_mem.recall.search import search

        index, note = self.index, None
        if index is None:
            note = OFF_NOTE
        elif not index.built and self.indexer is not None:
            self.indexer.wait_first_catch_up(wait_s)  # a fresh store: answered by meaning once it is indexed
        if index is not None and not index.built:
            index, note = None, NOT_BUILT_NOTE
        result = search(self.conn(), query, index=index, **filters)
        # A hit's fields hold no dataclass: a plain copy of them, not asdict's deep one (~20 us a hit).
        return {"hits": [dict(vars(hit)) for hit in result.hits], "mode": result.mode, "note": note or result.note,
                "embedder": index.embedder if index is not None else None}

    async def op_remote_record(self, args: dict[str, Any]) -> dict[str, Any]:
        """A teammate's row, from its documents on the shared server (see recall/teammates.py)."""
        kind, row_id, origin = args.get("kind"), args.get("id"), args.get("origin")
        if not isinstance(kind, str) or not isinstance(row_id, int) or not isinstance(origin, str):
            raise ValueError("kind (text), id (number) and origin (text) are required")
        if self.index is None or not self.index.url:
            raise ValueError("a teammate's memory is read from a shared Chroma server; this installation has none (setting chroma_url)")
        from claude_mem.recall import teammates

        def find() -> dict[str, Any] | None:
            try:
                return teammates.find_record(self.index, kind, row_id, origin)
            except LookupError as exc:
                raise ValueError(str(exc)) from None

        return {"record": await asyncio.get_running_loop().run_in_executor(self.pool, find)}

    async def op_reindex(self, args: dict[str, Any]) -> dict[str, Any]:
        """Rebuild the index from SQLite here, where indexing happens (a rebuild beside the
        service's own catch-ups would race them for the rows)."""
        if self.indexer is None:
            raise ValueError("the semantic index is off (setting semantic_index)")
        started = time.monotonic()
        counts = await asyncio.wrap_future(self.indexer.rebuild())
        return {**counts, "location": self.indexer.index.location, "seconds": round(time.monotonic() - started, 2),
                "resumed": self.indexer.index.resumed}

    async def op_mcp(self, args: dict[str, Any]) -> dict[str, Any]:
        """Turn this connection into one session's MCP server (mcp/shim.py asks; _connection serves it)."""
        await self.mcp_host.loaded()
        return {"pid": os.getpid()}

    async def op_stop(self, args: dict[str, Any]) -> dict[str, Any]:
        self.stop_asked = True
        assert self.stopping is not None
        self.stopping.set()
        return {"stopping": True}


OPS = {"ping": Service.op_ping, "status": Service.op_status, "index": Service.op_index, "search": Service.op_search,
       "reindex": Service.op_reindex, "remote_record": Service.op_remote_record, "progress": Service.op_progress,
       "stop": Service.op_stop, "mcp": Service.op_mcp}


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """The socket is 0600 already; on Linux the peer's uid is checked as well."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        return True
    return uid == os.getuid()


def _exit_while_loading(signum: int, frame: object) -> None:
    os._exit(0)


def main(config: Config, *, idle_s: float | None = None, mcp_host: Any = None) -> int:
    reason = Service(config, idle_s=idle_s, mcp_host=mcp_host).run()
    if reason.startswith("another service"):
        print(reason, file=sys.stderr)
    return 0


def _own_rss() -> int | None:
    from claude_mem.processes.census import own_rss  # psutil: not before the lock is taken

    return own_rss()
