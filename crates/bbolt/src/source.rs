//! Where a db's bytes come from: memory, or a file read page by page with positioned reads,
//! so that reading a db never needs it whole in memory.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Bytes of a bbolt db, read at any offset.
pub trait PageSource {
    /// Bytes of the db (without etcd's SHA-256 trailer).
    fn size(&self) -> u64;
    /// Fills `buf` with the bytes at `offset`; an error when they are not all there.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
}

impl PageSource for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| self.get(start..start.checked_add(buf.len())?))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

impl PageSource for Vec<u8> {
    fn size(&self) -> u64 {
        self.as_slice().size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

impl<T: PageSource + ?Sized> PageSource for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
}

/// The first `len` bytes of a file (a snapshot's db without its trailer), read with
/// positioned reads: only the pages visited are read, nothing is mapped.
#[derive(Debug)]
pub struct DbFile {
    file: File,
    len: u64,
}

impl DbFile {
    /// The first `len` bytes of `file` as a db.
    pub fn new(file: File, len: u64) -> Self {
        DbFile { file, len }
    }

    /// The whole of `file` as a db.
    pub fn whole(file: File) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(DbFile { file, len })
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl PageSource for DbFile {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.file.read_exact_at(buf, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stay_inside_the_db() {
        let data: Vec<u8> = (0..=255u8).collect();
        let mut buf = [0u8; 4];
        data.read_exact_at(&mut buf, 252).unwrap();
        assert_eq!(buf, [252, 253, 254, 255]);
        assert!(data.read_exact_at(&mut buf, 253).is_err());
        assert!(data.read_exact_at(&mut buf, u64::MAX).is_err());

        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        // Only the first 100 bytes are the db.
        let db = DbFile::new(file, 100);
        assert_eq!(db.size(), 100);
        db.read_exact_at(&mut buf, 96).unwrap();
        assert_eq!(buf, [96, 97, 98, 99]);
        assert!(db.read_exact_at(&mut buf, 97).is_err());
        assert!(db.read_exact_at(&mut buf, u64::MAX - 1).is_err());
    }
}
