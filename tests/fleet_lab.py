"""A small board lab for the fleet tests, made of the real parts: a labgrid coordinator and exporter on
loopback, fake boards as network namespaces (each with its own hostname in a UTS namespace) running
Debian's sshd with its own config, host key and PID file, places with tags, and a fake power switch
(labgrid's ExternalPowerDriver) that kills everything in a board's namespace and starts its sshd again.

Everything is started here and stopped by PID; the namespaces are deleted at the end."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers import netns_unavailable

BIN = Path(sys.executable).parent

# The lab's places, made in one Python process through labgrid's client session (the way boardlab's own
# fleet/coordinator.py talks to the coordinator): it waits for the exporter's groups, then adds each place,
# its match and its tags. Three labgrid-client runs per place (half a second of CPU each, nine to 24 of
# them at once) and one per poll took 6 s of a three-board lab's 10 s start on two cores.
PLACES_PY = r"""
import json, sys, time
from labgrid.remote.client import start_session
from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

address, exporter, places = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
session = start_session(address)
run = session.loop.run_until_complete
groups = {group for _, group, _ in places}
end = time.monotonic() + 30
while run(session.sync_with_coordinator()) and not groups <= set(session.resources.get(exporter, {})):
    if time.monotonic() > end:
        sys.exit(f"timed out after 30 s waiting for the exporter's groups {sorted(groups)}")
    time.sleep(0.1)
for name, group, tags in places:
    run(session.stub.AddPlace(pb.AddPlaceRequest(name=name)))
    run(session.stub.AddPlaceMatch(pb.AddPlaceMatchRequest(placename=name, pattern=f"{exporter}/{group}/*")))
    run(session.stub.SetPlaceTags(pb.SetPlaceTagsRequest(placename=name, tags=tags)))
run(session.sync_with_coordinator())
run(session.stop())
"""


def missing() -> str | None:
    """Why the lab cannot be stood up here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, sshd)"
    reason = netns_unavailable("ip")
    if reason:
        return reason
    if not os.path.exists("/usr/sbin/sshd"):
        return "needs Debian's sshd (apt-get install openssh-server)"
    for tool in ("ssh", "scp", "ssh-keygen", "unshare"):
        if not shutil.which(tool):
            return f"needs {tool}"
    if not (BIN / "labgrid-coordinator").exists():
        return "needs labgrid (the fleet extra: pip install 'boardlab[fleet]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LABS = itertools.count()


def wait_for(check, timeout_s: float, what: str, step_s: float = 0.2):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


