#!/usr/bin/env python3
"""`backup run` under a write storm, and point-in-time restore cost against chain length (run
through `scripts/bench storm`, which builds the release binaries first).

1. One etcd 3.5.1 on free ports. The highest write rate it accepts on this machine: the
   `write_storm` example alone, flat out (64 requests in flight) for PROBE seconds: puts of 1 KiB
   to KEYS keys (creates and overwrites), deletes, puts attached to leases, leases replaced.
2. `etcdops backup run STORE --delta-every 1s` (release build, under /usr/bin/time) takes a full
   backup; then the same storm runs beside it, flat out, for SECONDS. The storm writes the
   store's revision every 100 ms (the highest revision its answers carried); `backup run -w json`
   prints each publication, timestamped here on arrival. The lag at each 100 ms sample is the age
   of the oldest change not yet published (0 when every change the store held is published).
   Reported: lag p50/p99/max, peak RSS, CPU per 1,000 events (the run's user+system time from its
   full backup to the last publication), bytes stored per event, gaps, `watch_behind` warnings.
3. Five random revisions of the storm: `snapshot restore STORE --to-revision R`, started by etcd
   3.5.1, every key compared with the storm etcd's `get "" --prefix --rev R` (key, value,
   create/mod revision, version, lease).
4. Chain length: restores at the full backup's revision plus 10k, 100k and 1M revisions (those
   the storm reached; a lease revocation is several events in one revision), ROUNDS each,
   against a plain restore of a full backup holding the same data (saved from an etcd started
   on the point-in-time restore) and of the chain's own full backup.

Markdown goes to stdout, progress to stderr. Not a test: every process shares the same cores.
"""

import argparse
import base64
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ETCDCTL35, ETCDOPS, Etcd, free_port, log, run  # noqa: E402

STORM = os.environ["WRITE_STORM"]
PREFIX = "/storm/"


def storm(endpoint, seconds, keys, timeline=None):
    """Runs the write storm; its summary (requests by kind, revisions, seconds). With TIMELINE
    (a list), the store's revision every 100 ms, as (unix seconds, revision), is added to it."""
    cmd = [STORM, endpoint, PREFIX, str(seconds), str(keys), "0"] + (["timeline"] if timeline is not None else [])
    lines = run(cmd, capture_output=True, text=True).stdout.splitlines()
    if timeline is not None:
        timeline.extend((float(t), int(r)) for _, t, r in (line.split() for line in lines if line.startswith("t ")))
    return json.loads(next(line for line in reversed(lines) if line.startswith("{")))


def cpu_seconds(pid):
    """User + system CPU seconds of PID so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class BackupRun:
    """`etcdops backup run` under /usr/bin/time; its JSON events, stamped on arrival."""

    def __init__(self, work, endpoint, store):
        self.metrics = os.path.join(work, "metrics.prom")
        self.timing = os.path.join(work, "time.run")
        self.err = open(os.path.join(work, "run.err"), "wb")
        self.proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "%e %M", "-o", self.timing,
             ETCDOPS, "--endpoints", endpoint, "-w", "json", "backup", "run", store,
             "--full-every", "24h", "--delta-every", "1s", "--metrics-file", self.metrics],
            stdout=subprocess.PIPE, stderr=self.err)
        self.events, self.lock = [], threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.pid = self._child()

    def _read(self):
        for line in self.proc.stdout:
            event = json.loads(line)
            with self.lock:
                self.events.append((time.time(), event))

    def _child(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                children = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
            except OSError:
                children = []
            if children:
                return int(children[0])
            time.sleep(0.05)
        raise SystemExit("backup run did not start")

    def wait_for(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [e for _, e in self.events if predicate(e)]
            if found:
                return found[0]
            if self.proc.poll() is not None:
                raise SystemExit(f"backup run exited waiting for {what}; see {self.err.name}")
            time.sleep(0.05)
        raise SystemExit(f"backup run: no {what} within {timeout} s")

    def published(self):
        """(arrival time, to_revision, changes) of every segment published."""
        with self.lock:
            return [(t, e["to_revision"], e["changes"]) for t, e in self.events
                    if e["event"] == "segment_published"]

    def gauge(self, name):
        """The gauge's value in the metrics file (None while the file or the gauge is missing)."""
        try:
            for line in open(self.metrics):
                if line.startswith(name + " "):
                    return float(line.split()[1])
        except OSError:
            pass
        return None

    def stop(self):
        """SIGTERM; (wall seconds, peak RSS KiB)."""
        os.kill(self.pid, 15)
        if self.proc.wait(timeout=120) != 0:
            raise SystemExit(f"backup run exited {self.proc.returncode}; see {self.err.name}")
        wall, rss = open(self.timing).read().split()[-2:]
        return float(wall), int(rss)


