//! `set_force_new_cluster` on static pod manifests that spell the flag every way etcd reads it
//! (in `command` or `args`, `--flag`, `--flag=true|false`, `-flag`): after a normal start no
//! spelling still forces, and a forced start really forces.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::Path;

use serde_yaml_ng::Value;

use crate::set_force_new_cluster;

fn manifest(command: &[&str], args: &[&str]) -> String {
    let list = |words: &[&str]| {
        words
            .iter()
            .map(|w| format!("    - {w}\n"))
            .collect::<String>()
    };
    let args = if args.is_empty() {
        String::new()
    } else {
        format!("    args:\n{}", list(args))
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: etcd\n    image: registry.k8s.io/etcd:3.5.15-0\n    command:\n{}{args}  hostNetwork: true\n",
        list(command)
    )
}

/// Whether etcd, started from `text`, forces a new cluster: Go's flag package takes
/// `-flag` and `--flag`, `=1/t/T/TRUE/true/True` (and the false ones), the last one winning;
/// a container's `args` follow its `command`.
fn forces(text: &str) -> bool {
    let pod: Value = serde_yaml_ng::from_str(text).unwrap();
    let container = &pod["spec"]["containers"][0];
    let words = |key: &str| -> Vec<String> {
        container
            .get(key)
            .and_then(Value::as_sequence)
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut on = false;
    for word in words("command").into_iter().chain(words("args")) {
        let bare = word.trim_start_matches('-');
        if word.starts_with('-')
            && (bare == "force-new-cluster" || bare.starts_with("force-new-cluster="))
        {
            on = match bare.split_once('=') {
                None => true,
                Some((_, v)) => matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True"),
            };
        }
    }
    on
}

/// A flag left from a manual attempt in a spelling Go accepts: the "normal" start after the
/// recovery must not force again (a second forced start drops the members that rejoined).
#[test]
fn a_normal_start_never_leaves_a_forcing_flag_in_any_spelling() {
    let path = Path::new("/etc/kubernetes/manifests/etcd.yaml");
    for left in [
        "-force-new-cluster",
        "--force-new-cluster=True",
        "--force-new-cluster=1",
    ] {
        let text = manifest(&["etcd", "--data-dir=/var/lib/etcd", left], &[]);
        assert!(forces(&text));
        match set_force_new_cluster(path, &text, false) {
            Ok(Some(edited)) => assert!(!forces(&edited), "{left} still forces:\n{edited}"),
            Ok(None) => {
                panic!("{left} left in place: every later start of etcd forces a new cluster")
            }
            Err(_) => {} // refused, saying so: fine
        }
    }
    // The flag in the container's args (a command of just `etcd`).
    let text = manifest(
        &["etcd"],
        &["--data-dir=/var/lib/etcd", "--force-new-cluster"],
    );
    assert!(forces(&text));
    match set_force_new_cluster(path, &text, false) {
        Ok(Some(edited)) => assert!(!forces(&edited), "still forces:\n{edited}"),
        Ok(None) => panic!("--force-new-cluster in args left in place: every later start forces"),
        Err(_) => {}
    }
}

/// `--force-new-cluster=false` already in the command: the flag added after `etcd` comes
/// first and the later `=false` wins, so the "forced" start is a normal one.
#[test]
fn a_forced_start_really_forces_when_the_manifest_says_false() {
    let path = Path::new("/etc/kubernetes/manifests/etcd.yaml");
    let text = manifest(
        &[
            "etcd",
            "--data-dir=/var/lib/etcd",
            "--force-new-cluster=false",
        ],
        &[],
    );
    match set_force_new_cluster(path, &text, true) {
        Ok(Some(edited)) => assert!(forces(&edited), "the edit does not force:\n{edited}"),
        Ok(None) => panic!("nothing edited, etcd does not force"),
        Err(_) => {}
    }
}