class Lab:
    def __init__(
        self,
        base: Path,
        boards: int,
        tag: str,
        aliases: dict[str, str] | None = None,
        file_lists: dict[str, list[str]] | None = None,
    ):
        """`aliases`: more places (name -> board), each through an exporter group of its own that reaches
        that board's sshd, so a place may be named anything labgrid accepts. `file_lists`: boards that answer
        `fleet.sh files` with these lines (a hostile board), through an sshd ForceCommand."""
        self.base = base
        self.tag = tag  # the places' fleet=TAG: unique per test run
        self.aliases = dict(aliases or {})
        self.file_lists = dict(file_lists or {})
        uid = os.getpid() % 100000
        # the labs this process made: a lab shared by a module's tests (test_fleet's lab1) is up while
        # another test starts one of its own, so the names carry the lab's number too
        k = next(_LABS)
        self.boards = [f"board{i}" for i in range(1, boards + 1)]
        self.ns = {b: f"bl18-{uid}-{k}-{i}" for i, b in enumerate(self.boards, 1)}
        self.veth = {b: f"bl{i}v{k}x{uid}" for i, b in enumerate(self.boards, 1)}  # at most 15 characters
        # 198.18.0.0/15 is for test hosts (RFC 2544): a /24 per board that no link here uses yet
        used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        free = (n for n in range(100 + uid % 100, 356) if f" 198.18.{n % 256}." not in used)
        self.addr = {
            b: (f"198.18.{n % 256}.1", f"198.18.{n % 256}.2") for b, n in zip(self.boards, free, strict=False)
        }
        self.port = free_port()
        self.coordinator = f"127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.key = base / "id_ed25519"
        self.remote_root = Path(
            __import__("tempfile").mkdtemp(prefix="boardlab-fleet-test-", dir="/var/tmp")
        )  # no spaces: the board-side paths are split on whitespace by labgrid

    # ---- set up ----

    def start(self) -> Lab:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True)
        shutil.copy(f"{self.key}.pub", self.base / "authorized_keys")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        for b in self.boards:
            self._board(b)
        self._coordinator()
        return self

    def _board(self, b: str) -> None:
        ns, veth, (host, peer) = self.ns[b], self.veth[b], self.addr[b]
        d = self.base / b
        d.mkdir()
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "hostkey")], check=True)
        q = lambda p: '"' + str(p) + '"'  # noqa: E731 - sshd_config quotes paths with spaces
        (d / "sshd_config").write_text(
            f"ListenAddress {peer}\nPort 22\nHostKey {q(d / 'hostkey')}\n"
            f"AuthorizedKeysFile {q(self.base / 'authorized_keys')}\nPidFile {q(d / 'sshd.pid')}\n"
            "StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
            + (f"ForceCommand sh {q(self._hostile(b))}\n" if b in self.file_lists else "")
        )
        for cmd in (
            ["ip", "netns", "add", ns],
            ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns],
            ["ip", "addr", "add", f"{host}/30", "dev", veth],
            ["ip", "link", "set", veth, "up"],
            ["ip", "-n", ns, "addr", "add", f"{peer}/30", "dev", "eth0"],
            ["ip", "-n", ns, "link", "set", "eth0", "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
        ):
            subprocess.run(cmd, check=True, capture_output=True)
        # the board's own home for root: this machine's dotfiles (a shell init that runs tools at every
        # login) are not the board's
        (d / "home").mkdir(mode=0o700)
        home = pwd.getpwnam("root").pw_dir
        power = d / "power.sh"  # the fake power switch: "off" kills everything on the board
        power.write_text(
            "#!/bin/sh\n"
            f"off() {{ ip netns pids {ns} | xargs -r kill -KILL; "
            f"rm -f {shlex.quote(str(d / 'sshd.pid'))}; }}\n"
            f"on() {{ ip netns exec {ns} unshare --uts --mount sh -c "
            f'\'hostname {b}-{self.tag} && mount --bind "$3" "$4" && exec /usr/sbin/sshd -f "$1" -E "$2"\' '
            f"sh {shlex.quote(str(d / 'sshd_config'))} {shlex.quote(str(d / 'sshd.log'))} "
            f"{shlex.quote(str(d / 'home'))} {shlex.quote(home)}; }}\n"
            "case $1 in off) off ;; on) on ;; cycle) off; sleep 1; on ;; esac\n"
        )
        self.power(b, "on")

    def _hostile(self, b: str) -> Path:
        """The board's forced command: its own answer to `fleet.sh files`, every other command (and scp's
        sftp subsystem, whose command sshd passes the same way) run as asked."""
        script = self.base / b / "forced.sh"
        lines = " ".join(shlex.quote(line) for line in self.file_lists[b])
        script.write_text(
            "case $SSH_ORIGINAL_COMMAND in\n"
            f"  *\"/fleet.sh files\") printf '%s\\n' {lines} ;;\n"
            '  *) exec sh -c "$SSH_ORIGINAL_COMMAND" ;;\n'
            "esac\n"
        )
        return script

    def power(self, b: str, verb: str) -> None:
        subprocess.run(["sh", str(self.base / b / "power.sh"), verb], check=True)
        if verb in ("on", "cycle"):
            wait_for(lambda: (self.base / b / "sshd.pid").exists(), 10, f"{b}'s sshd")

    def power_cmd(self, b: str, verb: str) -> str:
        return f"sh {shlex.quote(str(self.base / b / 'power.sh'))} {verb}"

    def _coordinator(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cdir = self.base / "coordinator"
        cdir.mkdir()
        self.procs.append(
            subprocess.Popen(
                [str(BIN / "labgrid-coordinator"), "-l", self.coordinator],
                cwd=cdir,
                stdout=open(cdir / "log", "wb"),
                stderr=subprocess.STDOUT,
                env=env,
            )
        )
        exporter = self.base / "exporter.yaml"
        groups = {**{b: b for b in self.boards}, **self._alias_groups()}
        exporter.write_text(
            "".join(
                f"{group}:\n  NetworkService:\n    address: {self.addr[b][1]}\n    username: root\n"
                for group, b in groups.items()
            )
        )
        wait_for(lambda: self._client("places", check=False).returncode == 0, 30, "the coordinator")
        self.procs.append(
            subprocess.Popen(
                [
                    str(BIN / "labgrid-exporter"),
                    "-c",
                    self.coordinator,
                    "-n",
                    f"exp{self.tag}",
                    str(exporter),
                ],
                cwd=self.base,
                stdout=open(self.base / "exporter.log", "wb"),
                stderr=subprocess.STDOUT,
                env=env,
            )
        )
        places = [(b, b) for b in self.boards] + [
            (name, group) for (group, _), name in zip(self._alias_groups().items(), self.aliases, strict=True)
        ]
        tags = {"fleet": self.tag, "arch": "x86_64"}
        made = subprocess.run(
            [sys.executable, "-c", PLACES_PY, self.coordinator, f"exp{self.tag}",
             json.dumps([(name, group, tags) for name, group in places])],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        if made.returncode != 0:
            raise RuntimeError(f"the lab's places were not made: {made.stderr[-2000:]}")

    def _alias_groups(self) -> dict[str, str]:
        """exporter group -> board, one per alias place, in the order of `aliases`."""
        return {f"alias{i}": b for i, b in enumerate(self.aliases.values(), 1)}

    def _client(self, *args, check=True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "labgrid-client"), "-x", self.coordinator, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def lg_env(self, path: Path) -> Path:
        """A labgrid environment giving every place its fake power switch (ExternalPowerDriver)."""
        import yaml

        doc = {
            "targets": {
                b: {
                    "drivers": [
                        {
                            "ExternalPowerDriver": {
                                "cmd_on": self.power_cmd(b, "on"),
                                "cmd_off": self.power_cmd(b, "off"),
                                "cmd_cycle": self.power_cmd(b, "cycle"),
                            }
                        }
                    ]
                }
                for b in self.boards
            }
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    # ---- looking at the boards ----

    def ns_pids(self, b: str) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.ns[b]], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def comm(self, pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            return ""

    def hang(self, b: str) -> int:
        """A hung board: every sshd of it killed (the listener and the sessions), everything else frozen
        (SIGSTOP) where it stands, its campaign in the middle of a run; only a power cycle ends it."""
        pids = self.ns_pids(b)
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL if self.comm(p) == "sshd" else signal.SIGSTOP)
        return sum(self.comm(p) != "sshd" for p in pids)

    def places_acquired(self) -> dict[str, bool]:
        out = self._client("who", check=False).stdout
        return {b: b in out for b in self.boards}

    # ---- tear down ----

    def stop(self) -> None:
        for b in self.boards:
            with contextlib.suppress(Exception):
                subprocess.run(["sh", str(self.base / b / "power.sh"), "off"], timeout=30)
            subprocess.run(["ip", "link", "del", self.veth[b]], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns[b]], capture_output=True)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.remote_root, ignore_errors=True)
