//! Decrypting age-encrypted snapshot files ([age](https://age-encryption.org)): X25519
//! identities (`AGE-SECRET-KEY-1...`) to decrypt with, read from identity files.
//!
//! Identities are held in a type whose `Debug` prints how many there are, never what they
//! are, and no error built here contains an identity file's line.

use std::fmt;
use std::io;
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Every age file starts with these bytes (`age-encryption.org/v1` and a newline).
pub const AGE_MAGIC: &[u8] = b"age-encryption.org/";

/// Whether `head` (the first bytes of a file or object) is the start of an age file.
pub fn is_age(head: &[u8]) -> bool {
    head.starts_with(AGE_MAGIC)
}

/// The identities to decrypt backups with (`--identity FILE`, module `identity_file` or
/// `identity_content`). Its `Debug` never shows key material.
#[derive(Clone, Default)]
pub struct Identities {
    keys: Vec<age::x25519::Identity>,
    origins: Vec<String>,
}

impl fmt::Debug for Identities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Identities({} key(s) from {:?})",
            self.keys.len(),
            self.origins
        )
    }
}

impl Identities {
    /// No identity.
    pub fn none() -> Self {
        Identities::default()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Adds the identities of an identity file's text: `AGE-SECRET-KEY-1...` lines, `#`
    /// comments and blank lines. Errors name the origin and the line number, never the line.
    pub fn add_text(&mut self, text: &str, origin: &str) -> Result<()> {
        let bad = |reason: String| Error::BadKey {
            origin: origin.to_string(),
            reason,
        };
        let mut found = 0;
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let number = index + 1;
            if line.starts_with("AGE-PLUGIN-") {
                return Err(bad(format!(
                    "line {number} is an age plugin identity; only X25519 identities (AGE-SECRET-KEY-1...) are supported"
                )));
            }
            let key = age::x25519::Identity::from_str(line).map_err(|_| {
                bad(format!(
                    "line {number} is not an age X25519 identity (AGE-SECRET-KEY-1... as age-keygen writes it)"
                ))
            })?;
            self.keys.push(key);
            found += 1;
        }
        if found == 0 {
            return Err(bad(
                "holds no identity (an AGE-SECRET-KEY-1... line, as age-keygen writes it)".into(),
            ));
        }
        self.origins.push(origin.to_string());
        Ok(())
    }

    /// Adds the identities of an identity file. Returns a warning when the file can be read
    /// by its group or by others (it should be 0600): the key is used anyway.
    pub fn add_file(&mut self, path: &Path) -> Result<Option<String>> {
        let failed = |source: io::Error| Error::ReadFile {
            path: path.display().to_string(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(failed)?;
        self.add_text(&text, &format!("identity file '{}'", path.display()))?;
        let mode = std::fs::metadata(path).map_err(failed)?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777;
        Ok((mode & 0o077 != 0).then(|| {
            format!(
                "identity file '{}' can be read by its group or others (mode {mode:04o}); chmod 600 it",
                path.display()
            )
        }))
    }

    /// The identities, as age takes them.
    pub fn age_identities(&self) -> impl Iterator<Item = &dyn age::Identity> {
        self.keys.iter().map(|k| k as &dyn age::Identity)
    }

    /// The public keys of these identities (for tests and diagnostics; public, not secret).
    pub fn public_keys(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| k.to_public().to_string())
            .collect()
    }
}

/// A new identity written to a new file `path` (mode 0600; an existing file is refused), in
/// age-keygen's format; returns its recipient (public key). The identity is never returned.
pub fn new_identity_file(path: &Path) -> Result<String> {
    use std::io::Write;
    let identity = age::x25519::Identity::generate();
    let public = identity.to_public().to_string();
    let failed = |source: io::Error| Error::WriteFile {
        path: path.display().to_string(),
        source,
    };
    let mut file = etcd_common::private::create_new_file(path).map_err(failed)?;
    let secret = identity.to_string();
    let text = format!(
        "# created: {}\n# public key: {public}\n{}\n",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        age::secrecy::ExposeSecret::expose_secret(&secret)
    );
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    Ok(public)
}

/// Why an age file cannot be decrypted.
#[derive(Debug)]
pub enum DecryptFailure {
    /// None of the identities matches a recipient.
    NoMatchingIdentity,
    /// The age file is damaged (its header or MAC fails authentication), or reading it failed.
    Damaged(age::DecryptError),
}

/// Decrypts an age file (`reader` positioned at its start) into a reader of plaintext. A
/// payload chunk that fails authentication is a read error of the returned reader.
pub fn decrypting_reader<R: io::BufRead>(
    reader: R,
    identities: &Identities,
) -> std::result::Result<age::stream::StreamReader<R>, DecryptFailure> {
    let failed = |e| match e {
        age::DecryptError::NoMatchingKeys => DecryptFailure::NoMatchingIdentity,
        other => DecryptFailure::Damaged(other),
    };
    let decryptor = age::Decryptor::new_buffered(reader).map_err(failed)?;
    decryptor
        .decrypt(identities.age_identities())
        .map_err(failed)
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
    fn identity_files_parse_and_errors_never_show_the_key() {
        let (secret, public) = key_pair();
        let mut ids = Identities::none();
        ids.add_text(
            &format!("# created: now\n# public key: {public}\n\n{secret}\n"),
            "identity file 'k'",
        )
        .unwrap();
        assert_eq!(ids.public_keys(), vec![public.clone()]);
        let debug = format!("{ids:?}");
        assert!(
            !debug.contains(&secret) && debug.contains("1 key"),
            "{debug}"
        );

        // A damaged key: the error names the line, never its text.
        // (Another last character, so that the bech32 checksum fails whatever the key.)
        let last = if secret.ends_with('X') { 'Q' } else { 'X' };
        let damaged = format!("{}{last}", &secret[..secret.len() - 1]);
        let err = Identities::none()
            .add_text(&format!("# c\n{damaged}\n"), "identity file 'k'")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("identity file 'k'") && err.contains("line 2"),
            "{err}"
        );
        assert!(!err.contains(&damaged[..20]), "{err}");
        let err = Identities::none()
            .add_text(&format!("# only a comment: {public}\n"), "identity_content")
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no identity"), "{err}");
    }

    #[test]
    fn group_readable_identity_files_are_used_with_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.txt");
        let (secret, _) = key_pair();
        std::fs::write(&path, format!("{secret}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Identities::none().add_file(&path).unwrap(), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut ids = Identities::none();
        let warning = ids.add_file(&path).unwrap().unwrap();
        assert!(
            warning.contains("0644") && warning.contains("chmod 600"),
            "{warning}"
        );
        assert!(!warning.contains(&secret));
        assert!(!ids.is_empty());
    }

    #[test]
    fn new_identity_files_are_private_readable_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.txt");
        let public = new_identity_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut ids = Identities::none();
        assert_eq!(ids.add_file(&path).unwrap(), None);
        assert_eq!(ids.public_keys(), vec![public]);
        assert!(matches!(
            new_identity_file(&path),
            Err(Error::WriteFile { .. })
        ));
    }
}
