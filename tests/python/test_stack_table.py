"""bench/stack_table.py leaves nothing running when it is stopped: its workers and gateway are
process groups of their own (so a terminal's Ctrl-C does not reach them), and a run that dies or
is terminated must still stop them all. A run of the `naive` configuration is sent SIGTERM while
its stack serves traffic; afterwards no process may still hold the run's own copy of the model.
About 20 s."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import BIN, ROOT


def processes_using(needle: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline and int(entry.name) != os.getpid():
            pids.append(int(entry.name))
    return pids


def test_a_terminated_run_stops_its_workers_and_gateway(tmp_path, smollm2_gguf):
    model = tmp_path / "stack-table-model.gguf"  # a path no other process names
    shutil.copyfile(smollm2_gguf, model)
    work = tmp_path / "work"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "stack_table.py"), "--configs", "naive",
         "--reference", str(model), "--quantized", str(model), "--workers", "1", "-t", "1",
         "--rate", "0.5", "--steady-seconds", "60", "--spike-seconds", "5", "--after-seconds",
         "5", "--max-tokens", "8", "--frugal", str(BIN), "--work-dir", str(work)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Wait until the stack serves: `frugal up` (and its worker) name the model.
        log = work / "logs" / "up_naive.log"
        deadline = time.time() + 120
        while time.time() < deadline:
            if log.exists() and "gateway" in log.read_text(errors="replace") and \
                    len(processes_using(str(model))) >= 2:
                break
            assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
            time.sleep(0.3)
        running = processes_using(str(model))
        assert len(running) >= 2, running  # frugal up and its worker
        time.sleep(2)  # the load generator has started
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode != 0, out.decode(errors="replace")
        deadline = time.time() + 15
        while processes_using(str(model)) and time.time() < deadline:
            time.sleep(0.2)
        assert processes_using(str(model)) == [], (running, out.decode(errors="replace")[-2000:])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in processes_using(str(model)):
            os.kill(pid, signal.SIGKILL)
