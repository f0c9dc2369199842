//! Pieces of etcdctl's `-w json` shared by the commands' `Render::etcdctl_json`: its response
//! header, its IDs (numbers, or hex strings under `--hex`), Go's `omitempty`, base64 bytes.

use base64::Engine;
use etcdops::client::ResponseHeader;
use serde_json::{Map, Value};

/// An ID as etcdctl prints it: a JSON number, or with `--hex` a hex string.
pub fn id(value: u64, hex: bool) -> Value {
    if hex {
        Value::from(format!("{value:x}"))
    } else {
        Value::from(value)
    }
}

/// etcdctl's `header` object: zero fields left out as Go's `omitempty` does.
pub fn header(header: &ResponseHeader, hex: bool) -> Value {
    let mut map = Map::new();
    if header.cluster_id != 0 {
        map.insert("cluster_id".into(), id(header.cluster_id, hex));
    }
    if header.member_id != 0 {
        map.insert("member_id".into(), id(header.member_id, hex));
    }
    if header.revision != 0 {
        map.insert("revision".into(), header.revision.into());
    }
    if header.raft_term != 0 {
        map.insert("raft_term".into(), header.raft_term.into());
    }
    Value::Object(map)
}

/// Inserts `value` under `name` unless it is Go's zero value (`0`, `false`, `""`, `[]`, `{}`,
/// null), as `omitempty` does.
pub fn put(map: &mut Map<String, Value>, name: &str, value: impl Into<Value>) {
    let value = value.into();
    let zero = match &value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    };
    if !zero {
        map.insert(name.to_string(), value);
    }
}

/// Bytes as Go's `encoding/json` prints a `[]byte`: standard base64.
pub fn bytes(value: &[u8]) -> Value {
    Value::from(base64::engine::general_purpose::STANDARD.encode(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_leaves_zero_fields_out_as_go_does() {
        let h = ResponseHeader {
            cluster_id: 17497139193859109479,
            member_id: 14423874141243768641,
            revision: 0,
            raft_term: 2,
        };
        // member-list.json of the etcd 3.6.14 fixture: member list's header has no revision.
        assert_eq!(
            header(&h, false).to_string(),
            r#"{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"raft_term":2}"#
        );
        assert_eq!(header(&h, true)["member_id"], "c82be51c49c6ff41");
    }

    #[test]
    fn omitempty_drops_zero_values_only() {
        let mut map = Map::new();
        put(&mut map, "zero", 0);
        put(&mut map, "no", false);
        put(&mut map, "empty", "");
        put(&mut map, "one", 1);
        put(&mut map, "yes", true);
        assert_eq!(Value::Object(map).to_string(), r#"{"one":1,"yes":true}"#);
        assert_eq!(bytes(b"z"), "eg==");
    }
}
