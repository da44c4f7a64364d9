"""Answer phone calls: the SIP endpoint (UDP and TCP) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from telephony.sip.server import SipServer, parse_port_range
from voiceapp.inference.runtime import get_inference, stop_embedded


class Command(BaseCommand):
    help = "Answer SIP calls to the organizations' phone numbers (docs/TELEPHONY.md)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=None, help="address to bind (SIP_HOST)")
        parser.add_argument("--port", type=int, default=None, help="SIP port (SIP_PORT)")
        parser.add_argument(
            "--advertise",
            default=None,
            help="address written in Contact and SDP (SIP_ADVERTISED_HOST)",
        )
        parser.add_argument("--rtp-ports", default=None, help="RTP port range, e.g. 20000-20999")
        parser.add_argument("--no-tcp", action="store_true", help="listen on UDP only")
        parser.add_argument(
            "--no-dial", action="store_true", help="do not place queued outbound calls"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            rtp_ports = parse_port_range(options["rtp_ports"] or settings.SIP_RTP_PORTS)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        server = SipServer(
            host=options["host"],
            port=options["port"],
            advertised_host=options["advertise"],
            rtp_ports=rtp_ports,
            tcp=not options["no_tcp"],
        )

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            if settings.INFERENCE_EMBEDDED:  # load the models before taking calls
                await (await get_inference()).close()
            try:
                await server.start()
            except OSError as exc:
                raise CommandError(f"cannot listen on {server.host}:{server.port}: {exc}") from exc
            if not options["no_dial"]:
                server.start_dialing()
            self.stdout.write(f"SIP READY {server.host}:{server.port}", ending="\n")
            self.stdout.flush()
            await stop.wait()
            await server.stop()
            await stop_embedded()

        asyncio.run(serve())
