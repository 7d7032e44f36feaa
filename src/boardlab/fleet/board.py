"""What runs on the board: one POSIX-sh script, shipped with every attempt (labgrid's SSHDriver.run splits its
command on whitespace, so the worker only ever runs `sh DIR/fleet.sh VERB ARG`).

Everything of a place lives in its directory (bundle install, plan, results, logs, restore journal), so a
power cycle loses nothing the campaign committed, and a re-run resumes it. Polling is `sh` + `tail`: no
Python process is started on the board while it measures.
"""

from __future__ import annotations

import re

SCRIPT_NAME = "fleet.sh"

BOARD_SH = r"""#!/bin/sh
# boardlab fleet, on the board (written by `boardlab fleet run`; docs/fleet.md). Verbs:
#   installed SHA256   exit 0 when this bundle is installed here
#   install SHA256     install bundle.tar.gz (beside this script) into ./venv, ./bin
#   start              start the campaign detached (setsid nohup), unless it is running
#   poll               "done RC" | "running LAST-PROGRESS-LINE" | "gone" (no campaign, none finished)
#   stop [SECONDS]     SIGTERM the campaign (it reverts its conditions), SIGKILL + `boardlab restore` after
#   files              the result files present (results.db, results.db-wal)
set -u
here=$(cd "$(dirname "$0")" && pwd)
export BOARDLAB_STATE_DIR="$here/state"   # this place's restore journal
bl="$here/venv/bin/boardlab"
running() {
  [ -e "$here/done" ] && return 1
  pid=$(cat "$here/boardlab.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && grep -q boardlab "/proc/$pid/cmdline" 2>/dev/null
}
# The `campaign` sh itself: it outlives boardlab until `done` is written. Between boardlab's exit (a zombie,
# its cmdline empty) and that write, only this says the campaign has not gone (a loaded board widens it).
wrapping() {
  [ -e "$here/done" ] && return 1
  cpid=$(cat "$here/campaign.pid" 2>/dev/null) || return 1
  [ -n "$cpid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$cpid/cmdline" | grep -q "fleet.sh campaign"
}
case ${1:-} in
installed)
  [ -x "$bl" ] && [ "$(cat "$here/bundle.sha256" 2>/dev/null)" = "${2:?}" ] ;;
install)
  rm -rf "$here/unpacked" "$here/venv" "$here/bin" "$here/bundle.sha256"
  mkdir -p "$here/unpacked"
  tar xzf "$here/bundle.tar.gz" -C "$here/unpacked" || exit 1
  if ! sh "$here"/unpacked/*/install.sh --prefix "$here/venv" --bin "$here/bin" >"$here/install.log" 2>&1
  then
    tail -n 5 "$here/install.log" >&2; exit 1
  fi
  rm -rf "$here/unpacked" "$here/bundle.tar.gz"
  echo "${2:?}" > "$here/bundle.sha256" ;;
start)
  if running || wrapping; then echo running; exit 0; fi
  rm -f "$here/done" "$here/boardlab.pid" "$here/campaign.pid"
  setsid nohup sh "$here/fleet.sh" campaign </dev/null >/dev/null 2>&1 &
  i=0
  while [ ! -s "$here/boardlab.pid" ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
  [ -s "$here/boardlab.pid" ] && echo started ;;
campaign)
  echo $$ > "$here/campaign.pid"
  # the user's --label, from a file: a command line sent over labgrid's SSH is split on whitespace
  if [ -s "$here/label.txt" ]; then set -- "--label=$(cat "$here/label.txt")"; else set --; fi
  # more arguments (the commit measured), one a line, each checked by boardlab before it was written
  if [ -s "$here/run-args.txt" ]; then
    while IFS= read -r a; do set -- "$@" "$a"; done < "$here/run-args.txt"
  fi
  "$bl" run "$here/plan.toml" --db "$here/results.db" --json "$@" >"$here/run.json" 2>"$here/run.log" &
  echo $! > "$here/boardlab.pid"
  wait $!
  echo $? > "$here/done.tmp" && mv "$here/done.tmp" "$here/done" ;;
poll)
  # liveness first (both say no once done exists), done after: the campaign sh writes done before it exits,
  # so a campaign that finished between the looks is found done, never gone
  if running || wrapping; then echo "running $(tail -n 1 "$here/run.log" 2>/dev/null | tr -d '\r')"
  elif [ -e "$here/done" ]; then echo "done $(cat "$here/done")"
  else echo gone; fi ;;
stop)
  if running; then
    kill -TERM "$pid"
    i=0
    while [ ! -e "$here/done" ] && [ $i -lt "${2:-30}" ]; do sleep 1; i=$((i + 1)); done
    if [ ! -e "$here/done" ]; then kill -KILL "$pid" 2>/dev/null; "$bl" restore >&2; fi
  fi
  echo stopped ;;
files)
  for f in results.db results.db-wal; do [ -e "$here/$f" ] && echo "$f"; done; true ;;
*)
  echo "fleet.sh: unknown verb '${1:-}'" >&2; exit 2 ;;
esac
"""

# What `fleet.sh files` may answer: the only names the worker copies back from a board.
RESULT_FILES = ("results.db", "results.db-wal")

_PROGRESS = re.compile(r"\[(\d+)/(\d+)\]")


def parse_poll(lines: list[str]) -> tuple[str, str]:
    """`fleet.sh poll` output -> (state, detail): ("done", exit code), ("running", "d/t"), ("gone", "")."""
    text = " ".join(lines).strip()
    if text.startswith("done "):
        return "done", text[5:].strip()
    if text.startswith("running"):
        m = _PROGRESS.search(text)
        return "running", f"{m.group(1)}/{m.group(2)}" if m else ""
    if text == "gone":
        return "gone", ""
    return "unknown", text[:200]
