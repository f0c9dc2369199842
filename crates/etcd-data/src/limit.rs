//! How much a snapshot may unpack to. A zstd stream of a few KiB can decompress to GiBs (a
//! "zstd bomb"); a snapshot is only ever spooled (or hashed) up to the size of the db it
//! should hold and etcd's 32-byte trailer: the `db_size` its manifest records, or, without a
//! manifest, a ceiling ([`DEFAULT_MAX_DB_SIZE`], raised with [`MAX_DB_SIZE_VAR`]). The first
//! byte past it stops the read with [`LimitExceeded`], before it is written anywhere.

use crate::file::TRAILER_LEN;

/// The largest db unpacked from a snapshot whose size nothing records (no manifest): 16 GiB,
/// twice etcd's largest suggested quota (8 GiB; a db can grow a little past its quota, and
/// larger quotas are allowed with a warning), so a db etcd ran with fits, and a bomb stops
/// long before it fills a disk (or, with `$TMPDIR` on a tmpfs, the memory) of a host.
pub const DEFAULT_MAX_DB_SIZE: u64 = 16 << 30;

/// The environment variable that sets the ceiling (`32GiB`, `500MiB`, bytes): for a snapshot
/// without a manifest whose db is larger than [`DEFAULT_MAX_DB_SIZE`].
pub const MAX_DB_SIZE_VAR: &str = "ETCDOPS_MAX_DB_SIZE";

/// The largest db unpacked without a manifest: `ETCDOPS_MAX_DB_SIZE` when set, else
/// [`DEFAULT_MAX_DB_SIZE`]. A value that is not a size is an error ([`BadMaxDbSize`] inside
/// the `io::Error`), not a silent default.
pub fn max_db_size() -> std::io::Result<u64> {
    match std::env::var(MAX_DB_SIZE_VAR) {
        Ok(text) => etcd_common::parse_size(&text)
            .map(|size| size as u64)
            .map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    BadMaxDbSize(format!("{text:?} is not a size ({e})")),
                )
            }),
        Err(_) => Ok(DEFAULT_MAX_DB_SIZE),
    }
}

/// `ETCDOPS_MAX_DB_SIZE` holds something that is not a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {MAX_DB_SIZE_VAR}: {0}")]
pub struct BadMaxDbSize(pub String);

/// The most bytes a snapshot may unpack to (db and trailer): `db_size` (from a manifest) plus
/// the trailer, or the ceiling plus the trailer when there is no manifest or its `db_size` is
/// above the ceiling.
/// The ceiling holds with a manifest too: a manifest is as easy to forge as the object it
/// describes, so a forged `db_size` of a TiB must not lift the bound.
pub fn unpack_limit(db_size: Option<u64>) -> std::io::Result<UnpackLimit> {
    let ceiling = max_db_size()?;
    Ok(match db_size {
        Some(db_size) if db_size <= ceiling => UnpackLimit {
            bytes: db_size.saturating_add(TRAILER_LEN as u64),
            from_manifest: true,
            manifest_above: None,
        },
        _ => UnpackLimit {
            bytes: ceiling.saturating_add(TRAILER_LEN as u64),
            from_manifest: false,
            manifest_above: db_size,
        },
    })
}

/// A bound on the bytes a snapshot unpacks to, and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimit {
    /// The most bytes (db and etcd's trailer).
    pub bytes: u64,
    /// It is a manifest's `db_size` (else the ceiling).
    pub from_manifest: bool,
    /// The manifest's `db_size` when it was above the ceiling (which then bounds).
    pub manifest_above: Option<u64>,
}

impl UnpackLimit {
    /// Counts `len` more bytes after `so_far`: the error when they go past the limit.
    pub fn check(&self, so_far: u64, len: usize) -> std::io::Result<()> {
        if so_far.saturating_add(len as u64) > self.bytes {
            return Err(std::io::Error::other(LimitExceeded(*self)));
        }
        Ok(())
    }
}

/// A snapshot unpacked to more bytes than its db may have: carried inside an `io::Error` by
/// the writers that bound it, turned into [`crate::Error::TooLarge`] where it is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub struct LimitExceeded(pub UnpackLimit);

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UnpackLimit {
            bytes,
            from_manifest,
            manifest_above,
        } = self.0;
        let db = bytes.saturating_sub(TRAILER_LEN as u64);
        if let Some(recorded) = manifest_above {
            return write!(
                f,
                "it unpacks to more than {db} bytes, the largest db read; its manifest's \
                 db_size ({recorded} bytes) is above that, so it does not count (a forged \
                 manifest and a zstd bomb?); set {MAX_DB_SIZE_VAR} to a larger size if the db \
                 really is that large"
            );
        }
        if from_manifest {
            write!(
                f,
                "it unpacks to more than the {db} bytes its manifest's db_size records (and \
                 etcd's {TRAILER_LEN}-byte trailer): not the backup the manifest describes (a \
                 zstd bomb?)"
            )
        } else {
            write!(
                f,
                "it unpacks to more than {db} bytes, the largest db read without a manifest \
                 recording a size below it (set {MAX_DB_SIZE_VAR} to a larger size if the db \
                 really is larger)"
            )
        }
    }
}

/// The limit an I/O error says was exceeded, when it is that.
pub fn limit_exceeded(e: &std::io::Error) -> Option<LimitExceeded> {
    e.get_ref()?.downcast_ref::<LimitExceeded>().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_bounds_exactly_and_the_ceiling_applies_without_one() {
        let limit = unpack_limit(Some(4096)).unwrap();
        assert_eq!(limit.bytes, 4096 + 32);
        limit.check(4000, 128).unwrap();
        let err = limit.check(4000, 129).unwrap_err();
        let exceeded = limit_exceeded(&err).unwrap();
        assert!(
            exceeded.to_string().contains("4096 bytes its manifest"),
            "{err}"
        );
        // Not this variable in this test process: the default.
        if std::env::var(MAX_DB_SIZE_VAR).is_err() {
            let ceiling = unpack_limit(None).unwrap();
            assert_eq!(ceiling.bytes, DEFAULT_MAX_DB_SIZE + 32);
            // A manifest's db_size above the ceiling (forged, or a db larger than the
            // ceiling) does not lift it.
            let forged = unpack_limit(Some(1 << 40)).unwrap();
            assert_eq!(forged.bytes, ceiling.bytes);
            let err = forged.check(DEFAULT_MAX_DB_SIZE, 33).unwrap_err();
            assert!(err.to_string().contains("1099511627776 bytes"), "{err}");
            let err = ceiling.check(DEFAULT_MAX_DB_SIZE, 33).unwrap_err();
            assert!(err.to_string().contains(MAX_DB_SIZE_VAR), "{err}");
        }
        assert!(limit_exceeded(&std::io::Error::other("other")).is_none());
    }
}
