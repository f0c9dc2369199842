//! Fills an etcd with many keys quickly, for benchmarks (`scripts/bench`).
//!
//! `cargo run --release -p etcdops-tests --example fill_keys -- ENDPOINT PREFIX COUNT [VALUES] [OVERWRITES]`
//! writes PREFIX000000000 .. (64 writes in flight), then writes the first OVERWRITES keys once
//! more (new revisions, old ones kept until compaction). VALUES is one of:
//! - `small` (default): 100-byte values;
//! - `random`: 1 KiB of base64 of random bytes (compresses only ~1.3x, like encrypted Secrets);
//! - `json`: ~1 KiB Kubernetes-shaped ConfigMap JSON (compresses like a real cluster's data).

use std::process::ExitCode;

use base64::Engine;
use etcd_client::Client;

#[path = "shared/load.rs"]
mod load;

use load::Rng;

const IN_FLIGHT: usize = 64;

/// What the values look like.
#[derive(Clone, Copy)]
enum Values {
    Small,
    Random,
    Json,
}

fn value(kind: Values, i: usize, round: usize, rng: &mut Rng) -> String {
    match kind {
        Values::Small => "v".repeat(100),
        Values::Random => base64::engine::general_purpose::STANDARD.encode(rng.bytes(768)),
        Values::Json => {
            let namespace = ["default", "kube-system", "prod", "staging", "monitoring"][i % 5];
            let config = format!(
                "replicas: {}\nimage: registry.example.com/app-{}:v{}\ntoken: {}\nca.crt: {}\n",
                i % 7,
                i % 97,
                round,
                hex::encode(rng.bytes(24)),
                // A certificate's worth of random bytes: real objects carry some.
                base64::engine::general_purpose::STANDARD.encode(rng.bytes(80)),
            );
            // What `kubectl apply` leaves behind: the object once more, as a JSON string.
            let applied = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "namespace": namespace,
                    "annotations": {"owner": format!("team-{}", i % 13)}},
                "data": {"settings.json": format!("{{\"limit\":{}}}", i % 1000)},
            })
            .to_string();
            let doc = serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": format!("cm-{i}"),
                    "namespace": namespace,
                    "uid": format!("{}-{}-{}-{}-{}", hex::encode(rng.bytes(4)), hex::encode(rng.bytes(2)), hex::encode(rng.bytes(2)), hex::encode(rng.bytes(2)), hex::encode(rng.bytes(6))),
                    "resourceVersion": (rng.next() % 1_000_000_000).to_string(),
                    "creationTimestamp": "2026-11-30T12:00:00Z",
                    "labels": {"app": format!("app-{}", i % 97), "tier": "backend", "round": round.to_string()},
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
                    "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update",
                        "apiVersion": "v1", "time": "2026-11-30T12:00:00Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:data": {"f:config.yaml": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}}],
                },
                "data": {
                    "config.yaml": config,
                    "settings.json": format!("{{\"feature\":\"on\",\"limit\":{},\"owner\":\"team-{}\"}}", i % 1000, i % 13),
                },
            });
            doc.to_string()
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let values = match args.get(4).map(String::as_str) {
        None | Some("small") => Some(Values::Small),
        Some("random") => Some(Values::Random),
        Some("json") => Some(Values::Json),
        Some(_) => None,
    };
    let overwrites = match args.get(5) {
        None => Some(0),
        Some(n) => n.parse::<usize>().ok(),
    };
    let (Some(endpoint), Some(prefix), Some(count), Some(values), Some(overwrites)) = (
        args.get(1),
        args.get(2),
        args.get(3).and_then(|c| c.parse::<usize>().ok()),
        values,
        overwrites,
    ) else {
        eprintln!("usage: fill_keys ENDPOINT PREFIX COUNT [small|random|json] [OVERWRITES]");
        return ExitCode::from(2);
    };
    let client = match Client::connect([endpoint.as_str()], None).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fill_keys: cannot connect to {endpoint}: {e}");
            return ExitCode::from(1);
        }
    };
    // Round 0 writes every key, round 1 the first `overwrites` again.
    for (round, keys) in [(0, count), (1, overwrites.min(count))] {
        let mut tasks = Vec::new();
        for worker in 0..IN_FLIGHT {
            let mut client = client.clone();
            let prefix = prefix.clone();
            tasks.push(tokio::spawn(async move {
                let mut rng =
                    Rng(0x9E37_79B9_7F4A_7C15 ^ ((worker as u64 + 1) << 32) ^ round as u64);
                let mut i = worker;
                while i < keys {
                    let value = value(values, i, round, &mut rng);
                    client.put(format!("{prefix}{i:09}"), value, None).await?;
                    i += IN_FLIGHT;
                }
                Ok::<_, etcd_client::Error>(())
            }));
        }
        if let Err(code) = load::join_workers("fill_keys", tasks).await {
            return code;
        }
    }
    ExitCode::SUCCESS
}
