//! etcdctl's `-w protobuf`: the response message itself, encoded as etcd's API encodes it
//! (etcd's `rpc.proto` and `kv.proto`; fields at their zero value left out, as proto3 does),
//! written to stdout as is. Only the messages the read-only commands answer with are declared
//! here: `RangeResponse` (`get`), `MemberListResponse` (`member list`), `AlarmResponse`
//! (`alarm list`).

use etcdops::client::ResponseHeader;
use etcdops::kv::KeyValueView;
use etcdops::maintenance::AlarmList;
use etcdops::member::MemberList;
use prost::Message;

/// `etcdserverpb.ResponseHeader`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbHeader {
    #[prost(uint64, tag = "1")]
    cluster_id: u64,
    #[prost(uint64, tag = "2")]
    member_id: u64,
    #[prost(int64, tag = "3")]
    revision: i64,
    #[prost(uint64, tag = "4")]
    raft_term: u64,
}

impl From<&ResponseHeader> for PbHeader {
    fn from(h: &ResponseHeader) -> Self {
        PbHeader {
            cluster_id: h.cluster_id,
            member_id: h.member_id,
            revision: h.revision,
            raft_term: h.raft_term,
        }
    }
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbKeyValue {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    #[prost(int64, tag = "2")]
    create_revision: i64,
    #[prost(int64, tag = "3")]
    mod_revision: i64,
    #[prost(int64, tag = "4")]
    version: i64,
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
    #[prost(int64, tag = "6")]
    lease: i64,
}

/// `etcdserverpb.RangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbRangeResponse {
    #[prost(message, optional, tag = "1")]
    header: Option<PbHeader>,
    #[prost(message, repeated, tag = "2")]
    kvs: Vec<PbKeyValue>,
    #[prost(bool, tag = "3")]
    more: bool,
    #[prost(int64, tag = "4")]
    count: i64,
}

/// `etcdserverpb.Member`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbMember {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(string, repeated, tag = "3")]
    peer_urls: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    client_urls: Vec<String>,
    #[prost(bool, tag = "5")]
    is_learner: bool,
}

/// `etcdserverpb.MemberListResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbMemberListResponse {
    #[prost(message, optional, tag = "1")]
    header: Option<PbHeader>,
    #[prost(message, repeated, tag = "2")]
    members: Vec<PbMember>,
}

/// `etcdserverpb.AlarmMember`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbAlarmMember {
    #[prost(uint64, tag = "1")]
    member_id: u64,
    #[prost(int32, tag = "2")]
    alarm: i32,
}

/// `etcdserverpb.AlarmResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct PbAlarmResponse {
    #[prost(message, optional, tag = "1")]
    header: Option<PbHeader>,
    #[prost(message, repeated, tag = "2")]
    alarms: Vec<PbAlarmMember>,
}

/// `get`'s answer as one `RangeResponse`: every key read (a redacted value left out, as for
/// a key read without its value), whether more were left out, the count.
pub fn range_response(
    header: &ResponseHeader,
    kvs: &[KeyValueView],
    more: bool,
    count: i64,
) -> Vec<u8> {
    PbRangeResponse {
        header: Some(header.into()),
        kvs: kvs
            .iter()
            .map(|kv| PbKeyValue {
                key: kv.bytes.key.clone(),
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
                version: kv.version,
                value: kv.bytes.value.clone().unwrap_or_default(),
                lease: kv.bytes.lease,
            })
            .collect(),
        more,
        count,
    }
    .encode_to_vec()
}

/// `member list`'s `MemberListResponse`.
pub fn member_list(list: &MemberList) -> Vec<u8> {
    PbMemberListResponse {
        header: list.header.as_ref().map(PbHeader::from),
        members: list
            .members
            .iter()
            .map(|m| PbMember {
                id: m.id.0,
                name: m.name.clone(),
                peer_urls: m.peer_urls.clone(),
                client_urls: m.client_urls.clone(),
                is_learner: m.is_learner,
            })
            .collect(),
    }
    .encode_to_vec()
}

/// `alarm list`'s `AlarmResponse`.
pub fn alarms(list: &AlarmList) -> Vec<u8> {
    PbAlarmResponse {
        header: list.header.as_ref().map(PbHeader::from),
        alarms: list
            .alarms
            .iter()
            .map(|a| PbAlarmMember {
                member_id: a.member_id.0,
                alarm: a.code(),
            })
            .collect(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_fields_are_left_out_and_fields_go_in_tag_order() {
        let header = ResponseHeader {
            cluster_id: 1,
            member_id: 2,
            revision: 3,
            raft_term: 4,
        };
        // No key: the header (field 1, 8 bytes) and nothing else.
        assert_eq!(
            range_response(&header, &[], false, 0),
            [0x0a, 0x08, 0x08, 0x01, 0x10, 0x02, 0x18, 0x03, 0x20, 0x04]
        );
        // A count is field 4 (varint).
        let counted = range_response(&header, &[], false, 5);
        assert_eq!(&counted[counted.len() - 2..], &[0x20, 0x05]);
    }
}
