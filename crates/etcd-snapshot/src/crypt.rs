//! Client-side encryption of backups with [age](https://age-encryption.org): X25519
//! recipients (`age1...`) to encrypt to, identities (`AGE-SECRET-KEY-1...`) to decrypt with.
//!
//! Only public keys are ever shown, logged or written into a manifest. Identities are held in
//! a type whose `Debug` prints how many there are, never what they are, and no error built
//! here contains an identity file's line.

use std::fmt;
use std::io;
use std::path::Path;
use std::str::FromStr;

use futures::{AsyncRead, AsyncReadExt, Stream, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SnapshotError};

pub use etcd_data::{AGE_MAGIC, is_age};

/// How a backup object is encrypted, as its manifest records it: public keys only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Encryption {
    /// `age` (the age v1 format, X25519 recipients).
    pub scheme: String,
    /// The recipients' public keys (`age1...`); any one of their identities decrypts.
    pub recipients: Vec<String>,
}

impl Encryption {
    /// age to these recipients.
    pub fn age(recipients: &Recipients) -> Self {
        Encryption {
            scheme: "age".into(),
            recipients: recipients.public_keys(),
        }
    }
}

/// The public keys to encrypt a backup to (`--encrypt-to`, `--encrypt-to-file`).
#[derive(Debug, Clone, Default)]
pub struct Recipients {
    keys: Vec<age::x25519::Recipient>,
}

impl Recipients {
    /// No recipient: the backup is not encrypted.
    pub fn none() -> Self {
        Recipients::default()
    }

    /// Whether there is no recipient (no encryption).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The public keys, in the order given, without duplicates.
    pub fn public_keys(&self) -> Vec<String> {
        self.keys.iter().map(ToString::to_string).collect()
    }

    /// Adds one recipient (`age1...`); `origin` says where it came from, for errors.
    pub fn add(&mut self, text: &str, origin: &str) -> Result<()> {
        let text = text.trim();
        let key = parse_recipient(text).map_err(|reason| {
            SnapshotError::Data(etcd_data::Error::BadKey {
                origin: origin.to_string(),
                reason,
            })
        })?;
        if !self.keys.iter().any(|k| k.to_string() == key.to_string()) {
            self.keys.push(key);
        }
        Ok(())
    }

    /// Adds every recipient of a recipients file's text: one per line, `#` comments and
    /// blank lines ignored. A file without any recipient is refused.
    pub fn add_file_text(&mut self, text: &str, origin: &str) -> Result<()> {
        let mut found = 0;
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add(line, &format!("{origin} line {}", index + 1))?;
            found += 1;
        }
        if found == 0 {
            return Err(SnapshotError::Data(etcd_data::Error::BadKey {
                origin: origin.to_string(),
                reason: "holds no recipient (one age1... public key per line)".into(),
            }));
        }
        Ok(())
    }

    /// Adds every recipient of a recipients file.
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|source| {
            SnapshotError::Data(etcd_data::Error::ReadFile {
                path: path.display().to_string(),
                source,
            })
        })?;
        self.add_file_text(&text, &format!("recipients file '{}'", path.display()))
    }

    pub(crate) fn as_dyn(&self) -> impl Iterator<Item = &dyn age::Recipient> {
        self.keys.iter().map(|k| k as &dyn age::Recipient)
    }
}

/// Why `text` is not an X25519 recipient. Never echoes text that looks like a secret key.
fn parse_recipient(text: &str) -> std::result::Result<age::x25519::Recipient, String> {
    let upper = text.to_ascii_uppercase();
    if upper.starts_with("AGE-SECRET-KEY-") {
        return Err(
            "is an age identity (a secret key), not a recipient: give its public key (age1...) \
             and keep the identity secret"
                .into(),
        );
    }
    if text.starts_with("ssh-") {
        return Err(
            "SSH recipients are not supported; use an age X25519 recipient (age1...)".into(),
        );
    }
    age::x25519::Recipient::from_str(text).map_err(|_| {
        // Echoed only when it looks like a mistyped public key: any other line (a password
        // file's, a plugin identity `AGE-PLUGIN-...`) may be a secret.
        const BECH32: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
        let looks_public = text.len() == 62
            && text.starts_with("age1")
            && text[4..].chars().all(|c| BECH32.contains(c));
        if looks_public {
            format!(
                "'{text}' is not an age X25519 recipient (a public key age1... as age-keygen prints it)"
            )
        } else {
            "is not an age X25519 recipient (a public key age1... as age-keygen prints it); \
             its text is not shown, as it may be a secret"
                .to_string()
        }
    })
}