def lag_samples(timeline, published, start_revision, t0, t1):
    """The age of the oldest unpublished change at each timeline sample in [t0, t1]."""
    samples, first_above = [], []  # first_above: (time, revision) where the store first passed it
    pub_index, published_revision = 0, start_revision
    for t, store_revision in timeline:
        if not first_above or store_revision > first_above[-1][1]:
            first_above.append((t, store_revision))
        while pub_index < len(published) and published[pub_index][0] <= t:
            published_revision = max(published_revision, published[pub_index][1])
            pub_index += 1
        if not t0 <= t <= t1:
            continue
        if store_revision <= published_revision:
            samples.append(0.0)
            continue
        # The store first held a revision above the published one at the first sample whose
        # revision exceeds it.
        since = next(ft for ft, fr in first_above if fr > published_revision)
        samples.append(t - since)
    return samples


def store_bytes(store, deltas):
    """Bytes of the store's objects: the delta segments (DELTAS) or the full backups."""
    total = 0
    for d, _, files in os.walk(store):
        for f in files:
            if f.endswith(".delta.zst" if deltas else ".db.zst"):
                total += os.path.getsize(os.path.join(d, f))
    return total


def keys_at(endpoint, revision=None):
    """Every key of the store (at REVISION) as {key: (value, create, mod, version, lease)}."""
    cmd = [ETCDCTL35, "--endpoints", endpoint, "--command-timeout=300s", "get", "", "--prefix", "-w", "json"]
    if revision:
        cmd += ["--rev", str(revision)]
    answer = json.loads(run(cmd, capture_output=True).stdout)
    return {base64.b64decode(kv["key"]): (kv.get("value"), kv.get("create_revision"), kv.get("mod_revision"),
                                          kv.get("version"), kv.get("lease", 0))
            for kv in answer.get("kvs", [])}


