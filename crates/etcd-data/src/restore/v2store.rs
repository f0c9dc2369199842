//! The v2 store JSON inside a restored member's `.snap` file: the raft attributes of each
//! member under `/0/members/<hex id>/raftAttributes`, an empty `/1`, and the event history
//! of their creation (one `create` event per member, in a queue of exactly `Capacity` slots,
//! which etcd indexes without checking), with the store's stats, as etcd's restore leaves
//! them (3.6 also counts the failed get of its check that no member is there yet).

use std::collections::BTreeMap;

use serde::Serialize;

use super::ids::RestoredMember;

/// Events etcd's v2 store keeps in its history.
const EVENT_HISTORY_CAPACITY: usize = 1000;
/// `time.Time{}` in Go's JSON: a permanent node.
const PERMANENT: &str = "0001-01-01T00:00:00Z";

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Node {
    path: String,
    created_index: u64,
    modified_index: u64,
    expire_time: &'static str,
    value: String,
    children: Option<BTreeMap<String, Node>>,
}

impl Node {
    fn dir(path: String, index: u64) -> Node {
        Node {
            path,
            created_index: index,
            modified_index: index,
            expire_time: PERMANENT,
            value: String::new(),
            children: Some(BTreeMap::new()),
        }
    }

    fn add(&mut self, name: &str, node: Node) -> Option<&mut Node> {
        let children = self.children.as_mut()?;
        Some(children.entry(name.to_string()).or_insert(node))
    }
}

/// A node as an event shows it (Go's `NodeExtern`).
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct EventNode {
    key: String,
    value: String,
    modified_index: u64,
    created_index: u64,
}

/// One v2 store event.
#[derive(Serialize, Clone)]
struct Event {
    action: &'static str,
    node: EventNode,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct EventQueue {
    events: Vec<Option<Event>>,
    size: usize,
    front: usize,
    back: usize,
    capacity: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct EventHistory {
    queue: EventQueue,
    start_index: u64,
    last_index: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WatcherHub {
    event_history: EventHistory,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Stats {
    gets_success: u64,
    gets_fail: u64,
    sets_success: u64,
    sets_fail: u64,
    delete_success: u64,
    delete_fail: u64,
    update_success: u64,
    update_fail: u64,
    create_success: u64,
    create_fail: u64,
    compare_and_swap_success: u64,
    compare_and_swap_fail: u64,
    compare_and_delete_success: u64,
    compare_and_delete_fail: u64,
    expire_count: u64,
    watchers: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Store {
    root: Node,
    watcher_hub: WatcherHub,
    current_index: u64,
    stats: Stats,
    current_version: u32,
}

#[derive(Serialize)]
struct RaftAttributes<'a> {
    #[serde(rename = "peerURLs")]
    peer_urls: &'a [String],
}

/// The v2 store JSON for `members` (sorted by ID; etcd adds them in its map's order, which
/// changes from run to run), as etcd's restore saves it; `checked_empty`: count the failed
/// get of etcd 3.6's check that the store holds no member yet.
pub fn store_json(
    members: &[RestoredMember],
    checked_empty: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut events = Vec::new();
    let mut root = Node::dir("/".into(), 0);
    let mut cluster = Node::dir("/0".into(), 0);
    root.add("1", Node::dir("/1".into(), 0));
    let mut index = 0;
    for member in members {
        index += 1;
        let hex = format!("{:x}", member.id);
        let value = serde_json::to_string(&RaftAttributes {
            peer_urls: &member.peer_urls,
        })?;
        let Some(dir) = cluster.add("members", Node::dir("/0/members".into(), index)) else {
            continue;
        };
        let member_path = format!("/0/members/{hex}");
        let Some(member_dir) = dir.add(&hex, Node::dir(member_path.clone(), index)) else {
            continue;
        };
        events.push(Event {
            action: "create",
            node: EventNode {
                key: format!("{member_path}/raftAttributes"),
                value: value.clone(),
                modified_index: index,
                created_index: index,
            },
        });
        member_dir.add(
            "raftAttributes",
            Node {
                path: format!("{member_path}/raftAttributes"),
                created_index: index,
                modified_index: index,
                expire_time: PERMANENT,
                value,
                children: None,
            },
        );
    }
    root.add("0", cluster);
    let created = events.len().min(EVENT_HISTORY_CAPACITY);
    let mut queue: Vec<Option<Event>> = events.into_iter().take(created).map(Some).collect();
    queue.resize(EVENT_HISTORY_CAPACITY, None);
    let store = Store {
        root,
        watcher_hub: WatcherHub {
            event_history: EventHistory {
                queue: EventQueue {
                    events: queue,
                    size: created,
                    front: 0,
                    back: created % EVENT_HISTORY_CAPACITY,
                    capacity: EVENT_HISTORY_CAPACITY,
                },
                start_index: u64::from(created > 0),
                last_index: index,
            },
        },
        current_index: index,
        stats: Stats {
            gets_fail: u64::from(checked_empty),
            create_success: index,
            ..Stats::default()
        },
        current_version: 2,
    };
    serde_json::to_vec(&store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_a_full_event_queue_are_written() {
        let members = vec![RestoredMember {
            id: 0xabc,
            name: "a".into(),
            peer_urls: vec!["http://127.0.0.1:1".into()],
        }];
        let json: serde_json::Value =
            serde_json::from_slice(&store_json(&members, true).unwrap()).unwrap();
        let attrs = &json["Root"]["Children"]["0"]["Children"]["members"]["Children"]["abc"]["Children"]
            ["raftAttributes"];
        assert_eq!(attrs["Path"], "/0/members/abc/raftAttributes");
        assert_eq!(attrs["Value"], r#"{"peerURLs":["http://127.0.0.1:1"]}"#);
        assert_eq!(json["Root"]["Children"]["1"]["Path"], "/1");
        let queue = &json["WatcherHub"]["EventHistory"]["Queue"];
        assert_eq!(queue["Events"].as_array().unwrap().len(), 1000);
        assert_eq!(queue["Capacity"], 1000);
        assert_eq!(json["CurrentIndex"], 1);
        let event = &queue["Events"][0];
        assert_eq!(event["action"], "create");
        assert_eq!(event["node"]["key"], "/0/members/abc/raftAttributes");
        assert_eq!(event["node"]["createdIndex"], 1);
        assert!(queue["Events"][1].is_null());
        assert_eq!(
            (queue["Size"].as_u64(), queue["Back"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(json["Stats"]["createSuccess"], 1);
        assert_eq!(json["Stats"]["getsFail"], 1);
    }
}
