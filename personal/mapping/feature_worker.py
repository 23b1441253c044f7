"""Frame features in a child process, applied to the map in frame order.

An image encoder (the learned ``lit`` crop tower, CLIP, SigLIP) costs most of a mapping step. A
:class:`FeatureWorker` runs it in a child process: the caller integrates a frame's geometry at
once (the explore loop decides on the occupancy) and hands the frame over; the child encodes frames
one after another while the next frame is rendered and mapped, and their features are applied to
the feature map **in the order the frames were submitted** — so the maps are exactly those of
``MapBuilder.integrate`` frame by frame (a fixed pipeline, not a race; ``test/test_feature_worker.py``).

The child imports torch and loads the model while the parent already maps geometry: frames wait in
the queue until it is ready. ``wait_idle`` blocks until every submitted frame is applied (call it
before saving). ``reset`` discards the features of frames submitted before it (a new scene).
ROS-free; the mapping node uses it with ``feature_process:=true``.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue
import threading
import time
from collections import deque
from typing import Any, Callable

import numpy as np

from personal.mapping.projection import FramePoints

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _serve(conn, encoder: str, model_path: str, threads: int) -> None:
    """Child process: load the encoder, then answer ``(seq, depth, rgb, ids, fp)`` with ``(seq, out)``
    (``out`` = the encoder's ``frame_features`` output) until the pipe closes."""
    import os
    import signal

    # Ctrl-C goes to the whole process group: the parent ends this process (it closes the pipe)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # and it dies with its parent, whatever kills that (Linux)
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    try:
        from personal.models.base import make_encoder

        enc = make_encoder(encoder, model_path=model_path)
        conn.send(("ready", enc.name, int(enc.dim)))
    except Exception as exc:  # missing weights, unknown name: the parent maps geometry only
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            seq, depth, rgb, ids, fp = conn.recv()
        except (EOFError, OSError):  # the parent is gone or closed the pipe
            return
        try:
            out = enc.frame_features(depth, rgb, ids, fp)
            conn.send((seq, out, ""))
        except Exception as exc:  # one bad frame: its features are lost, the worker stays
            conn.send((seq, None, f"{type(exc).__name__}: {exc}"))


class FeatureWorker:
    """Encode frames in a child process; ``apply(fp, out)`` runs in submission order on a reader
    thread (hold ``lock`` around anything else that touches the feature map)."""

    def __init__(self, encoder: str, model_path: str, apply: Callable[[FramePoints, Any], None],
                 on_ready: Callable[[str, int], None], log: Callable[[str], None], threads: int = 1) -> None:
        self.apply, self.on_ready, self.log = apply, on_ready, log
        self.lock = threading.RLock()
        self.name, self.dim, self.error = "", 0, ""
        self._idle = threading.Condition(self.lock)
        self._waiting: deque[tuple[int, int, FramePoints]] = deque()  # (seq, generation, fp) sent, not applied
        self._generation = 0
        self._seq = 0
        self._out: queue.Queue = queue.Queue()
        self.alive = True
        ctx = mp.get_context("spawn")  # never fork a process that runs DDS threads
        self._conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, encoder, model_path, threads), daemon=True,
                                name=f"features-{encoder}")
        # the child inherits the environment: `threads` threads for BLAS / OpenMP there (set before it
        # imports numpy; on 2 cores shared with the renderer more threads only wait on each other)
        saved = {v: os.environ.get(v) for v in THREAD_VARS}
        for v in THREAD_VARS:
            os.environ.setdefault(v, str(threads))
        try:
            self.proc.start()
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        child.close()
        self.started = time.monotonic()
        threading.Thread(target=self._send_loop, daemon=True, name="features-send").start()
        threading.Thread(target=self._read_loop, daemon=True, name="features-read").start()

    # -- caller side -----------------------------------------------------------------
    def submit(self, depth: np.ndarray, rgb: np.ndarray | None, ids: np.ndarray | None, fp: FramePoints) -> bool:
        """Queue one frame (its geometry already integrated); False when the worker is gone."""
        with self.lock:
            if not self.alive:
                return False
            self._seq += 1
            self._waiting.append((self._seq, self._generation, fp))
            seq = self._seq
        # the child needs the pixels, intrinsics and pose of the points, not the points themselves
        light = dataclasses.replace(fp, points=np.zeros((0, 3), np.float32))
        self._out.put((seq, depth, rgb, ids, light))  # a thread sends: a full pipe never blocks the caller
        return True

    def reset(self) -> None:
        """Features of frames submitted so far are not applied (the maps were reset)."""
        with self.lock:
            self._generation += 1

    def pending(self) -> int:
        with self.lock:
            return len(self._waiting)

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted frame is applied (or the worker died); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._waiting and self.alive:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        self._out.put(None)
        self.proc.join(timeout=2.0)
        if self.proc.is_alive():
            self.proc.terminate()

    # -- threads -----------------------------------------------------------------------
    def _send_loop(self) -> None:
        while True:
            item = self._out.get()
            if item is None:
                self._conn.close()
                return
            try:
                self._conn.send(item)
            except (OSError, ValueError):  # the child died; the reader reports it
                return

    def _read_loop(self) -> None:
        try:
            first = self._conn.recv()
        except (EOFError, OSError):
            first = ("error", "the feature process exited while loading the encoder")
        if first[0] == "ready":
            with self.lock:
                self.name, self.dim = first[1], first[2]
                self.on_ready(self.name, self.dim)
            self.log(f"feature process ready: {self.name} ({self.dim}-d) after {time.monotonic() - self.started:.1f} s")
        else:
            self._die(f"feature process failed to load the encoder: {first[1]}")
            return
        while True:
            try:
                seq, out, err = self._conn.recv()
            except (EOFError, OSError):
                if self.pending():
                    self._die(f"the feature process exited: the features of {self.pending()} frames are lost")
                else:  # at shutdown
                    self._die("")
                return
            with self._idle:
                while self._waiting and self._waiting[0][0] < seq:  # never answered (cannot happen: one pipe, in order)
                    self._waiting.popleft()
                if not self._waiting:
                    continue
                _, generation, fp = self._waiting.popleft()
                if generation == self._generation:
                    if err:
                        self.log(f"feature integration failed: {err}")
                    elif out is not None:
                        try:
                            self.apply(fp, out)
                        except Exception as exc:  # the frame's geometry stays; its features are lost
                            self.log(f"feature integration failed: {exc}")
                if not self._waiting:
                    self._idle.notify_all()

    def _die(self, why: str) -> None:
        with self._idle:
            self.alive, self.error = False, why
            self._waiting.clear()
            self._idle.notify_all()
        if why:
            self.log(why)
