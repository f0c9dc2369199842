//! `--force-new-cluster` in a static pod manifest: added to the etcd container's command for
//! the one start that recovers a lost quorum, removed for every normal start. The manifest is
//! edited as text (its comments and layout stay) and the edit is checked by parsing the result:
//! the etcd container's command must differ by exactly that flag, and nothing else may change.

use std::io::Write;
use std::path::Path;

use serde_yaml_ng::Value;

use crate::error::{K8sError, Result};

/// The flag, as the etcd container's command carries it.
pub const FORCE_NEW_CLUSTER_FLAG: &str = "--force-new-cluster";

fn is_flag(word: &str) -> bool {
    word == FORCE_NEW_CLUSTER_FLAG || word == "--force-new-cluster=true"
}

/// The etcd container's `command` words, or why there are none to edit.
fn etcd_command(pod: &Value) -> std::result::Result<Vec<String>, String> {
    let containers = pod
        .get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_sequence)
        .ok_or("no spec.containers: not a pod manifest")?;
    let container = containers
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some("etcd"))
        .ok_or("no container named etcd")?;
    let words: Vec<String> = container
        .get("command")
        .and_then(Value::as_sequence)
        .ok_or("the etcd container has no command list")?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let runs_etcd = words
        .first()
        .is_some_and(|w| Path::new(w).file_name().is_some_and(|n| n == "etcd"));
    if !runs_etcd {
        return Err(
            "the etcd container's command does not start etcd itself (a shell script?)".into(),
        );
    }
    Ok(words)
}

/// `pod` with the flag dropped from every container's command, to compare the rest.
fn without_flag(mut pod: Value) -> Value {
    if let Some(containers) = pod
        .get_mut("spec")
        .and_then(|s| s.get_mut("containers"))
        .and_then(Value::as_sequence_mut)
    {
        for container in containers {
            if let Some(command) = container
                .get_mut("command")
                .and_then(Value::as_sequence_mut)
            {
                command.retain(|w| !w.as_str().is_some_and(is_flag));
            }
        }
    }
    pod
}

/// The etcd container's words that set the flag otherwise than the command's
/// `--force-new-cluster` or `--force-new-cluster=true`: another spelling Go's flag package
/// reads (`-force-new-cluster`, `=True`, `=false`, ...) or any in `args`. Editing around them
/// could leave a normal start forcing or a forced one not.
fn odd_spellings(pod: &Value) -> Vec<String> {
    let Some(container) = pod
        .get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_sequence)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("name").and_then(Value::as_str) == Some("etcd"))
        })
    else {
        return Vec::new();
    };
    let names_flag = |w: &str| {
        let bare = w.trim_start_matches('-');
        w.starts_with('-')
            && (bare == "force-new-cluster" || bare.starts_with("force-new-cluster="))
    };
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
    let mut odd: Vec<String> = words("command")
        .into_iter()
        .filter(|w| names_flag(w) && !is_flag(w))
        .collect();
    odd.extend(words("args").into_iter().filter(|w| names_flag(w)));
    odd
}

fn parse(path: &Path, text: &str) -> Result<Value> {
    serde_yaml_ng::from_str(text).map_err(|e| K8sError::BadConfig {
        path: path.display().to_string(),
        reason: format!(
            "not a YAML pod manifest ({e}); fix the file (the kubelet cannot run it either)"
        ),
    })
}

/// Whether the block-list item `line` is the word `word` (plain or quoted).
fn item_is(line: &str, word: &str) -> bool {
    let Some(item) = line.trim().strip_prefix("- ") else {
        return false;
    };
    let item = item.trim();
    item == word || item == format!("\"{word}\"") || item == format!("'{word}'")
}

/// The manifest text with `--force-new-cluster` in the etcd container's command (`on`) or
/// without it; `None` when it already is so. Fails, changing nothing, when the command cannot
/// be edited safely (no etcd container, a shell-script command, a flow-style list).
pub fn set_force_new_cluster(path: &Path, text: &str, on: bool) -> Result<Option<String>> {
    let pod = parse(path, text)?;
    let cannot = |why: String| K8sError::BadConfig {
        path: path.display().to_string(),
        reason: format!(
            "cannot {} {FORCE_NEW_CLUSTER_FLAG} in the etcd container's command: {why}; edit the manifest by hand",
            if on { "add" } else { "remove" }
        ),
    };
    let words = match etcd_command(&pod) {
        Ok(words) => words,
        // A command this cannot read never got the flag from it: a normal start goes on.
        Err(_) if !on => return Ok(None),
        Err(why) => return Err(cannot(why)),
    };
    let odd = odd_spellings(&pod);
    if !odd.is_empty() {
        return Err(cannot(format!(
            "it already holds {} (a spelling or a place, the container's args, this edit does not handle; etcd reads it)",
            odd.join(", ")
        )));
    }
    let has = words.iter().any(|w| is_flag(w));
    if has == on {
        return Ok(None);
    }
    let edited = if on {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let at = lines
            .iter()
            .position(|l| item_is(l, &words[0]))
            .ok_or_else(|| cannot(format!("no block-list line '- {}'", words[0])))?;
        let indent: String = lines[at]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        let mut out = String::with_capacity(text.len() + 32);
        for (n, line) in lines.iter().enumerate() {
            out.push_str(line);
            if n == at {
                if !line.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&format!("{indent}- {FORCE_NEW_CLUSTER_FLAG}\n"));
            }
        }
        out
    } else {
        text.split_inclusive('\n')
            .filter(|l| {
                !(item_is(l, FORCE_NEW_CLUSTER_FLAG) || item_is(l, "--force-new-cluster=true"))
            })
            .collect()
    };
    // The edit must change exactly the flag in the etcd container's command.
    let after = parse(path, &edited)?;
    let after_words = etcd_command(&after).map_err(&cannot)?;
    let flag_ok = after_words.iter().any(|w| is_flag(w)) == on;
    if !flag_ok || without_flag(after) != without_flag(pod) {
        return Err(cannot(
            "the text edit would change more than the flag".into(),
        ));
    }
    Ok(Some(edited))
}

