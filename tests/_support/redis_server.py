"""A real ``redis-server`` on a free loopback port, for the store tests (never a fake)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

REDIS_SERVER = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def redis_client(port: int, **options: Any) -> redis.Redis:
    """A client of the server on ``port`` failing fast (no retries, short timeouts), so the
    fault tests stay quick; ``options`` override. Plain values only: worker processes call it."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    settings: dict[str, Any] = {"socket_timeout": 2.0, "socket_connect_timeout": 1.0,
                                "retry": Retry(NoBackoff(), 0)}
    settings.update(options)
    return redis.Redis(host="127.0.0.1", port=port, **settings)


class RedisServer:
    """Start with ``start()``, make clients with ``client()``, stop with ``stop()`` (or kill)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, port: int | None = None) -> RedisServer:
        """Start on ``port`` (a server back where a stopped one was), else on a free port."""
        assert REDIS_SERVER is not None
        for _attempt in range(3):  # a free port can be taken between probe and bind
            self.port = port or _free_port()
            self._process = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no"],
                cwd=self.directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._answers_ping(deadline=time.monotonic() + 10):
                return self
            self.stop()
        raise RuntimeError("redis-server did not answer PING")

    def client(self, **options: Any) -> redis.Redis:
        """A client of this server failing fast (see ``redis_client``)."""
        return redis_client(self.port, **options)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait(timeout=5)

    def _answers_ping(self, deadline: float) -> bool:
        import redis

        probe = self.client()
        try:
            while time.monotonic() < deadline:
                if self._process is None or self._process.poll() is not None:
                    return False
                try:
                    if probe.ping():
                        return True
                except redis.RedisError:
                    time.sleep(0.02)
            return False
        finally:
            probe.close()
