//! Reads given several endpoints go on to the next one when an endpoint fails, as etcdctl's
//! client does; writes do not.

use std::net::TcpListener;

use etcdops_tests::{Cluster, Security, args, block_on, etcdops};

use crate::assert_clear_error;

/// A TCP server that accepts connections and never answers (a hung or overloaded member).
fn silent_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    url
}

/// A TCP server that accepts connections and closes them at once (a member going down).
fn closing_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    url
}

fn with_first(first: &str, cluster: &Cluster, rest: &[&str]) -> etcdops_tests::Run {
    let endpoints = format!("{first},{}", cluster.endpoints());
    let mut a = args(&[
        "--endpoints",
        &endpoints,
        "--dial-timeout",
        "1s",
        "--command-timeout",
        "1s",
    ]);
    a.extend(args(rest));
    etcdops(&a, &[])
}

#[test]
fn reads_go_on_to_the_next_endpoint_when_one_fails() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put("failover/key", "value");
    for first in [silent_endpoint(), closing_endpoint()] {
        let members = with_first(&first, &cluster, &["member", "list", "-w", "json"]);
        members.expect_code(0);
        assert_eq!(members.json()["members"].as_array().unwrap().len(), 3);

        let get = with_first(&first, &cluster, &["get", "failover/key", "-w", "json"]);
        get.expect_code(0);
        assert_eq!(get.json()["kvs"][0]["value"], "value", "{get}");

        for read in [
            &["get", "failover/", "--prefix", "--keys-only"][..],
            &["get", "failover/key", "--count-only"][..],
            &["history", "failover/key"][..],
            &["lease", "list"][..],
            &["alarm", "list"][..],
            &["auth", "status"][..],
            &["user", "list"][..],
            &["role", "list"][..],
        ] {
            with_first(&first, &cluster, read).expect_code(0);
        }
    }

    // An answer from etcd is not an endpoint failure: permission denied is not asked again
    // elsewhere (the next endpoint here would only fail).
    let auth = Cluster::start(1, Security::Auth);
    block_on(async {
        let mut client = auth.client().await;
        client.user_add("reader", "reader-pw", None).await?;
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let denied = etcdops(
        &args(&[
            "--endpoints",
            &format!("{},{}", auth.endpoints(), closing_endpoint()),
            "--user",
            "reader:reader-pw",
            "get",
            "foo",
        ]),
        &[],
    );
    assert_clear_error(&denied, "permission denied");
    assert!(denied.stderr.contains(&auth.endpoints()), "{denied}");
    assert!(!denied.stderr.contains("no endpoint answered"), "{denied}");

    // A write is not sent elsewhere: it might have been applied where it timed out.
    let silent = silent_endpoint();
    let compact = with_first(&silent, &cluster, &["compact", "1"]);
    assert_clear_error(&compact, &silent);

    // The first member killed: its endpoint refuses, the next answers.
    cluster.kill_member_now(0);
    let members = etcdops(
        &args(&[
            "--endpoints",
            &cluster.endpoints(),
            "member",
            "list",
            "-w",
            "json",
        ]),
        &[],
    );
    members.expect_code(0);
    assert_eq!(members.json()["members"].as_array().unwrap().len(), 3);
}
