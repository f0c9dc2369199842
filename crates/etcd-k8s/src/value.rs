//! How a stored Kubernetes value is kept: encrypted (which provider, which key) or plaintext
//! (JSON, protobuf, or something else), read from its first bytes only.
//!
//! kube-apiserver's envelope is `k8s:enc:<provider>:v1:<key name>:<ciphertext>` for aescbc,
//! aesgcm and secretbox, `k8s:enc:kms:v1:<plugin name>:` for KMS v1 and
//! `k8s:enc:kms:v2:<plugin name>:` for KMS v2. The identity provider stores plaintext: JSON,
//! or protobuf behind the magic `k8s\0`.

use serde::Serialize;

/// The prefix of every value an encrypting provider wrote.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";
/// The magic in front of a protobuf-encoded Kubernetes object.
pub const PROTOBUF_MAGIC: &[u8] = b"k8s\0";

/// Longest key or plugin name read from an envelope; a longer run without `:` is not a name.
const MAX_NAME: usize = 256;

/// What a plaintext value looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainFormat {
    /// A JSON object.
    Json,
    /// Kubernetes protobuf (`k8s\0` and a runtime.Unknown envelope).
    Protobuf,
    /// Neither: not written by kube-apiserver, or damaged.
    Unknown,
}

/// How one value is stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "storage", rename_all = "snake_case")]
pub enum Storage {
    /// Written by an encrypting provider.
    Encrypted {
        /// `aescbc`, `aesgcm`, `secretbox`, `kms` (v1), `kmsv2`, or another name found.
        provider: String,
        /// The key's name (for KMS, the plugin's name); empty when the envelope is damaged.
        key_name: String,
    },
    /// Plaintext (the identity provider, or no encryption configured).
    Plaintext {
        /// What the plaintext looks like.
        format: PlainFormat,
    },
}

impl Storage {
    /// Whether the value is encrypted.
    pub fn is_encrypted(&self) -> bool {
        matches!(self, Storage::Encrypted { .. })
    }

    /// `provider/key` for an encrypted value, `identity` for plaintext.
    pub fn label(&self) -> String {
        match self {
            Storage::Encrypted { provider, key_name } => format!("{provider}/{key_name}"),
            Storage::Plaintext { .. } => "identity".into(),
        }
    }
}

/// Reads how `value` is stored from its first bytes.
///
/// ```
/// use etcd_k8s::{Storage, classify};
///
/// let storage = classify(b"k8s:enc:aescbc:v1:key1:\x8f\x01...");
/// assert_eq!(storage, Storage::Encrypted { provider: "aescbc".into(), key_name: "key1".into() });
/// assert!(!classify(b"{\"kind\":\"Secret\"}").is_encrypted());
/// ```
pub fn classify(value: &[u8]) -> Storage {
    if let Some(rest) = value.strip_prefix(ENCRYPTED_PREFIX) {
        let (provider, rest) = field(rest);
        let provider = String::from_utf8_lossy(provider).into_owned();
        let (version, rest) = field(rest);
        let (provider, key_name) = match (provider.as_str(), version) {
            ("kms", b"v2") => ("kmsv2".to_string(), field(rest).0),
            (_, b"v1") => (provider, field(rest).0),
            // An unknown version: report what is there, with no key name.
            _ => (provider, &b""[..]),
        };
        return Storage::Encrypted {
            provider,
            key_name: String::from_utf8_lossy(key_name).into_owned(),
        };
    }
    let format = if value.starts_with(PROTOBUF_MAGIC) {
        PlainFormat::Protobuf
    } else if value
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{')
    {
        PlainFormat::Json
    } else {
        PlainFormat::Unknown
    };
    Storage::Plaintext { format }
}

/// The bytes up to the next `:` (at most [`MAX_NAME`]) and what follows it; an empty field
/// when there is no `:` within reach.
fn field(bytes: &[u8]) -> (&[u8], &[u8]) {
    let window = &bytes[..bytes.len().min(MAX_NAME + 1)];
    match window.iter().position(|b| *b == b':') {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (&b""[..], &b""[..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encrypted(provider: &str, key: &str) -> Storage {
        Storage::Encrypted {
            provider: provider.into(),
            key_name: key.into(),
        }
    }

    #[test]
    fn every_provider_envelope_is_recognised() {
        let cases: [(&[u8], Storage); 7] = [
            (
                b"k8s:enc:aescbc:v1:key1:\x00\x01",
                encrypted("aescbc", "key1"),
            ),
            (
                b"k8s:enc:aesgcm:v1:2024-key:\xff",
                encrypted("aesgcm", "2024-key"),
            ),
            (b"k8s:enc:secretbox:v1:sb:abc", encrypted("secretbox", "sb")),
            (
                b"k8s:enc:kms:v1:vault-kms:\x0a\x0b",
                encrypted("kms", "vault-kms"),
            ),
            (
                b"k8s:enc:kms:v2:aws-kms:\x0a",
                encrypted("kmsv2", "aws-kms"),
            ),
            // A ciphertext holding ':' does not disturb the key name.
            (b"k8s:enc:aescbc:v1:k:a:b:c", encrypted("aescbc", "k")),
            // Damaged envelope: still encrypted, no key name.
            (b"k8s:enc:aescbc", encrypted("", "")),
        ];
        for (value, expected) in cases {
            assert_eq!(
                classify(value),
                expected,
                "{}",
                String::from_utf8_lossy(value)
            );
            assert!(classify(value).is_encrypted());
        }
    }

    #[test]
    fn plaintext_formats() {
        let plain = |format| Storage::Plaintext { format };
        assert_eq!(
            classify(br#"{"kind":"Secret","apiVersion":"v1"}"#),
            plain(PlainFormat::Json)
        );
        assert_eq!(classify(b"\n  {\"a\":1}"), plain(PlainFormat::Json));
        assert_eq!(
            classify(b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret"),
            plain(PlainFormat::Protobuf)
        );
        assert_eq!(classify(b"hello"), plain(PlainFormat::Unknown));
        assert_eq!(classify(b""), plain(PlainFormat::Unknown));
        // Near misses of the envelope are plaintext, not encrypted.
        assert!(!classify(b"k8s:en:aescbc:v1:k:").is_encrypted());
        assert!(!classify(b"K8S:ENC:aescbc:v1:k:").is_encrypted());
        assert_eq!(classify(b"k8s:enc:aescbc:v1:key1:x").label(), "aescbc/key1");
        assert_eq!(classify(b"{}").label(), "identity");
    }

    #[test]
    fn an_unknown_envelope_version_keeps_the_provider_and_no_key() {
        assert_eq!(classify(b"k8s:enc:kms:v3:name:data"), encrypted("kms", ""));
        // A name longer than any real one is not read as a name.
        let mut long = b"k8s:enc:aescbc:v1:".to_vec();
        long.extend(std::iter::repeat_n(b'a', 1000));
        long.push(b':');
        assert_eq!(classify(&long), encrypted("aescbc", ""));
    }
}