/// The identities to decrypt backups with (`identity` files, or an identity's text): etcd-data's
/// [`etcd_data::Identities`], with this crate's errors. Its `Debug` never shows key material.
#[derive(Clone, Default)]
pub struct Identities(etcd_data::Identities);

impl fmt::Debug for Identities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Identities {
    /// No identity.
    pub fn none() -> Self {
        Identities::default()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds the identities of an identity file's text: `AGE-SECRET-KEY-1...` lines, `#`
    /// comments and blank lines. Errors name the origin and the line number, never the line.
    pub fn add_text(&mut self, text: &str, origin: &str) -> Result<()> {
        Ok(self.0.add_text(text, origin)?)
    }

    /// Adds the identities of an identity file. Returns a warning when the file can be read
    /// by its group or by others (it should be 0600): the key is used anyway.
    pub fn add_file(&mut self, path: &Path) -> Result<Option<String>> {
        Ok(self.0.add_file(path)?)
    }

    /// The public keys of these identities (for tests and diagnostics; public, not secret).
    pub fn public_keys(&self) -> Vec<String> {
        self.0.public_keys()
    }

    /// The identities as etcd-data takes them.
    pub fn as_data(&self) -> &etcd_data::Identities {
        &self.0
    }

    pub(crate) fn as_dyn(&self) -> impl Iterator<Item = &dyn age::Identity> {
        self.0.age_identities()
    }
}

/// A new identity written to a new file `path` (mode 0600; an existing file is refused), in
/// age-keygen's format; returns its recipient (public key). The identity is never returned.
pub fn new_identity_file(path: &Path) -> Result<String> {
    Ok(etcd_data::new_identity_file(path)?)
}

/// A writer that encrypts to recipients, finished explicitly.
pub(crate) fn encryptor<W: io::Write>(
    recipients: &Recipients,
    output: W,
) -> Result<age::stream::StreamWriter<W>> {
    let failed = |reason: String| SnapshotError::Codec {
        operation: "encrypt",
        reason,
    };
    let encryptor =
        age::Encryptor::with_recipients(recipients.as_dyn()).map_err(|e| failed(e.to_string()))?;
    encryptor
        .wrap_output(output)
        .map_err(|e| failed(e.to_string()))
}

/// What went wrong reading a stored object's bytes through [`pump_stored`].
#[derive(Debug)]
pub(crate) enum PumpError {
    /// The store failed.
    Store(etcd_store::StoreError),
    /// The object is age-encrypted and no identity was given.
    Locked,
    /// None of the identities matches a recipient.
    NoMatchingIdentity,
    /// The age file is damaged (header, MAC or a payload chunk fails authentication).
    Damaged(Box<dyn std::error::Error + Send + Sync>),
    /// The plaintext sink failed.
    Sink(io::Error),
}

/// Recovers a store error that travelled inside an `io::Error`.
fn from_io(e: io::Error) -> PumpError {
    if !e
        .get_ref()
        .is_some_and(|inner| inner.is::<etcd_store::StoreError>())
    {
        return PumpError::Damaged(Box::new(e));
    }
    match e
        .into_inner()
        .map(|inner| inner.downcast::<etcd_store::StoreError>())
    {
        Some(Ok(store)) => PumpError::Store(*store),
        Some(Err(other)) => PumpError::Damaged(other),
        None => PumpError::Damaged("read failed".into()),
    }
}

fn from_decrypt(e: age::DecryptError) -> PumpError {
    match e {
        age::DecryptError::NoMatchingKeys => PumpError::NoMatchingIdentity,
        age::DecryptError::Io(e) => from_io(e),
        other => PumpError::Damaged(Box::new(other)),
    }
}

/// Bytes read from the (decrypted) stream at a time.
const PUMP_CHUNK: usize = 256 << 10;

/// Streams a stored object: every stored chunk goes to `observe` (hashing, progress, size);
/// the plaintext (decrypted when the object is age, detected from its first bytes) goes to
/// `sink`. Without identities, [`PumpError::Locked`] is returned for an age object, after
/// reading it to its end when `read_all_when_locked` (so `observe` sees it all). Returns
/// whether the object was age-encrypted.
pub(crate) async fn pump_stored<S>(
    chunks: S,
    identities: &Identities,
    read_all_when_locked: bool,
    mut observe: impl FnMut(&[u8]) + Send,
    mut sink: impl FnMut(&[u8]) -> io::Result<()> + Send,
) -> std::result::Result<bool, PumpError>
where
    S: Stream<Item = std::result::Result<bytes::Bytes, etcd_store::StoreError>> + Send + Unpin,
{
    let observed = chunks
        .inspect(|chunk| {
            if let Ok(bytes) = chunk {
                observe(bytes);
            }
        })
        .map_err(io::Error::other);
    let mut raw = observed.into_async_read();
    let mut head = Vec::with_capacity(AGE_MAGIC.len());
    while head.len() < AGE_MAGIC.len() {
        let mut buf = [0u8; 32];
        let want = AGE_MAGIC.len() - head.len();
        let n = raw.read(&mut buf[..want]).await.map_err(from_io)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let encrypted = is_age(&head);
    let input = futures::io::Cursor::new(head).chain(raw);
    if !encrypted {
        pump_reader(input, &mut sink).await?;
        return Ok(false);
    }
    if identities.is_empty() {
        if read_all_when_locked {
            pump_reader(input, &mut |_: &[u8]| Ok(())).await?;
        }
        return Err(PumpError::Locked);
    }
    let decryptor = age::Decryptor::new_async(input)
        .await
        .map_err(from_decrypt)?;
    let plain = decryptor
        .decrypt_async(identities.as_dyn())
        .map_err(from_decrypt)?;
    pump_reader(plain, &mut sink).await?;
    Ok(true)
}

async fn pump_reader<R: AsyncRead + Unpin, F: FnMut(&[u8]) -> io::Result<()> + Send>(
    mut reader: R,
    sink: &mut F,
) -> std::result::Result<(), PumpError> {
    let mut buf = vec![0u8; PUMP_CHUNK];
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(from_io(e)),
        };
        sink(&buf[..n]).map_err(PumpError::Sink)?;
    }
}