/// Replaces `path` with `text` so that a reader sees the old or the new file, never half: a
/// hidden temporary file beside it (the kubelet ignores dot files), synced, then renamed.
pub(crate) fn replace_file(path: &Path, text: &str) -> Result<()> {
    let io = |operation: &'static str| {
        move |source| K8sError::Io {
            operation,
            path: path.display().to_string(),
            source,
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.etcdops-edit"));
    // A copy a killed run left is ours to replace (never written through: created anew).
    match std::fs::remove_file(&temp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(io("remove an old temporary copy of")(e));
        }
        _ => {}
    }
    let mut file =
        etcd_common::private::create_new_file(&temp).map_err(io("create a temporary copy of"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io("write a temporary copy of"))?;
    // Created private; the manifest's own mode once complete.
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = file.set_permissions(meta.permissions());
    }
    std::fs::rename(&temp, path).map_err(io("replace"))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
#[path = "force_new_cluster_spellings.rs"]
mod spelling_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest as kubeadm 1.30 writes it (trimmed of the volume list).
    const KUBEADM: &str = "\
apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.1:2379
  creationTimestamp: null
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://10.0.0.1:2379
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --data-dir=/var/lib/etcd
    - --name=cp0
    # kept: a comment in the command list
    - --snapshot-count=10000
    image: registry.k8s.io/etcd:3.5.15-0
    imagePullPolicy: IfNotPresent
    name: etcd
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
  hostNetwork: true
";

    fn words(text: &str) -> Vec<String> {
        etcd_command(&serde_yaml_ng::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn the_flag_is_added_after_etcd_and_removed_again_leaving_the_file_as_it_was() {
        let path = Path::new("/etc/kubernetes/manifests/etcd.yaml");
        let forced = set_force_new_cluster(path, KUBEADM, true).unwrap().unwrap();
        assert_eq!(words(&forced)[..2], ["etcd", "--force-new-cluster"]);
        assert_eq!(words(&forced).len(), words(KUBEADM).len() + 1);
        assert!(forced.contains("    - etcd\n    - --force-new-cluster\n    - --advertise"));
        assert!(forced.contains("# kept: a comment"), "comments stay");
        // Already so: nothing to do, both ways.
        assert_eq!(set_force_new_cluster(path, &forced, true).unwrap(), None);
        assert_eq!(set_force_new_cluster(path, KUBEADM, false).unwrap(), None);
        // A normal start takes it out again: byte for byte the original.
        let normal = set_force_new_cluster(path, &forced, false)
            .unwrap()
            .unwrap();
        assert_eq!(normal, KUBEADM);
    }

    #[test]
    fn a_flag_given_as_true_is_removed_too() {
        let path = Path::new("etcd.yaml");
        let text = KUBEADM.replace(
            "    - --name=cp0\n",
            "    - --name=cp0\n    - \"--force-new-cluster=true\"\n",
        );
        assert!(words(&text).iter().any(|w| w == "--force-new-cluster=true"));
        let normal = set_force_new_cluster(path, &text, false).unwrap().unwrap();
        assert_eq!(normal, KUBEADM);
    }

    #[test]
    fn commands_it_cannot_edit_safely_are_refused_with_what_to_do() {
        let path = Path::new("etcd.yaml");
        let script = KUBEADM.replace(
            "  - command:\n    - etcd\n",
            "  - command:\n    - /bin/sh\n    - -c\n    - etcd\n",
        );
        let err = set_force_new_cluster(path, &script, true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("does not start etcd itself") && err.contains("by hand"),
            "{err}"
        );
        let flow = KUBEADM.replace(
            "  - command:\n    - etcd\n",
            "  - command: [etcd, --x=1]\n    args:\n",
        );
        let err = set_force_new_cluster(path, &flow, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no block-list line"), "{err}");
        let other = KUBEADM.replace(
            "    name: etcd\n    volumeMounts",
            "    name: db\n    volumeMounts",
        );
        let err = set_force_new_cluster(path, &other, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no container named etcd"), "{err}");
        let err = set_force_new_cluster(path, "spec: [", true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a YAML pod manifest"), "{err}");
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_leaves_no_temporary_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.yaml");
        std::fs::write(&path, KUBEADM).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        replace_file(&path, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
    }
}
