#!/usr/bin/env python3
"""The side-by-side benchmark behind docs/BENCHMARKS.md (run through scripts/bench, which installs
the tools and builds the release binaries first).

For each data set (``random``: 1 KiB base64-of-random values that compress ~1.7x; ``json``: ~1 KiB
Kubernetes-shaped ConfigMap JSON), one etcd 3.5.1 server holding KEYS keys plus OVERWRITES
rewrites (1.1M revisions by default), it times in one run:

- save: etcdctl 3.5.1 and 3.4.23 ``snapshot save``, the floor ``cp`` + ``sync`` of the db, etcdops
  ``snapshot save`` (default level, -1, -3) to a local dir and to S3 (moto, or s3s-fs when
  ETCDOPS_BENCH_S3FS names its binary: a Rust S3 server that needs far less CPU), and the default save
  and etcdctl again while a CPU hog keeps one core busy;
- get: ``get PREFIX --prefix`` keys-only and with values, etcdctl 3.5.1 / 3.4.23 against etcdops;
- status: of the plain snapshot (etcdutl 3.5.1, etcdctl 3.4.23, etcdops, etcdops
  --skip-hash-check) and of the ``.db.zst`` etcdops saved, beside ``openssl dgst -sha256`` of the db
  and ``zstd -d`` of the object;
- usage: what fills the db, etcdops ``usage`` live (paged) and offline from the plain snapshot
  (with and without the SHA-256 check) and from the ``.db.zst``, against the etcdctl way,
  ``etcdctl get "" --prefix --keys-only | awk`` counting keys per prefix (which sees neither sizes
  nor history);
- restore: etcdutl 3.5.1, etcdctl 3.4.23 and etcdops from the plain snapshot, etcdops from the
  ``.db.zst`` (path, ``file://`` URL, S3), beside ``cp`` + ``sync`` and ``zstd -d -c > db && sync``.
  Every restored dir is started once by etcd and its key count checked.

Each group's commands run in alternation, ROUNDS times; a row shows the min and median wall time,
the peak RSS and the ratio of the medians to the group's reference. Markdown goes to stdout,
progress to stderr. Not a test: these shared 2-core machines are noisy, compare the ratios.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ETCDOPS = os.environ["ETCDOPS"]
FILL_KEYS = os.environ["FILL_KEYS"]
WRITE_STORM = os.environ.get("WRITE_STORM", "")
BIN35 = os.environ["ETCD35_BIN_DIR"]
ETCD35, ETCDCTL35, ETCDUTL35 = (os.path.join(BIN35, n) for n in ("etcd", "etcdctl", "etcdutl"))
ETCDCTL34 = "/usr/bin/etcdctl"
MOTO = os.environ.get("ETCDOPS_MOTO_SERVER", "")
# s3s-fs (crates.io), an S3 server over a dir written in Rust: on these 2 shared cores moto (Python)
# takes more CPU than the save it receives, so an S3 figure against moto measures moto.
S3FS = os.environ.get("ETCDOPS_BENCH_S3FS", "")
PREFIX = "/registry/bench/"
S3_ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}


def log(msg):
    print(f"==> {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env=None, **kw):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(cmd, env=full_env, check=True, **kw)


class Etcd:
    """An etcd 3.5.1 on free ports, serving DATA_DIR (restored from a snapshot by etcdutl)."""

    def __init__(self, work, name, data_dir, peer_port=None, log_name="etcd"):
        self.client = f"http://127.0.0.1:{free_port()}"
        self.peer = f"http://127.0.0.1:{peer_port or free_port()}"
        self.name, self.data_dir = name, data_dir
        self.log = open(os.path.join(work, f"{log_name}.log"), "ab")
        self.proc = subprocess.Popen(
            [ETCD35, "--name", name, "--data-dir", data_dir,
             # Above the 8 GiB of the largest data set, so that filling it raises no NOSPACE alarm.
             "--quota-backend-bytes", str(16 << 30),
             "--listen-client-urls", self.client, "--advertise-client-urls", self.client,
             "--listen-peer-urls", self.peer, "--initial-advertise-peer-urls", self.peer,
             "--initial-cluster", f"{name}={self.peer}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"etcd on {data_dir} exited; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.client}/health", timeout=2) as r:
                    if json.load(r).get("health") == "true":
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"etcd on {data_dir} did not become healthy")
            time.sleep(0.2)

    def count(self, prefix=PREFIX):
        out = run([ETCDCTL35, "--endpoints", self.client, "get", prefix, "--prefix",
                   "--count-only", "-w", "fields"], capture_output=True, text=True).stdout
        return int(next(l for l in out.splitlines() if l.startswith('"Count"')).split(":")[1])

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


class Hog:
    """One busy loop, a bounded CPU hog for the "one core busy" rows."""

    def __enter__(self):
        self.proc = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


class Bench:
    def __init__(self, work, rounds):
        self.work, self.rounds = work, rounds
        self.tables = []

    def time(self, cmd, env=None):
        """Wall seconds and peak RSS KiB of CMD (a list, or a shell string)."""
        subprocess.run(["sync"], check=True)
        out = os.path.join(self.work, "time.out")
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else cmd
        err = os.path.join(self.work, "time.err")
        with open(err, "wb") as e:
            r = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", out, *argv],
                               env=dict(os.environ, **(env or {})),
                               stdout=subprocess.DEVNULL, stderr=e)
        if r.returncode != 0:
            sys.stderr.write(open(err).read())
            raise SystemExit(f"failed: {cmd}")
        wall, rss = open(out).read().split()[-2:]
        return float(wall), int(rss)

    def group(self, title, rows, note=""):
        """ROWS: (label, command, env, before, after); the first is the reference. BEFORE runs
        untimed before each timing (cleanup), AFTER after it with the round number (checks)."""
        results = {r[0]: [] for r in rows}
        for rnd in range(self.rounds):
            order = rows if rnd % 2 == 0 else rows[::-1]
            for label, cmd, env, before, after, _vs in order:
                if before:
                    before()
                log(f"{title}: {label} (round {rnd + 1}/{self.rounds})")
                wall, rss = (cmd() if callable(cmd) else self.time(cmd, env))
                results[label].append((wall, rss))
                if after:
                    after(rnd)
        ref = statistics.median(w for w, _ in results[rows[0][0]])
        lines = [f"### {title}", "", note, "",
                 f"| run | min s | median s | peak RSS MiB | median vs {rows[0][0].split(' (')[0]} | median vs |",
                 "|---|---|---|---|---|---|"]
        medians = {label: statistics.median(w for w, _ in runs) for label, runs in results.items()}
        for label, *_, vs in rows:
            walls = [w for w, _ in results[label]]
            rss = max(r for _, r in results[label]) // 1024
            against = f"{medians[label] / medians[vs]:.2f} x {vs.split(':')[-1].strip()}" if vs else ""
            lines.append(f"| {label} | {min(walls):.2f} | {medians[label]:.2f} | {rss} | "
                         f"{medians[label] / ref:.2f} | {against} |")
        table = "\n".join(lines)
        self.tables.append(table)
        print(table + "\n", flush=True)
        return medians


def row(label, cmd, env=None, before=None, after=None, vs=None):
    """A timed command; VS names another row of the group (a floor) to compare it with too."""
    return (label, cmd, env, before, after, vs)


def ensure_snapshot(data, work, kind, keys, overwrites):
    """DATA/KIND/snap.db (DATA/KIND-KEYS-OVERWRITES/snap.db for another shape than the default): an
    etcdctl 3.5.1 snapshot of a filled etcd (made once, then reused)."""
    default_shape = (keys, overwrites) == (1_001_000, 100_000)
    folder = os.path.join(data, kind if default_shape else f"{kind}-{keys}-{overwrites}")
    snap = os.path.join(folder, "snap.db")
    stamp = os.path.join(folder, "shape.json")
    shape = {"keys": keys, "overwrites": overwrites, "values": kind}
    if os.path.exists(snap) and os.path.exists(stamp) and json.load(open(stamp)) == shape:
        return snap
    os.makedirs(os.path.dirname(snap), exist_ok=True)
    log(f"filling etcd with {keys} {kind} keys and {overwrites} overwrites")
    etcd = Etcd(work, "fill", os.path.join(work, f"fill-{kind}"))
    try:
        run([FILL_KEYS, etcd.client, PREFIX, str(keys), kind, str(overwrites)])
        run([ETCDCTL35, "--endpoints", etcd.client, "snapshot", "save", snap + ".part"],
            stdout=subprocess.DEVNULL)
    finally:
        etcd.stop()
        shutil.rmtree(os.path.join(work, f"fill-{kind}"), ignore_errors=True)
    os.rename(snap + ".part", snap)
    json.dump(shape, open(stamp, "w"))
    return snap


def one_backup(store):
    """The object path and URL-relative name of the only backup etcdops saved in STORE (a dir)."""
    found = [os.path.join(d, f) for d, _, fs in os.walk(store) for f in fs if f.endswith(".db.zst")]
    if len(found) != 1:
        raise SystemExit(f"expected one .db.zst in {store}, found {found}")
    return found[0], os.path.relpath(found[0], store)


def bench_set(bench, kind, snap, parts, s3_server, scale=False):
    """Times PARTS on one data set. SCALE (multi-GiB sets) keeps the rows that show how cost
    grows with the db: one reference, the floors and etcdops' defaults (no etcdctl 3.4, no
    levels, no CPU hog, no get with values: etcdctl would hold every value in memory)."""
    work = bench.work
    rm = lambda *paths: (lambda: [shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p)
                                  else (os.path.exists(p) and os.remove(p)) for p in paths])
    db_bytes = os.path.getsize(snap) // 512 * 512
    live_dir = os.path.join(work, f"live-{kind}")
    peer = free_port()
    run([ETCDUTL35, "snapshot", "restore", snap, "--data-dir", live_dir, "--name", "bench",
         "--initial-cluster", f"bench=http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    etcd = Etcd(work, "bench", live_dir, peer_port=peer, log_name=f"live-{kind}")
    keys = etcd.count()
    ep = ["--endpoints", etcd.client]
    out = os.path.join(work, "out")
    store = os.path.join(work, f"store-{kind}")
    bucket = f"bench-{kind}"
    moto, s3_name = s3_server
    s3 = ["--s3-endpoint", moto, "--allow-http", "--s3-path-style"] if moto else []
    sizes = {}
    summary = {"set": kind, "db_bytes": db_bytes, "keys": keys}

    def stored(path):
        return lambda _rnd: sizes.setdefault(path, os.path.getsize(one_backup(path)[0]
                                                                     if os.path.isdir(path) else path))

    if "save" in parts:
        save_rows = [
            row("etcdctl 3.5.1 snapshot save (reference)", [ETCDCTL35, *ep, "snapshot", "save", out],
                before=rm(out)),
            row("etcdctl 3.4.23 snapshot save", [ETCDCTL34, *ep, "snapshot", "save", out],
                env={"ETCDCTL_API": "3"}, before=rm(out)),
            row("floor: cp db + sync", f"cp '{snap}' '{out}' && sync '{out}'", before=rm(out)),
            row("etcdops snapshot save (default level)", [ETCDOPS, *ep, "snapshot", "save", out, "--quiet"],
                before=rm(out), after=stored(out)),
            row("etcdops snapshot save --compression-level 1",
                [ETCDOPS, *ep, "snapshot", "save", out + "-1", "--quiet", "--compression-level", "1"],
                before=rm(out + "-1"), after=stored(out + "-1")),
            row("etcdops snapshot save --compression-level 3",
                [ETCDOPS, *ep, "snapshot", "save", out + "-3", "--quiet", "--compression-level", "3"],
                before=rm(out + "-3"), after=stored(out + "-3")),
        ]
        if scale:
            save_rows = [r for r in save_rows if "3.4.23" not in r[0] and "level " not in r[0]]
        if moto:
            save_rows.append(row(f"etcdops snapshot save to S3 ({s3_name}, default level)",
                                 [ETCDOPS, *ep, "snapshot", "save", f"s3://{bucket}/save", "--quiet", *s3],
                                 env=S3_ENV, vs="etcdops snapshot save (default level)"))
        med = bench.group(f"snapshot save, {kind} data set", save_rows,
                          f"db {db_bytes / 2**20:.0f} MiB, {keys} keys.")
        summary["save"] = med
        summary["stored"] = {os.path.basename(k): v for k, v in sizes.items()}
    if "save" in parts and not scale:
        hog = Hog()
        hog_rows = [
            row("etcdctl 3.5.1 snapshot save, one core busy (reference)",
                lambda: with_hog(hog, lambda: bench.time([ETCDCTL35, *ep, "snapshot", "save", out])),
                before=rm(out)),
            row("etcdops snapshot save (default level), one core busy",
                lambda: with_hog(hog, lambda: bench.time([ETCDOPS, *ep, "snapshot", "save", out, "--quiet"])),
                before=rm(out)),
        ]
        summary["save_hog"] = bench.group(f"snapshot save with a CPU hog, {kind} data set", hog_rows,
                                          "A `while :; do :; done` shell loop runs during each timing.")
        rm(out)()

    # The backup every later part reads: etcdops's default save, to a local dir and to S3.
    rm(store)()
    run([ETCDOPS, *ep, "snapshot", "save", store, "--quiet"], stdout=subprocess.DEVNULL)
    zst, zst_name = one_backup(store)
    summary["stored_default"] = os.path.getsize(zst)
    s3_url = None
    if moto:
        run([ETCDOPS, *ep, "snapshot", "save", f"s3://{bucket}/restore", "--quiet", *s3], env=S3_ENV,
            stdout=subprocess.DEVNULL)
        listed = json.loads(run([ETCDOPS, "snapshot", "list", f"s3://{bucket}/restore", "-w", "json", *s3],
                                env=S3_ENV, capture_output=True).stdout)
        s3_url = backup_url(listed, f"s3://{bucket}/restore")

    if "get" in parts:
        # etcdctl reads the whole range in one response: 1M keys with values take longer than
        # its default 5 s command timeout. The same flag is given to every tool.
        long = ["--command-timeout=300s"]
        get_rows = [
            row("etcdctl 3.5.1 get --prefix --keys-only (reference)",
                [ETCDCTL35, *ep, *long, "get", PREFIX, "--prefix", "--keys-only"]),
            row("etcdctl 3.4.23 get --prefix --keys-only", [ETCDCTL34, *ep, *long, "get", PREFIX, "--prefix", "--keys-only"],
                env={"ETCDCTL_API": "3"}),
            row("etcdops get --prefix --keys-only", [ETCDOPS, *ep, *long, "get", PREFIX, "--prefix", "--keys-only"]),
        ]
        if scale:
            get_rows = [r for r in get_rows if "3.4.23" not in r[0]]
        summary["get_keys"] = bench.group(f"get --prefix --keys-only, {kind} data set", get_rows,
                                          f"{keys} keys, output to /dev/null.")
    if "get" in parts and not scale:
        long = ["--command-timeout=300s"]
        get_rows = [
            row("etcdctl 3.5.1 get --prefix (reference)", [ETCDCTL35, *ep, *long, "get", PREFIX, "--prefix"]),
            row("etcdctl 3.4.23 get --prefix", [ETCDCTL34, *ep, *long, "get", PREFIX, "--prefix"],
                env={"ETCDCTL_API": "3"}),
            row("etcdops get --prefix", [ETCDOPS, *ep, *long, "get", PREFIX, "--prefix"]),
        ]
        summary["get_values"] = bench.group(f"get --prefix with values, {kind} data set", get_rows,
                                            f"{keys} keys, output to /dev/null.")
    if "compact" in parts:
        summary["compact"] = bench_compact(bench, kind, etcd, zst)
    if "usage" in parts:
        # Keys per first two path segments, the most etcdctl can tell (no sizes, no history).
        awk = "awk -F/ 'NF {n[$2 \"/\" $3]++} END {for (p in n) print p, n[p]}'"
        usage_rows = [
            row('etcdctl 3.5.1 get "" --prefix --keys-only, piped to awk (reference)',
                f"'{ETCDCTL35}' --endpoints {etcd.client} --command-timeout=300s "
                f"get '' --prefix --keys-only | {awk}"),
            row("etcdops usage (live, paged)", [ETCDOPS, *ep, "--command-timeout=300s", "usage"]),
            row("etcdops usage --snapshot (plain)", [ETCDOPS, "usage", "--snapshot", snap]),
            row("etcdops usage --snapshot --skip-hash-check",
                [ETCDOPS, "usage", "--snapshot", snap, "--skip-hash-check"]),
            row("etcdops usage --snapshot of the .db.zst", [ETCDOPS, "usage", "--snapshot", zst]),
        ]
        summary["usage"] = bench.group(
            f"usage, {kind} data set", usage_rows,
            f"{keys} keys; db {db_bytes / 2**20:.0f} MiB. The reference counts keys per prefix only; "
            "etcdops also gives live bytes, history bytes (offline), largest keys, leases and free pages.")
    etcd.stop()
    shutil.rmtree(live_dir, ignore_errors=True)

    if "status" in parts:
        status_rows = [
            row("etcdutl 3.5.1 snapshot status (reference)", [ETCDUTL35, "snapshot", "status", snap]),
            row("etcdctl 3.4.23 snapshot status", [ETCDCTL34, "snapshot", "status", snap], env={"ETCDCTL_API": "3"}),
            row("floor: openssl dgst -sha256 of the db", ["openssl", "dgst", "-sha256", snap]),
            row("etcdops snapshot status", [ETCDOPS, "snapshot", "status", snap], vs="floor: openssl dgst -sha256 of the db"),
            row("etcdops snapshot status --skip-hash-check", [ETCDOPS, "snapshot", "status", snap, "--skip-hash-check"]),
            row("floor: zstd -d of the .db.zst to /dev/null", f"zstd -q -d -c '{zst}' > /dev/null"),
            row("etcdops snapshot status of the .db.zst", [ETCDOPS, "snapshot", "status", zst], vs="floor: zstd -d of the .db.zst to /dev/null"),
            row("etcdops snapshot status of the .db.zst --skip-hash-check",
                [ETCDOPS, "snapshot", "status", zst, "--skip-hash-check"], vs="floor: zstd -d of the .db.zst to /dev/null"),
        ]
        summary["status"] = bench.group(f"snapshot status, {kind} data set", status_rows,
                                        f"plain snapshot {db_bytes / 2**20:.0f} MiB; .db.zst "
                                        f"{summary['stored_default'] / 2**20:.0f} MiB (etcdops's default save).")

    if "restore" in parts:
        target = os.path.join(work, "restored")
        rport = free_port()
        flags = ["--name", "r1", "--initial-cluster", f"r1=http://127.0.0.1:{rport}",
                 "--initial-cluster-token", "bench", "--initial-advertise-peer-urls", f"http://127.0.0.1:{rport}"]
        floor_db = os.path.join(work, "floor.db")

        def started(label):
            def check(rnd):
                if rnd == 0:
                    e = Etcd(work, "r1", target, peer_port=rport, log_name="restored")
                    try:
                        got = e.count()
                    finally:
                        e.stop()
                    if got != keys:
                        raise SystemExit(f"{label}: the restored etcd serves {got} keys, not {keys}")
                    log(f"{label}: etcd started on the restored dir and serves all {got} keys")
                shutil.rmtree(target, ignore_errors=True)
            return check

        rows_ = [
            row("etcdutl 3.5.1 snapshot restore (reference)",
                [ETCDUTL35, "snapshot", "restore", snap, "--data-dir", target, *flags],
                before=rm(target), after=started("etcdutl 3.5.1")),
            row("etcdctl 3.4.23 snapshot restore", [ETCDCTL34, "snapshot", "restore", snap, "--data-dir", target, *flags],
                env={"ETCDCTL_API": "3"}, before=rm(target), after=started("etcdctl 3.4.23")),
            row("floor: cp db + sync", f"cp '{snap}' '{floor_db}' && sync '{floor_db}'", before=rm(floor_db)),
            row("etcdops snapshot restore (plain)", [ETCDOPS, "snapshot", "restore", snap, "--data-dir", target, *flags],
                before=rm(target), after=started("etcdops plain"), vs="floor: cp db + sync"),
            row("floor: zstd -d -c obj > db && sync", f"zstd -q -d -c '{zst}' > '{floor_db}' && sync '{floor_db}'",
                before=rm(floor_db)),
            row("etcdops snapshot restore of the .db.zst (path)",
                [ETCDOPS, "snapshot", "restore", zst, "--data-dir", target, *flags],
                before=rm(target), after=started("etcdops .db.zst path"), vs="floor: zstd -d -c obj > db && sync"),
            row("etcdops snapshot restore of the .db.zst (file:// URL)",
                [ETCDOPS, "snapshot", "restore", f"file://{store}/{zst_name}", "--data-dir", target, *flags],
                before=rm(target), after=started("etcdops file:// URL"), vs="floor: zstd -d -c obj > db && sync"),
        ]
        if scale:
            rows_ = [r for r in rows_ if "3.4.23" not in r[0] and "file://" not in r[0]]
        if s3_url:
            rows_.append(row(f"etcdops snapshot restore from S3 ({s3_name})",
                             [ETCDOPS, "snapshot", "restore", s3_url, "--data-dir", target, *flags, *s3],
                             env=S3_ENV, before=rm(target), after=started("etcdops S3"),
                             vs="etcdops snapshot restore of the .db.zst (path)"))
        summary["restore"] = bench.group(f"snapshot restore, {kind} data set", rows_,
                                         "Each kind of restored dir is started once by etcd 3.5.1 and its key "
                                         "count checked.")
        rm(floor_db, target)()
    rm(store)()
    return summary


def bench_compact(bench, kind, etcd, zst):
    """`snapshot compact` of a chain on top of the data set: `backup run` takes a full backup of
    it and follows a write storm of COMPACT_SECONDS, then the chain (the full backup plus the
    storm's events) is compacted into a new full backup, against the floor of decompressing the
    data set's full backup ZST and compressing it again (what any compaction must do)."""
    work = bench.work
    chain = os.path.join(work, f"chain-{kind}")
    shutil.rmtree(chain, ignore_errors=True)
    seconds = int(os.environ.get("COMPACT_SECONDS", "20"))
    log(f"a chain on the {kind} data set: backup run beside a {seconds} s write storm")
    err = open(os.path.join(work, "compact-run.err"), "wb")
    runner = subprocess.Popen([ETCDOPS, "--endpoints", etcd.client, "-w", "json", "backup", "run", chain,
                               "--full-every", "24h", "--delta-every", "1s"],
                              stdout=subprocess.PIPE, stderr=err, text=True)
    # The run first takes a full backup of its own (its chain's base): wait for it.
    for line in runner.stdout:
        if json.loads(line)["event"] == "full_saved":
            break
    storm = json.loads(run([WRITE_STORM, etcd.client, "/storm/", str(seconds), "50000"],
                           capture_output=True, text=True).stdout)
    last = storm["last_revision"]
    for line in runner.stdout:
        e = json.loads(line)
        if e["event"] == "segment_published" and e["to_revision"] >= last:
            break
    runner.terminate()
    runner.wait()
    listed = json.loads(run([ETCDOPS, "snapshot", "list", chain, "-w", "json"], capture_output=True).stdout)
    base = next(b for b in listed["backups"] if b.get("deltas"))
    events = sum(d["manifest"]["changes"] for d in base["deltas"])
    before = {os.path.join(d, f) for d, _, fs in os.walk(chain) for f in fs}

    def drop_new():
        for d, _, fs in os.walk(chain):
            for f in fs:
                if os.path.join(d, f) not in before:
                    os.remove(os.path.join(d, f))

    floor_out = os.path.join(work, "recompressed.zst")
    rows_ = [
        row("floor: zstd -d -c full, piped to zstd -1 -c > new && sync (reference)",
            f"zstd -q -d -c '{zst}' | zstd -q -1 -c > '{floor_out}' && sync '{floor_out}'",
            after=lambda _rnd: os.remove(floor_out)),
        row("etcdops snapshot compact (the full backup + the storm's events)",
            [ETCDOPS, "snapshot", "compact", chain, "--chain", base["object"], "--work-dir", work],
            after=lambda _rnd: drop_new()),
    ]
    result = bench.group(f"snapshot compact, {kind} data set", rows_,
                         f"A chain: the data set's full backup (taken by `backup run`) and {events} events "
                         f"of a {seconds} s write storm in {len(base['deltas'])} segments.")
    shutil.rmtree(chain, ignore_errors=True)
    return result


def with_hog(hog, fn):
    with hog:
        return fn()


def backup_url(listed, store_url):
    """The URL of the one backup in a `snapshot list -w json` answer."""
    items = listed if isinstance(listed, list) else listed.get("backups", [])
    names = [b.get("url") or f"{store_url}/{b.get('object') or b.get('name')}" for b in items]
    if len(names) != 1:
        raise SystemExit(f"expected one backup in {store_url}, got {listed}")
    return names[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=1_001_000)
    p.add_argument("--overwrites", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sets", default="random,json")
    p.add_argument("--parts", default="save,get,usage,status,restore",
                   help="what to time (also: compact); 'none' only fills (and keeps, with --data) the snapshots")
    p.add_argument("--scale", action="store_true",
                   help="multi-GiB sets: one reference, the floors and etcdops' defaults; get keys-only")
    p.add_argument("--data", default=os.environ.get("ETCDOPS_BENCH_DATA", ""),
                   help="keep the filled snapshots here and reuse them (default: a temp dir)")
    a = p.parse_args()
    parts = set(a.parts.split(","))
    work = tempfile.mkdtemp(prefix="etcdops-bench.", dir=os.environ.get("TMPDIR", "/tmp"))
    data = a.data or os.path.join(work, "data")
    moto_proc, moto = None, ""
    try:
        s3_name = "moto"
        if S3FS and os.access(S3FS, os.X_OK):
            port = free_port()
            root = os.path.join(work, "s3s-fs")
            os.makedirs(root)
            moto_log = open(os.path.join(work, "s3s-fs.log"), "wb")
            moto_proc = subprocess.Popen([S3FS, "--host", "127.0.0.1", "--port", str(port),
                                          "--access-key", S3_ENV["AWS_ACCESS_KEY_ID"],
                                          "--secret-key", S3_ENV["AWS_SECRET_ACCESS_KEY"], root],
                                         stdout=moto_log, stderr=subprocess.STDOUT)
            moto, s3_name = f"http://127.0.0.1:{port}", "s3s-fs"
        elif MOTO and os.access(MOTO, os.X_OK):
            port = free_port()
            moto_log = open(os.path.join(work, "moto.log"), "wb")
            moto_proc = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)],
                                         stdout=moto_log, stderr=subprocess.STDOUT)
            moto = f"http://127.0.0.1:{port}"
        if moto:
            for _ in range(300):
                try:
                    urllib.request.urlopen(moto, timeout=2).read()
                    break
                except urllib.error.HTTPError:
                    break  # it answers (s3s-fs refuses an unsigned request)
                except OSError:
                    time.sleep(0.2)
            for kind in a.sets.split(","):
                if s3_name == "s3s-fs":
                    os.makedirs(os.path.join(work, "s3s-fs", f"bench-{kind}"))  # a bucket is a dir
                else:
                    urllib.request.urlopen(urllib.request.Request(f"{moto}/bench-{kind}", method="PUT")).read()
        bench = Bench(work, a.rounds)
        etcd_version = run([ETCD35, "--version"], capture_output=True, text=True).stdout.split()[2]
        print(f"Command: `scripts/bench --keys {a.keys} --overwrites {a.overwrites} --rounds {a.rounds} "
              f"--sets {a.sets} --parts {a.parts}{' --scale' if a.scale else ''}` on {os.cpu_count()} cores, "
              f"{time.strftime('%Y-%m-%d', time.gmtime())}, etcd {etcd_version} server.\n", flush=True)
        summaries = []
        for kind in a.sets.split(","):
            snap = ensure_snapshot(data, work, kind, a.keys, a.overwrites)
            if not parts - {"none"}:
                continue
            summaries.append(bench_set(bench, kind, snap, parts, (moto, s3_name), a.scale))
        print("```json\n" + json.dumps(summaries, indent=1) + "\n```")
    finally:
        if moto_proc:
            moto_proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
