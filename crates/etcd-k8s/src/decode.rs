//! Decoding what kube-apiserver stores, for diagnostics: JSON objects (Secret data redacted),
//! protobuf objects (the `k8s\0` magic and a runtime.Unknown envelope) down to apiVersion,
//! kind, namespace, name, uid and size, and encrypted values reported as such.

use etcd_core::{Client, ClusterConfig, GetRequest, GetSummary, is_kubernetes_secret};
use futures::StreamExt;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::error::{K8sError, Result};
use crate::scan::raw_value;
use crate::value::{PROTOBUF_MAGIC, PlainFormat, Storage, classify};
use etcd_common::Hint;

use etcd_common::options::PREFIX_SWITCH;

/// The annotation `kubectl apply` leaves behind: for a Secret it holds the data again.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// runtime.Unknown: the envelope of every protobuf-encoded object.
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
    #[prost(string, tag = "3")]
    content_encoding: String,
    #[prost(string, tag = "4")]
    content_type: String,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
}

/// Any object: every Kubernetes type keeps its ObjectMeta in field 1.
#[derive(Clone, PartialEq, Message)]
struct AnyObject {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "3")]
    namespace: String,
    #[prost(string, tag = "5")]
    uid: String,
    #[prost(string, tag = "6")]
    resource_version: String,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<Time>,
}

#[derive(Clone, PartialEq, Message)]
struct Time {
    #[prost(int64, tag = "1")]
    seconds: i64,
}

/// What a stored value holds, as far as it can be read without keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodedValue {
    /// The etcd key.
    pub key: String,
    /// Revision of its last change (absent when decoded from bytes alone).
    pub mod_revision: Option<i64>,
    /// Size of the stored value.
    pub value_size: usize,
    /// How it is stored.
    #[serde(flatten)]
    pub storage: Storage,
    /// apiVersion.
    pub api_version: Option<String>,
    /// kind.
    pub kind: Option<String>,
    /// metadata.namespace.
    pub namespace: Option<String>,
    /// metadata.name.
    pub name: Option<String>,
    /// metadata.uid.
    pub uid: Option<String>,
    /// metadata.creationTimestamp (RFC 3339).
    pub creation_timestamp: Option<String>,
    /// For protobuf: the size of the object inside the envelope.
    pub object_size: Option<usize>,
    /// The whole object, for JSON values (a Secret's data redacted).
    pub object: Option<serde_json::Value>,
    /// What could not be shown, and why.
    pub note: Option<String>,
}

impl DecodedValue {
    fn empty(key: &str, value: &[u8], storage: Storage) -> Self {
        DecodedValue {
            key: key.to_string(),
            mod_revision: None,
            value_size: value.len(),
            storage,
            api_version: None,
            kind: None,
            namespace: None,
            name: None,
            uid: None,
            creation_timestamp: None,
            object_size: None,
            object: None,
            note: None,
        }
    }
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Replaces a Secret's data (and kubectl's copy of it) with its sizes.
fn redact_secret(object: &mut serde_json::Value) -> bool {
    let mut redacted = false;
    for field in ["data", "stringData"] {
        if let Some(map) = object.get_mut(field).and_then(|d| d.as_object_mut()) {
            for value in map.values_mut() {
                let size = value.as_str().map_or(0, str::len);
                *value = serde_json::Value::String(format!("<redacted, {size} bytes>"));
                redacted = true;
            }
        }
    }
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.as_object_mut())
        && let Some(applied) = annotations.get_mut(LAST_APPLIED)
    {
        *applied = serde_json::Value::String("<redacted>".into());
        redacted = true;
    }
    redacted
}

