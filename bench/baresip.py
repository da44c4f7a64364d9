"""baresip, a SIP user agent nobody here wrote, as a caller in benchmarks and tests.

It dials from a config directory of its own, plays a WAV into the call
(`aufile`), records what it hears (`sndfile` writes `dump-...-dec.wav`) and
hangs up when the WAV ends. Digits typed on its standard input while a call is
up go out as RFC 4733 telephone-events."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from voiceapp.engine.audio import float_to_pcm16, read_wav, resample, write_wav

CONFIG = """\
poll_method\t\tepoll
sip_listen\t\t127.0.0.1:{port}
audio_player\t\taufile,{workdir}/unused.wav
audio_source\t\taufile,{source}
audio_alert\t\taufile,/dev/null
module_path\t\t/usr/lib/baresip/modules
module\t\t\tstdio.so
{codecs}module\t\t\taufile.so
module\t\t\tsndfile.so
module_tmp\t\tuuid.so
module_tmp\t\taccount.so
module_app\t\tmenu.so
snd_path\t\t{workdir}
"""


_GIVEN: set[int] = set()


def free_sip_port() -> int:
    """A port for a baresip to listen on: it binds UDP and TCP on it and TLS on the
    next one, so both must be free (and not given to another baresip of this process,
    which may not have bound them yet)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(40000, 60000, 2)
        if {port, port + 1} & _GIVEN:
            continue
        kinds = (socket.SOCK_STREAM, socket.SOCK_DGRAM)
        if all(_free(port + i, kind) for i in (0, 1) for kind in kinds):
            _GIVEN.update({port, port + 1})
            return port
    raise RuntimeError("no free pair of ports for baresip")


def _free(port: int, kind: int) -> bool:
    with socket.socket(socket.AF_INET, kind) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class CallResult:
    output: str
    established_at: float | None  # monotonic time the call was answered
    ended_at: float | None  # when baresip reported the call over
    digits_sent: list[tuple[float, str]] = field(default_factory=list)
    heard_path: Path | None = None

    @property
    def established(self) -> bool:
        return self.established_at is not None

    def heard(self) -> tuple[np.ndarray, int]:
        """What the caller heard, float mono, and its rate."""
        assert self.heard_path is not None, self.output[-2000:]
        return read_wav(self.heard_path)


class Baresip:
    def __init__(
        self, workdir: Path, *, caller: str, port: int, codecs: tuple[str, ...] = ("g711",)
    ) -> None:
        """`codecs`: baresip's codec modules, offered in this order (g722, g711)."""
        self.workdir = workdir
        self.caller = caller
        self.port = port
        self.codecs = codecs
        workdir.mkdir(parents=True, exist_ok=True)

    def _configure(self, source: Path, *, auto_answer: bool = False) -> None:
        modules = "".join(f"module\t\t\t{name}.so\n" for name in self.codecs)
        text = CONFIG.format(port=self.port, workdir=self.workdir, source=source, codecs=modules)
        (self.workdir / "config").write_text(text)
        answer = ";answermode=auto" if auto_answer else ""
        (self.workdir / "accounts").write_text(f"<sip:{self.caller}@127.0.0.1>;regint=0{answer}\n")
        for old in self.workdir.glob("dump-*.wav"):
            old.unlink()

    async def call(
        self,
        uri: str,
        source: Path,
        *,
        digits: list[tuple[float, str]] | None = None,
        timeout_s: float = 90,
    ) -> CallResult:
        """Dial `uri`, play `source` (hang up at its end), type each of `digits`
        (seconds after the answer, keys) and return what happened."""
        self._configure(source)
        proc = await asyncio.create_subprocess_exec(
            "baresip",
            "-f",
            str(self.workdir),
            "-e",
            f"/dial {uri}",
            "-t",
            str(int(timeout_s)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert proc.stdout is not None and proc.stdin is not None
        output = ""
        result = CallResult("", None, None)
        pending = sorted(digits or [])
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                try:
                    chunk = await asyncio.wait_for(proc.stdout.read(4096), 0.05)
                except TimeoutError:
                    chunk = None
                if chunk == b"":  # baresip exited
                    break
                if chunk:
                    output += chunk.decode(errors="replace").replace("\r", "\n")
                now = time.monotonic()
                if result.established_at is None and "Call established" in output:
                    result.established_at = now
                if result.established_at is not None:
                    while pending and now - result.established_at >= pending[0][0]:
                        at, keys = pending.pop(0)
                        for key in keys:
                            proc.stdin.write(key.encode())
                            await proc.stdin.drain()
                            await asyncio.sleep(0.25)
                        result.digits_sent.append((at, keys))
                if result.ended_at is None and (
                    "terminated" in output or "Call failed" in output or "closed:" in output
                ):
                    result.ended_at = now
                    await asyncio.sleep(0.5)  # let sndfile close its files
                    break
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
        result.output = output
        # the first call's (a transfer makes a second call, with a later dump)
        dumps = sorted(self.workdir.glob("dump-*-dec.wav"))
        result.heard_path = dumps[0] if dumps else None
        return result


class Listener:
    """A baresip that answers the calls it gets (at `uri`) and plays `source`;
    `output` is what it printed so far."""

    def __init__(self, phone: Baresip, source: Path) -> None:
        self.phone = phone
        self.source = source
        self.output = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def uri(self) -> str:
        return f"sip:{self.phone.caller}@127.0.0.1:{self.phone.port}"

    async def __aenter__(self) -> Listener:
        self.phone._configure(self.source, auto_answer=True)
        self._proc = await asyncio.create_subprocess_exec(
            "baresip",
            "-f",
            str(self.phone.workdir),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self._reader = asyncio.ensure_future(self._read())
        for _ in range(100):  # until it listens
            if "baresip is ready" in self.output:
                break
            await asyncio.sleep(0.05)
        return self

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while chunk := await self._proc.stdout.read(4096):
            self.output += chunk.decode(errors="replace").replace("\r", "\n")

    async def __aexit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), 5)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 2)


def call_wav(
    path: Path, parts: list[np.ndarray], rate: int, *, out_rate: int = 8000, channels: int = 1
) -> Path:
    """Float mono pieces at `rate` joined into a 16-bit WAV at `out_rate`, with ±1
    LSB of dither. baresip plays a file only at the codec's rate and channels: 8 kHz
    mono for G.711, 16 kHz for G.722, 48 kHz stereo for Opus."""
    samples = resample(np.concatenate(parts), rate, out_rate)
    lsb = 1.0 / 32768.0
    samples = samples + np.random.default_rng(7).integers(-1, 2, len(samples)) * lsb
    if channels == 1:
        write_wav(path, samples.astype(np.float32), out_rate)
        return path
    with wave.open(str(path), "wb") as wav:  # the same samples on every channel
        wav.setnchannels(channels)
        wav.setsampwidth(2)
        wav.setframerate(out_rate)
        pcm = np.frombuffer(float_to_pcm16(samples.astype(np.float32)), np.int16)
        wav.writeframes(np.repeat(pcm, channels).tobytes())
    return path
