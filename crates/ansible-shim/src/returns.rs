//! Return values shaped for plays: names that a Jinja expression can reach and the flat names
//! simple plays want.
//!
//! A return value named like a method of Python's `dict` (`keys`, `items`, `values`, `get`,
//! ...) is shadowed in Jinja: `{{ r.keys }}` is the method, not the value. Such values were
//! renamed ([`RENAMED`]); the old name is still returned, documented as deprecated, until
//! 0.7.0. `etcd_cluster_info` also gets flat names ([`flatten_cluster_info`]).

use serde_json::{Map, Value};

/// The public methods of Python's `dict`: no return value may be named so.
pub const DICT_METHODS: &[&str] = &[
    "clear",
    "copy",
    "fromkeys",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];

/// The collection version that drops the old names of [`RENAMED`].
pub const RENAMED_REMOVED_IN: &str = "0.7.0";

/// A return value renamed: in `module`'s result, in every mapping at `path` (lists walked
/// through), `old` is also returned as `new`.
#[derive(Debug, Clone, Copy)]
pub struct Renamed {
    /// The module.
    pub module: &'static str,
    /// Keys from the result's top to the mappings holding the value (empty: the top).
    pub path: &'static [&'static str],
    /// The old name (deprecated, removed in [`RENAMED_REMOVED_IN`]).
    pub old: &'static str,
    /// The new name.
    pub new: &'static str,
}

/// Every renamed return value.
pub const RENAMED: &[Renamed] = &[
    Renamed {
        module: "etcd_lease_info",
        path: &["leases"],
        old: "keys",
        new: "key_count",
    },
    Renamed {
        module: "etcd_lease_info",
        path: &["lease"],
        old: "keys",
        new: "attached_keys",
    },
    Renamed {
        module: "etcd_usage_info",
        path: &[],
        old: "keys",
        new: "key_count",
    },
    Renamed {
        module: "etcd_usage_info",
        path: &["groups", "groups"],
        old: "keys",
        new: "key_count",
    },
    Renamed {
        module: "etcd_encryption_info",
        path: &[],
        old: "keys",
        new: "formats",
    },
    Renamed {
        module: "etcd_snapshot_info",
        path: &["status", "buckets"],
        old: "keys",
        new: "key_count",
    },
];

/// Adds the new names of [`RENAMED`] and the flat names to `module`'s return values.
pub fn shape(module: &str, values: &mut Map<String, Value>) {
    for renamed in RENAMED.iter().filter(|r| r.module == module) {
        let mut top = Value::Object(std::mem::take(values));
        copy_at(&mut top, renamed.path, renamed.old, renamed.new);
        if let Value::Object(map) = top {
            *values = map;
        }
    }
    if module == "etcd_cluster_info" {
        flatten_cluster_info(values);
    }
}

/// Copies `old` to `new` in every mapping at `path` under `value`, lists walked through.
fn copy_at(value: &mut Value, path: &[&str], old: &str, new: &str) {
    match value {
        Value::Array(items) => {
            for item in items {
                copy_at(item, path, old, new);
            }
        }
        Value::Object(map) => match path.split_first() {
            Some((first, rest)) => {
                if let Some(inner) = map.get_mut(*first) {
                    copy_at(inner, rest, old, new);
                }
            }
            None => {
                if let Some(v) = map.get(old).cloned() {
                    map.entry(new.to_string()).or_insert(v);
                }
            }
        },
        _ => {}
    }
}

/// `etcd_cluster_info`'s flat names: `leader_name` beside the leader's ID, and on each entry of
/// `members` its `name`, `id` and `is_learner` (from `member`) and `is_leader` (from `status`),
/// so that `members | selectattr('is_leader') | map(attribute='name')` needs no nesting.
pub fn flatten_cluster_info(values: &mut Map<String, Value>) {
    let leader = values
        .get("leader")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut leader_name = Value::Null;
    if let Some(Value::Array(members)) = values.get_mut("members") {
        for entry in members.iter_mut() {
            let Value::Object(entry) = entry else {
                continue;
            };
            let member = entry.get("member").cloned().unwrap_or(Value::Null);
            for field in ["name", "id", "is_learner"] {
                let v = member.get(field).cloned().unwrap_or(Value::Null);
                entry.entry(field.to_string()).or_insert(v);
            }
            let is_leader =
                leader.is_some() && member.get("id").and_then(Value::as_str) == leader.as_deref();
            entry.insert("is_leader".into(), Value::Bool(is_leader));
            if is_leader {
                leader_name = member.get("name").cloned().unwrap_or(Value::Null);
            }
        }
    }
    values.insert("leader_name".into(), leader_name);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renamed_values_are_returned_under_both_names() {
        let mut values = json!({
            "leases": [{"id": "a", "keys": 1}, {"id": "b", "keys": 0}],
        })
        .as_object()
        .unwrap()
        .clone();
        shape("etcd_lease_info", &mut values);
        assert_eq!(values["leases"][0]["key_count"], json!(1));
        assert_eq!(values["leases"][1]["key_count"], json!(0));
        assert_eq!(values["leases"][0]["keys"], json!(1));
        let mut values = json!({"groups": [{"by": "prefix", "groups": [{"keys": 3}]}], "keys": 9})
            .as_object()
            .unwrap()
            .clone();
        shape("etcd_usage_info", &mut values);
        assert_eq!(values["key_count"], json!(9));
        assert_eq!(values["groups"][0]["groups"][0]["key_count"], json!(3));
    }

    #[test]
    fn cluster_info_names_the_leader_and_flattens_members() {
        let mut values = json!({
            "leader": "2",
            "members": [
                {"member": {"id": "1", "name": "a", "is_learner": false}, "status": null},
                {"member": {"id": "2", "name": "b", "is_learner": false}},
            ],
        })
        .as_object()
        .unwrap()
        .clone();
        flatten_cluster_info(&mut values);
        assert_eq!(values["leader_name"], json!("b"));
        assert_eq!(values["members"][0]["name"], json!("a"));
        assert_eq!(values["members"][0]["is_leader"], json!(false));
        assert_eq!(values["members"][1]["is_leader"], json!(true));
        let mut no_leader = json!({"leader": null, "members": [{"member": {"id": "1"}}]})
            .as_object()
            .unwrap()
            .clone();
        flatten_cluster_info(&mut no_leader);
        assert_eq!(no_leader["leader_name"], Value::Null);
        assert_eq!(no_leader["members"][0]["is_leader"], json!(false));
    }
}