/// Decodes one stored value. Secret data never appears in the result.
pub fn decode_value(key: &str, value: &[u8]) -> DecodedValue {
    let storage = classify(value);
    let mut out = DecodedValue::empty(key, value, storage.clone());
    match storage {
        Storage::Encrypted { provider, key_name } => {
            out.note = Some(format!(
                "encrypted by {provider} with key {key_name}: not decrypted"
            ));
        }
        Storage::Plaintext {
            format: PlainFormat::Json,
        } => match serde_json::from_slice::<serde_json::Value>(value) {
            Ok(mut object) => {
                let text = |p: &str| object.pointer(p).and_then(|v| v.as_str()).map(String::from);
                out.api_version = text("/apiVersion");
                out.kind = text("/kind");
                out.namespace = text("/metadata/namespace");
                out.name = text("/metadata/name");
                out.uid = text("/metadata/uid");
                out.creation_timestamp = text("/metadata/creationTimestamp");
                let secret =
                    out.kind.as_deref() == Some("Secret") || is_kubernetes_secret(key.as_bytes());
                if secret && redact_secret(&mut object) {
                    out.note = Some(
                        "a plaintext Secret: its data is stored unencrypted (redacted here)".into(),
                    );
                }
                out.object = Some(object);
            }
            Err(e) => {
                out.note = Some(format!(
                    "starts like JSON but does not parse (line {}, column {})",
                    e.line(),
                    e.column()
                ));
            }
        },
        Storage::Plaintext {
            format: PlainFormat::Protobuf,
        } => match Unknown::decode(&value[PROTOBUF_MAGIC.len()..]) {
            Ok(envelope) => {
                if let Some(meta) = envelope.type_meta {
                    out.api_version = non_empty(meta.api_version);
                    out.kind = non_empty(meta.kind);
                }
                out.object_size = Some(envelope.raw.len());
                if !envelope.content_encoding.is_empty() {
                    out.note = Some(format!(
                        "object encoded as {}: metadata not read",
                        envelope.content_encoding
                    ));
                } else {
                    match AnyObject::decode(envelope.raw.as_slice()) {
                        Ok(object) => {
                            if let Some(meta) = object.metadata {
                                out.namespace = non_empty(meta.namespace);
                                out.name = non_empty(meta.name);
                                out.uid = non_empty(meta.uid);
                                out.creation_timestamp = meta
                                    .creation_timestamp
                                    .and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
                                    .map(|t| t.to_rfc3339());
                                let _ = meta.resource_version;
                            }
                        }
                        Err(e) => {
                            out.note = Some(format!("object metadata does not decode: {e}"));
                        }
                    }
                }
            }
            Err(e) => {
                out.note = Some(format!(
                    "has the protobuf magic but no runtime.Unknown envelope: {e}"
                ));
            }
        },
        Storage::Plaintext {
            format: PlainFormat::Unknown,
        } => {
            out.note = Some(
                "neither JSON nor Kubernetes protobuf nor encrypted: not written by kube-apiserver, or damaged".into(),
            );
        }
    }
    out
}

/// Which stored values to decode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct K8sGetRequest {
    /// The key, or the prefix with `prefix`.
    pub key: String,
    /// Every key starting with `key`.
    pub prefix: bool,
    /// Read at this revision (0: latest).
    pub revision: i64,
    /// At most this many keys (0: all).
    pub limit: i64,
}

