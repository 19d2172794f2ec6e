"""Framed messages between the judge and the candidate process over a socket pair.

Direction matters for trust. The judge sends commands as pickles (the candidate unpickles data from
a trusted sender, and CUDA tensors travel as IPC handles). The candidate answers only with JSON and,
on the CPU, output tensors as safetensors bytes: the judge never unpickles anything the candidate
wrote, so no answer can run code in the judge.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!cQ")
KIND_PICKLE = b"P"
KIND_JSON = b"J"
KIND_BYTES = b"B"
MAX_ANSWER_BYTES = 1 << 31
"""Answers above 2 GiB are refused unless the judge expects larger outputs (``recv_frame``'s limit)."""
MAX_COMMAND_BYTES = 1 << 40
"""Commands come from the trusted judge: their size is the workload's (CPU inputs above 2 GiB travel too)."""


class ChannelClosed(EOFError):
    """The other side closed the socket (it exited or crashed)."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other process closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def send_frame(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(kind, len(payload)) + payload)


def recv_frame(sock: socket.socket, limit: int = MAX_ANSWER_BYTES) -> tuple[bytes, bytes]:
    kind, size = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > limit:
        raise ValueError(f"frame of {size} bytes exceeds the {limit}-byte limit")
    return kind, _recv_exact(sock, size)


def send_json(sock: socket.socket, obj: dict[str, Any]) -> None:
    send_frame(sock, KIND_JSON, json.dumps(obj, allow_nan=True).encode())


def recv_json(sock: socket.socket) -> dict[str, Any]:
    """Receive one JSON answer; anything else from the candidate is a protocol violation."""
    kind, payload = recv_frame(sock)
    if kind != KIND_JSON:
        raise ValueError(f"expected a JSON frame, got kind {kind!r}")
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    return obj


def send_pickle(sock: socket.socket, obj: Any, *, cuda_ipc: bool) -> None:
    """Judge side. With ``cuda_ipc`` CUDA tensors travel as IPC handles (torch's reductions), so the
    candidate writes outputs straight into the judge's buffers; otherwise tensors travel by value."""
    import io
    import pickle

    if cuda_ipc:
        from multiprocessing.reduction import ForkingPickler

        import torch.multiprocessing  # noqa: F401  (registers torch's tensor reductions with ForkingPickler)

        buf = io.BytesIO()
        ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
        payload = buf.getvalue()
    else:
        payload = pickle.dumps(_bytes_for_tensors(obj), protocol=pickle.HIGHEST_PROTOCOL)
    send_frame(sock, KIND_PICKLE, payload)


class TensorBytes:
    """A CPU tensor sent by value as raw bytes: torch's own pickling rejects 1-byte float dtypes (fp8)."""

    def __init__(self, tensor: Any) -> None:
        import torch

        contiguous = tensor.detach().contiguous()
        self.dtype = str(contiguous.dtype).removeprefix("torch.")
        self.shape = tuple(contiguous.shape)
        self.data = contiguous.view(torch.uint8).numpy().tobytes() if contiguous.numel() else b""

    def rebuild(self) -> Any:
        import torch

        dtype = getattr(torch, self.dtype)
        raw = torch.frombuffer(bytearray(self.data), dtype=torch.uint8) if self.data else torch.empty(0, dtype=torch.uint8)
        return raw.view(dtype).reshape(self.shape)


def _bytes_for_tensors(obj: Any) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return TensorBytes(obj)
    if isinstance(obj, dict):
        return {k: _bytes_for_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_bytes_for_tensors(v) for v in obj)
    return obj


def _tensors_from_bytes(obj: Any) -> Any:
    if isinstance(obj, TensorBytes):
        return obj.rebuild()
    if isinstance(obj, dict):
        return {k: _tensors_from_bytes(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_tensors_from_bytes(v) for v in obj)
    return obj


def recv_pickle(sock: socket.socket) -> Any:
    """Candidate side only: the sender is the trusted judge."""
    import pickle

    kind, payload = recv_frame(sock, MAX_COMMAND_BYTES)
    if kind != KIND_PICKLE:
        raise ValueError(f"expected a pickle frame, got kind {kind!r}")
    return _tensors_from_bytes(pickle.loads(payload))