/// Decrypts age bytes (`reader` positioned at their start) into a reader of plaintext.
pub(crate) fn decrypting_reader<R: io::BufRead>(
    reader: R,
    identities: &Identities,
) -> std::result::Result<age::stream::StreamReader<R>, PumpError> {
    etcd_data::decrypting_reader(reader, identities.as_data()).map_err(|e| match e {
        etcd_data::DecryptFailure::NoMatchingIdentity => PumpError::NoMatchingIdentity,
        etcd_data::DecryptFailure::Damaged(e) => from_decrypt(e),
    })
}

/// Turns a [`PumpError`] into the error a reader of `name` reports; `recipients` are the
/// manifest's, when known.
pub(crate) fn pump_error(name: &str, recipients: &[String], e: PumpError) -> SnapshotError {
    match e {
        PumpError::Store(e) => e.into(),
        PumpError::Locked => SnapshotError::Data(etcd_data::Error::Encrypted {
            name: name.to_string(),
            recipients: recipients.to_vec(),
            stored_ok: false,
        }),
        PumpError::NoMatchingIdentity => SnapshotError::Data(etcd_data::Error::WrongIdentity {
            name: name.to_string(),
            recipients: recipients.to_vec(),
        }),
        PumpError::Damaged(source) => SnapshotError::Data(etcd_data::Error::Damaged {
            name: name.to_string(),
            source,
        }),
        PumpError::Sink(source) => SnapshotError::Data(etcd_data::unpack_error(name, source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_pair() -> (String, String) {
        let identity = age::x25519::Identity::generate();
        let secret = age::secrecy::ExposeSecret::expose_secret(&identity.to_string()).to_string();
        (secret, identity.to_public().to_string())
    }

    #[test]
    fn recipients_files_take_one_key_per_line_with_comments_and_blank_lines() {
        let (_, a) = key_pair();
        let (_, b) = key_pair();
        let text = format!("# backup keys\n\n  {a}  \n# ops team\n{b}\n{a}\n");
        let mut recipients = Recipients::none();
        recipients
            .add_file_text(&text, "recipients file 'r'")
            .unwrap();
        assert_eq!(recipients.public_keys(), vec![a.clone(), b.clone()]);

        let err = Recipients::none()
            .add_file_text("# nothing\n\n", "recipients file 'r'")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("recipients file 'r'") && err.contains("holds no recipient"),
            "{err}"
        );

        // A mistyped public key (one character changed: the checksum fails) is shown.
        let last = if a.ends_with('q') { 'p' } else { 'q' };
        let typo = format!("{}{last}", &a[..a.len() - 1]);
        let err = Recipients::none()
            .add_file_text(&format!("{a}\n{typo}\n"), "recipients file 'r'")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2")
                && err.contains(&format!("'{typo}' is not an age X25519 recipient")),
            "{err}"
        );

        let err = Recipients::none()
            .add("ssh-ed25519 AAAA user@host", "--encrypt-to")
            .unwrap_err()
            .to_string();
        assert!(err.contains("SSH recipients are not supported"), "{err}");
    }

    #[test]
    fn a_line_that_is_no_public_key_is_never_echoed() {
        for line in [
            "root:$6$saltsalt$hashhashhash:19000:0:99999:7:::",
            "AGE-PLUGIN-YUBIKEY-1QQQQQQQQQQQ",
            "password=hunter2",
            "age1Summer2024",
        ] {
            let text = Recipients::none()
                .add_file_text(&format!("{line}\n"), "recipients file 'r'")
                .unwrap_err()
                .to_string();
            assert!(
                text.contains("line 1") && text.contains("not shown"),
                "{text}"
            );
            assert!(!text.contains(line), "{text}");
        }
    }

    #[test]
    fn a_secret_key_given_as_a_recipient_is_refused_without_being_echoed() {
        let (secret, _) = key_pair();
        for err in [
            Recipients::none().add(&secret, "--encrypt-to").unwrap_err(),
            Recipients::none()
                .add_file_text(&format!("{secret}\n"), "recipients file 'r'")
                .unwrap_err(),
        ] {
            let text = err.to_string();
            assert!(text.contains("not a recipient"), "{text}");
            assert!(!text.contains(&secret), "{text}");
            assert!(!text.contains("AGE-SECRET-KEY-1"), "{text}");
        }
    }

    #[test]
    fn messages_name_the_recipients_and_what_to_pass() {
        let text = SnapshotError::Data(etcd_data::Error::Encrypted {
            name: "b.db.zst.age".into(),
            recipients: vec!["age1aaa".into(), "age1bbb".into()],
            stored_ok: false,
        })
        .to_string();
        assert!(
            text.contains("encrypted with age to age1aaa, age1bbb"),
            "{text}"
        );
        assert!(text.contains("give the identity of one of them"), "{text}");
        assert!(!text.contains("--"), "{text}");
        assert!(!text.contains('\n'));
        let text = SnapshotError::Data(etcd_data::Error::WrongIdentity {
            name: "b".into(),
            recipients: vec!["age1aaa".into()],
        })
        .to_string();
        assert!(
            text.contains("none of the given identities can decrypt 'b'"),
            "{text}"
        );
        assert!(text.contains("age1aaa"), "{text}");
    }

    #[test]
    fn encrypted_streams_decrypt_with_either_identity_and_not_with_another() {
        let a = age::x25519::Identity::generate();
        let b = age::x25519::Identity::generate();
        let mut recipients = Recipients::none();
        recipients.add(&a.to_public().to_string(), "a").unwrap();
        recipients.add(&b.to_public().to_string(), "b").unwrap();
        let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut writer = encryptor(&recipients, Vec::new()).unwrap();
        io::Write::write_all(&mut writer, &plain).unwrap();
        let cipher = writer.finish().unwrap();
        assert!(is_age(&cipher));
        let run = |ids: &Identities, bytes: Vec<u8>| {
            let chunks: Vec<std::result::Result<bytes::Bytes, etcd_store::StoreError>> = bytes
                .chunks(7_000)
                .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
                .collect();
            let mut seen = 0usize;
            let mut out = Vec::new();
            let result = futures::executor::block_on(pump_stored(
                futures::stream::iter(chunks),
                ids,
                true,
                |c| seen += c.len(),
                |c| {
                    out.extend_from_slice(c);
                    Ok(())
                },
            ));
            (result, seen, out)
        };
        for key in [&a, &b] {
            let mut ids = Identities::none();
            let secret = age::secrecy::ExposeSecret::expose_secret(&key.to_string()).to_string();
            ids.add_text(&secret, "k").unwrap();
            let (result, seen, out) = run(&ids, cipher.clone());
            assert!(result.unwrap());
            assert_eq!((seen, out == plain), (cipher.len(), true));
        }
        let (result, seen, _) = run(&Identities::none(), cipher.clone());
        assert!(matches!(result, Err(PumpError::Locked)));
        assert_eq!(
            seen,
            cipher.len(),
            "read to the end to check the stored bytes"
        );
        let mut other = Identities::none();
        let c = age::x25519::Identity::generate();
        other
            .add_text(
                age::secrecy::ExposeSecret::expose_secret(&c.to_string()),
                "c",
            )
            .unwrap();
        assert!(matches!(
            run(&other, cipher.clone()).0,
            Err(PumpError::NoMatchingIdentity)
        ));
        let mut ids = Identities::none();
        ids.add_text(
            age::secrecy::ExposeSecret::expose_secret(&a.to_string()),
            "a",
        )
        .unwrap();
        let mut flipped = cipher.clone();
        let at = flipped.len() / 2;
        flipped[at] ^= 0x01;
        assert!(matches!(run(&ids, flipped).0, Err(PumpError::Damaged(_))));
        // Plain bytes pass through.
        let (result, _, out) = run(&ids, plain.clone());
        assert!(!result.unwrap());
        assert_eq!(out, plain);
    }
}
