"""The labgrid coordinator as boardlab uses it: list places by tags, reserve one place (a reservation whose
filter is the tags plus the place's name), acquire and release it. labgrid is imported here only, lazily:
`boardlab --help` stays instant and a machine without the `fleet` extra is told what to install."""

from __future__ import annotations

import re
import time

from boardlab.errors import InputError, MeasurementError

TAG_KEY = re.compile(r"[a-z][a-z0-9_]+")  # labgrid's own key rule
TAG_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def need_labgrid() -> None:
    try:
        import labgrid  # noqa: F401
    except ImportError:
        raise MeasurementError(
            "unsupported: labgrid is not installed; install boardlab with the fleet extra "
            "(pip install 'boardlab[fleet]', or `make install` on x86-64/aarch64)"
        ) from None


def parse_tags(pairs: list[str]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not TAG_KEY.fullmatch(key) or not TAG_VALUE.fullmatch(value):
            raise InputError(
                f"--places {pair!r}: expected TAG=VALUE (a tag such as arch=armhf or soc=am335x; "
                "lower-case key of 2+ letters, digits, _)"
            )
        tags[key] = value
    return tags


def parse_address(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--coordinator {text!r}: expected HOST:PORT, e.g. labhost:20408")
    return text


class Coordinator:
    """One gRPC session to the coordinator, in this process (never shared across processes or threads)."""

    def __init__(self, address: str):
        need_labgrid()
        from labgrid.remote.client import start_session

        self.address = address
        try:
            self.session = start_session(address)
        except Exception as exc:  # noqa: BLE001 - gRPC and connection errors alike
            raise MeasurementError(f"coordinator {address}: cannot connect ({exc})") from None
        self.loop = self.session.loop

    def _call(self, coro):
        import grpc

        try:
            return self.loop.run_until_complete(coro)
        except grpc.aio.AioRpcError as exc:
            raise MeasurementError(f"coordinator {self.address}: {exc.details()}") from None

    def places(self, tags: dict[str, str]) -> dict[str, dict[str, str]]:
        """name -> tags of every place carrying all `tags`."""
        self._call(self.session.sync_with_coordinator())
        return {
            name: dict(place.tags)
            for name, place in sorted(self.session.places.items())
            if all(place.tags.get(k) == v for k, v in tags.items())
        }

    def reserve(self, place: str, tags: dict[str, str], timeout_s: float, should_stop) -> str:
        """A reservation for exactly this place; waits (polling, which keeps it alive) until allocated."""
        from labgrid.remote.common import Reservation, ReservationState
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        fltr = pb.Reservation.Filter(filter={**tags, "name": place})
        resp = self._call(
            self.session.stub.CreateReservation(pb.CreateReservationRequest(filters={"main": fltr}))
        )
        token = resp.reservation.token
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                reply = self._call(self.session.stub.PollReservation(pb.PollReservationRequest(token=token)))
                res = Reservation.from_pb2(reply.reservation)
                if res.state in (ReservationState.allocated, ReservationState.acquired):
                    return token
                if res.state is not ReservationState.waiting:
                    raise MeasurementError(f"place {place}: reservation {res.state.name}")
                if time.monotonic() > deadline:
                    raise MeasurementError(
                        f"place {place}: not free after {timeout_s:g} s (held by someone else); "
                        "see `labgrid-client who`"
                    )
                should_stop()
                time.sleep(1.0)
        except BaseException:  # a stop while waiting, too: the reservation does not outlive its worker
            try:
                self.cancel(token)
            except Exception:  # noqa: BLE001 - the coordinator expires it anyway
                pass
            raise

    def cancel(self, token: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._call(self.session.stub.CancelReservation(pb.CancelReservationRequest(token=token)))

    def acquire(self, place: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._call(self.session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=place)))
        self._call(self.session.sync_with_coordinator())

    def release(self, place: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._call(self.session.stub.ReleasePlace(pb.ReleasePlaceRequest(placename=place)))
        self._call(self.session.sync_with_coordinator())

    def resource_classes(self, place: str) -> list[str]:
        return sorted({cls for (_, cls) in self.session.get_target_resources(self.session.places[place])})

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.session.stop())
            self.loop.run_until_complete(self.session.close())
        except Exception:  # noqa: BLE001 - closing a session the coordinator already dropped
            pass