def timed(cmd, work):
    """Wall seconds and peak RSS KiB of CMD, and its stdout."""
    subprocess.run(["sync"], check=True)
    out = os.path.join(work, "time.out")
    r = run(["/usr/bin/time", "-f", "%e %M", "-o", out, *cmd], capture_output=True)
    wall, rss = open(out).read().split()[-2:]
    return float(wall), int(rss), r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=600, help="the storm beside backup run")
    p.add_argument("--probe", type=int, default=30, help="the storm alone, for the highest rate")
    p.add_argument("--keys", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--checks", type=int, default=5, help="point-in-time restores compared with get --rev")
    p.add_argument("--keep-store", help="move the backup store here at the end (to profile restores)")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="etcdops-bench-storm.", dir=os.environ.get("TMPDIR", "/tmp"))
    rng = random.Random(38)
    try:
        etcd = Etcd(work, "storm", os.path.join(work, "data"))
        version = run([ETCDOPS, "--version"], capture_output=True, text=True).stdout.strip()
        log(f"the storm alone for {a.probe} s (the highest rate etcd accepts here)")
        alone = storm(etcd.client, a.probe, a.keys)
        store = os.path.join(work, "store")
        log("backup run: full backup")
        backup = BackupRun(work, etcd.client, store)
        full = backup.wait_for("full backup", lambda e: e["event"] == "full_saved", 120)
        full_revision = full["revision"]
        cpu0, t0 = cpu_seconds(backup.pid), time.time()
        rss_peak_live, behind_max = [0], [None]
        sampling = threading.Event()

        def sample():
            while not sampling.is_set():
                try:
                    rss = next(int(line.split()[1]) for line in open(f"/proc/{backup.pid}/status")
                               if line.startswith("VmRSS:"))
                    rss_peak_live[0] = max(rss_peak_live[0], rss)
                except (OSError, StopIteration):
                    pass
                behind = backup.gauge("etcdops_backup_run_watch_behind_seconds")
                if behind is not None:
                    behind_max[0] = max(behind_max[0] or 0.0, behind)
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timeline = []
        log(f"the storm beside backup run --delta-every 1s for {a.seconds} s")
        beside = storm(etcd.client, a.seconds, a.keys, timeline)
        t1, last_revision = time.time(), beside["last_revision"]
        deadline = time.monotonic() + 300
        while not any(r >= last_revision for _, r, _ in backup.published()):
            if time.monotonic() > deadline:
                raise SystemExit(f"backup run did not publish revision {last_revision} within 300 s")
            time.sleep(0.05)
        caught_up = time.time() - t1
        cpu = cpu_seconds(backup.pid) - cpu0
        sampling.set()
        sampler.join()
        published = backup.published()
        _, run_rss = backup.stop()
        with backup.lock:
            events = [e for _, e in backup.events]
        gaps = sum(1 for e in events if e["event"] in ("gap", "full_backup_lost"))
        failures = [e for e in events if e["event"] == "failed"]
        warnings = sum(1 for e in events if e["event"] == "watch_behind")
        lags = lag_samples(timeline, published, full_revision, t0, t1)
        changes = sum(c for _, r, c in published)
        segments = len(published)
        delta_bytes = store_bytes(store, deltas=True)
        covered = max(r for _, r, _ in published)
        gapless = covered >= last_revision and gaps == 0

        print(f"Command: `scripts/bench storm --seconds {a.seconds} --keys {a.keys}` on {os.cpu_count()} cores, "
              f"{time.strftime('%Y-%m-%d', time.gmtime())}, etcd 3.5.1, {version}; one etcd, the storm "
              "(64 requests in flight) and `backup run` share the cores.\n")
        print("| write storm (flat out, 64 in flight; 70% puts of 1 KiB, 15% deletes, 14% leased puts, "
              "1% leases replaced) | s | requests/s | revisions/s |")
        print("|---|---|---|---|")
        for label, s in (("alone (the highest rate etcd accepts here)", alone),
                         ("beside `backup run --delta-every 1s`", beside)):
            revisions = s["last_revision"] - s["first_revision"]
            print(f"| {label} | {s['seconds']:.0f} | {s['requests_per_second']:.0f} | {revisions / s['seconds']:.0f} |")
        print()
        print("| backup run during the storm | |")
        print("|---|---|")
        rows = [
            ("events published (segments)", f"{changes} ({segments})"),
            ("lag, oldest unpublished change (100 ms samples): p50 / p99 / max s",
             f"{percentile(lags, 50):.2f} / {percentile(lags, 99):.2f} / {max(lags):.2f}"),
            ("every change published, after the storm's end", f"{caught_up:.2f} s"),
            ("peak RSS (whole run, incl. its full backup) / sampled during the storm",
             f"{run_rss // 1024} / {rss_peak_live[0] // 1024} MiB"),
            ("CPU per 1,000 events (user+system, full backup excluded)", f"{cpu / changes * 1000 * 1000:.1f} ms"),
            ("bytes stored per event (segments / events)", f"{delta_bytes / changes:.1f}"),
            ("gaps, failures, `watch_behind` warnings (max watch_behind_seconds)",
             f"{gaps}, {len(failures)}, {warnings} "
             + (f"({behind_max[0]:.1f} s)" if behind_max[0] is not None else "(**the gauge is missing**)")),
            ("no gap: every revision up to the storm's last published", "yes" if gapless else "**NO**"),
        ]
        for label, value in rows:
            print(f"| {label} | {value} |")
        print()

        # 3. Point-in-time restores at random revisions, against get --rev.
        peer = free_port()
        flags = ["--name", "p", "--initial-cluster", f"p=http://127.0.0.1:{peer}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}"]
        target = os.path.join(work, "restored")
        checked = []
        for revision in sorted(rng.sample(range(full_revision + 1, last_revision + 1), a.checks)):
            log(f"point-in-time restore at {revision}, compared with get --rev {revision}")
            shutil.rmtree(target, ignore_errors=True)
            run([ETCDOPS, "snapshot", "restore", store, "--to-revision", str(revision), "--data-dir", target,
                 *flags], stdout=subprocess.DEVNULL)
            restored = Etcd(work, "p", target, peer_port=peer, log_name="restored")
            try:
                got = keys_at(restored.client)
            finally:
                restored.stop()
            want = keys_at(etcd.client, revision)
            if got != want:
                differing = sorted(set(got.items()) ^ set(want.items()))[:3]
                raise SystemExit(f"the restore at {revision} differs from get --rev: {differing}")
            checked.append((revision, len(want)))
        print("Point-in-time restores at random revisions, each started by etcd 3.5.1 and compared key by key "
              "(value, create/mod revision, version, lease) with `etcdctl get \"\" --prefix --rev R` of the storm's "
              "etcd: " + ", ".join(f"{r} ({n} keys) equal" for r, n in checked) + ".\n")

        # 4. Restore cost against chain length.
        full_store = os.path.join(work, "store-full")
        plain_target = os.path.join(work, "plain")
        base = [os.path.join(d, f) for d, _, fs in os.walk(store) for f in fs
                if f.endswith(".db.zst")]
        if len(base) != 1:
            raise SystemExit(f"expected one full backup in {store}, found {base}")
        print("| restore (median of %d) | events replayed | db MiB | wall s | peak RSS MiB | vs plain restore "
              "of a full backup of the same data | vs plain restore of the chain's full backup |" % a.rounds)
        print("|---|---|---|---|---|---|---|")
        base_runs = []
        for _ in range(a.rounds):
            shutil.rmtree(plain_target, ignore_errors=True)
            base_runs.append(timed([ETCDOPS, "snapshot", "restore", base[0], "--data-dir", plain_target, *flags], work))
        base_wall = statistics.median(w for w, _, _ in base_runs)
        print(f"| plain, the chain's full backup (revision {full_revision}) | 0 | "
              f"{os.path.getsize(os.path.join(plain_target, 'member', 'snap', 'db')) / 2**20:.0f} | {base_wall:.2f} | "
              f"{max(r for _, r, _ in base_runs) // 1024} | | 1.00 |")
        for length in (10_000, 100_000, 1_000_000):
            revision = full_revision + length
            if revision > covered:
                print(f"| at +{length} revisions | the storm reached only +{covered - full_revision} | | | | | |")
                continue
            pitr = []
            for _ in range(a.rounds):
                shutil.rmtree(target, ignore_errors=True)
                pitr.append(timed([ETCDOPS, "-w", "json", "snapshot", "restore", store, "--to-revision", str(revision),
                                   "--data-dir", target, *flags], work))
            replayed = json.loads(pitr[0][2])["point_in_time"]["changes_applied"]
            db_mib = os.path.getsize(os.path.join(target, "member", "snap", "db")) / 2**20
            # A full backup of the same data: saved from an etcd serving the restored dir.
            restored = Etcd(work, "p", target, peer_port=peer, log_name="restored")
            try:
                shutil.rmtree(full_store, ignore_errors=True)
                run([ETCDOPS, "--endpoints", restored.client, "snapshot", "save", full_store, "--quiet"],
                    stdout=subprocess.DEVNULL)
            finally:
                restored.stop()
            same = [os.path.join(d, f) for d, _, fs in os.walk(full_store) for f in fs if f.endswith(".db.zst")]
            plain = []
            for _ in range(a.rounds):
                shutil.rmtree(plain_target, ignore_errors=True)
                plain.append(timed([ETCDOPS, "snapshot", "restore", same[0], "--data-dir", plain_target, *flags], work))
            wall = statistics.median(w for w, _, _ in pitr)
            plain_wall = statistics.median(w for w, _, _ in plain)
            print(f"| `--to-revision` full + {length} revisions | {replayed} | {db_mib:.0f} | {wall:.2f} | "
                  f"{max(r for _, r, _ in pitr) // 1024} | {wall / plain_wall:.2f} (plain {plain_wall:.2f} s, "
                  f"{max(r for _, r, _ in plain) // 1024} MiB) | {wall / base_wall:.2f} |")
        print()
        etcd.stop()
        if a.keep_store:
            shutil.move(store, a.keep_store)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
