//! etcd's MVCC encoding inside the `key` bucket, for every reader of a db (status, restore,
//! and Kubernetes audits in etcd-k8s): revision keys and the fields of `mvccpb.KeyValue`.

/// Length of a revision key: 8-byte big-endian main revision, `_`, 8-byte sub revision.
pub const REVISION_KEY_LEN: usize = 17;

/// Main revision and tombstone mark of a revision key (`t` appended for a deletion); `None`
/// when the bytes are not a revision key.
pub fn parse_revision_key(key: &[u8]) -> Option<(i64, bool)> {
    if key.len() < REVISION_KEY_LEN || key.get(8) != Some(&b'_') {
        return None;
    }
    let main = i64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let tombstone = key.len() == REVISION_KEY_LEN + 1 && key[REVISION_KEY_LEN] == b't';
    Some((main, tombstone))
}

fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// One field of a protobuf message, as [`next_field`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoField<'a> {
    /// The field number.
    pub number: u64,
    /// Its value, for a varint field (wire type 0).
    pub varint: u64,
    /// Its bytes, for a length-delimited field (wire type 2).
    pub bytes: &'a [u8],
    /// Bytes the whole field (tag included) takes.
    pub len: usize,
}

/// The first field of `bytes`; `None` when it is cut off or of a wire type etcd's messages do
/// not use (groups).
pub fn next_field(bytes: &[u8]) -> Option<ProtoField<'_>> {
    let (tag, rest) = varint(bytes)?;
    let (varint_value, payload, rest) = match tag & 7 {
        0 => {
            let (value, rest) = varint(rest)?;
            (value, &[][..], rest)
        }
        1 => (0, rest.get(..8)?, rest.get(8..)?),
        2 => {
            let (len, rest) = varint(rest)?;
            let len = usize::try_from(len).ok()?;
            (0, rest.get(..len)?, rest.get(len..)?)
        }
        5 => (0, rest.get(..4)?, rest.get(4..)?),
        _ => return None,
    };
    Some(ProtoField {
        number: tag >> 3,
        varint: varint_value,
        bytes: if tag & 7 == 2 { payload } else { &[] },
        len: bytes.len() - rest.len(),
    })
}

/// Fields 1 (`key`) and 5 (`value`) of a protobuf `mvccpb.KeyValue`, borrowed; empty when
/// absent (a tombstone has no value); `None` when the bytes are not a valid message.
pub fn key_value_fields(mut bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (mut key, mut value): (&[u8], &[u8]) = (&[], &[]);
    while !bytes.is_empty() {
        let field = next_field(bytes)?;
        match field.number {
            1 => key = field.bytes,
            5 => value = field.bytes,
            _ => {}
        }
        bytes = &bytes[field.len..];
    }
    Some((key, value))
}

/// The fields of an `mvccpb.KeyValue` that say what it costs and who holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyValueParts<'a> {
    /// Field 1, the key.
    pub key: &'a [u8],
    /// Field 3, the revision of its last modification.
    pub mod_revision: i64,
    /// Field 5, the value (empty for a tombstone).
    pub value: &'a [u8],
    /// Field 6, the lease attached (0: none).
    pub lease: i64,
}

/// [`KeyValueParts`] of a protobuf `mvccpb.KeyValue`, borrowed; `None` when the bytes are
/// not a valid message.
pub fn key_value_parts(mut bytes: &[u8]) -> Option<KeyValueParts<'_>> {
    let mut parts = KeyValueParts::default();
    while !bytes.is_empty() {
        let field = next_field(bytes)?;
        match field.number {
            1 => parts.key = field.bytes,
            3 => parts.mod_revision = field.varint as i64,
            5 => parts.value = field.bytes,
            6 => parts.lease = field.varint as i64,
            _ => {}
        }
        bytes = &bytes[field.len..];
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_keys_and_tombstones() {
        let mut key = 42i64.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&3i64.to_be_bytes());
        assert_eq!(parse_revision_key(&key), Some((42, false)));
        key.push(b't');
        assert_eq!(parse_revision_key(&key), Some((42, true)));
        assert_eq!(parse_revision_key(&key[..9]), None);
        key[8] = b'x';
        assert_eq!(parse_revision_key(&key), None);
    }

    #[test]
    fn keyvalue_fields_are_found_past_other_fields() {
        // KeyValue{create_revision: 2 (field 2), key: "foo" (field 1), value: "bar"}.
        let kv = [
            0x10, 0x02, 0x0a, 3, b'f', b'o', b'o', 0x2a, 3, b'b', b'a', b'r',
        ];
        assert_eq!(key_value_fields(&kv), Some((&b"foo"[..], &b"bar"[..])));
        assert_eq!(
            key_value_fields(&[0x0a, 1, b'k']),
            Some((&b"k"[..], &b""[..]))
        );
        assert_eq!(key_value_fields(&[0x10]), None, "truncated varint");
        assert_eq!(
            key_value_fields(&[0x0a, 9, b'x']),
            None,
            "length past the end"
        );
        assert_eq!(key_value_fields(&[0x0b]), None, "wire type 3");
        assert_eq!(key_value_fields(&[]), Some((&b""[..], &b""[..])));
        // KeyValue{key: "k", mod_revision: 300, value: "v", lease: 0x1234}.
        let kv = [
            0x0a, 1, b'k', 0x18, 0xac, 0x02, 0x2a, 1, b'v', 0x30, 0xb4, 0x24,
        ];
        let parts = key_value_parts(&kv).unwrap();
        assert_eq!(
            (parts.key, parts.mod_revision, parts.value, parts.lease),
            (&b"k"[..], 300, &b"v"[..], 0x1234)
        );
    }
}