/// Reads and decodes values page by page, handing each to `on_value` (which may stop the
/// read by failing, e.g. when output is closed).
pub async fn k8s_get(
    config: &ClusterConfig,
    request: &K8sGetRequest,
    mut on_value: impl FnMut(DecodedValue) -> std::io::Result<()>,
) -> Result<GetSummary> {
    if request.key.is_empty() {
        return Err(K8sError::InvalidRequest {
            what: "key",
            reason: "give a key, or a prefix of keys (e.g. /registry/secrets/default/)".into(),
            hint: Hint::option(PREFIX_SWITCH),
        });
    }
    let get = GetRequest {
        key: request.key.as_bytes().to_vec(),
        prefix: request.prefix,
        revision: request.revision,
        limit: request.limit,
        show_secrets: true,
        ..Default::default()
    };
    let client = Client::new(config.clone());
    let mut pages = client.kv().get_stream(&get);
    while let Some(page) = pages.next().await {
        for kv in page?.kvs {
            let value = raw_value(&kv).unwrap_or_default();
            let mut decoded = decode_value(&kv.key, &value);
            decoded.mod_revision = Some(kv.mod_revision);
            // A failed write (the output closed) returns: the stream dropped, the read stops.
            on_value(decoded).map_err(|source| K8sError::Io {
                operation: "write",
                path: "the output".into(),
                source,
            })?;
        }
    }
    let summary = pages
        .summary()
        .cloned()
        .expect("a get stream that ended without an error has its summary");
    if summary.returned == 0 {
        return Err(K8sError::NoKubernetesData(format!(
            "no key {}{} at revision {}",
            if request.prefix { "under " } else { "" },
            request.key,
            summary.revision
        )));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let mut out = PROTOBUF_MAGIC.to_vec();
        Unknown {
            type_meta: Some(TypeMeta {
                api_version: api_version.into(),
                kind: kind.into(),
            }),
            raw,
            content_encoding: String::new(),
            content_type: String::new(),
        }
        .encode(&mut out)
        .unwrap();
        out
    }

    #[test]
    fn protobuf_objects_decode_to_their_metadata() {
        let raw = AnyObject {
            metadata: Some(ObjectMeta {
                name: "web".into(),
                namespace: "prod".into(),
                uid: "1234".into(),
                resource_version: String::new(),
                creation_timestamp: Some(Time { seconds: 86400 }),
            }),
        }
        .encode_to_vec();
        // A Secret's data field (2) after the metadata is skipped, never shown.
        let mut secret = raw.clone();
        secret.extend_from_slice(&[0x12, 0x08, 0x0a, 0x01, b'k', 0x12, 0x03, b'T', b'O', b'P']);
        let value = envelope("v1", "Secret", secret.clone());
        let d = decode_value("/registry/secrets/prod/web", &value);
        assert_eq!(d.kind.as_deref(), Some("Secret"));
        assert_eq!(d.api_version.as_deref(), Some("v1"));
        assert_eq!(d.namespace.as_deref(), Some("prod"));
        assert_eq!(d.name.as_deref(), Some("web"));
        assert_eq!(d.uid.as_deref(), Some("1234"));
        assert_eq!(d.object_size, Some(secret.len()));
        assert_eq!(
            d.creation_timestamp.as_deref(),
            Some("1970-01-02T00:00:00+00:00")
        );
        assert!(!serde_json::to_string(&d).unwrap().contains("TOP"));
        // A damaged envelope is a note, not a panic.
        let d = decode_value("/registry/pods/a/b", b"k8s\0\x0a\xff");
        assert!(d.note.unwrap().contains("runtime.Unknown"));
    }

    #[test]
    fn json_secrets_are_redacted_and_other_objects_shown() {
        let secret = br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db","namespace":"prod","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"c2VjcmV0\"}}"}},"data":{"password":"c2VjcmV0"},"type":"Opaque"}"#;
        let d = decode_value("/registry/secrets/prod/db", secret);
        let json = serde_json::to_string(&d).unwrap();
        assert!(!json.contains("c2VjcmV0"), "{json}");
        assert_eq!(d.name.as_deref(), Some("db"));
        assert_eq!(
            d.object.as_ref().unwrap()["data"]["password"],
            "<redacted, 8 bytes>"
        );
        assert!(d.note.unwrap().contains("plaintext Secret"));

        let cm =
            br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"a":"b"}}"#;
        let d = decode_value("/registry/configmaps/default/c", cm);
        assert_eq!(d.object.unwrap()["data"]["a"], "b");
        assert_eq!(d.note, None);

        let d = decode_value("/registry/secrets/x/y", b"{not json");
        assert!(d.note.unwrap().contains("does not parse"));
    }

    #[test]
    fn encrypted_and_unknown_values_are_reported_as_such() {
        let d = decode_value("/registry/secrets/a/b", b"k8s:enc:kms:v2:vault:\x01\x02");
        assert!(d.storage.is_encrypted());
        assert!(d.note.unwrap().contains("kmsv2"));
        assert_eq!(d.object, None);
        let d = decode_value("/registry/x", b"plain words");
        assert!(d.note.unwrap().contains("neither"));
    }
}
