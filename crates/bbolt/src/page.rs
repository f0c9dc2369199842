//! One bbolt page: its 16-byte header and its branch or leaf elements.
//!
//! Header, little-endian: `id u64, flags u16, count u16, overflow u32`; a page spans
//! `1 + overflow` contiguous pages. Leaf element (16 bytes): `flags u32 (1 = bucket), pos u32,
//! ksize u32, vsize u32`; branch element (16 bytes): `pos u32, ksize u32, pgid u64`. `pos` is
//! the offset of the key from the element itself; a leaf's value follows its key. Every
//! offset and length is checked against the page's bytes: a bad one is an error, not a panic.

/// Bytes of a page header.
pub const PAGE_HEADER: usize = 16;
/// Bytes of a branch or leaf element.
pub const ELEMENT_LEN: usize = 16;
/// Page flag: branch page.
pub const BRANCH_PAGE: u16 = 0x01;
/// Page flag: leaf page.
pub const LEAF_PAGE: u16 = 0x02;
/// Page flag: meta page.
pub const META_PAGE: u16 = 0x04;
/// Page flag: freelist page.
pub const FREELIST_PAGE: u16 = 0x10;
/// Leaf element flag: the value is a nested bucket.
pub const BUCKET_LEAF_FLAG: u32 = 0x01;
/// Bytes of a bucket value's header `{root pgid u64, sequence u64}`; an inline bucket's page
/// follows it.
pub const BUCKET_HEADER: usize = 16;

/// Why a page cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PageError(pub String);

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// A parsed page over its bytes (the header and everything after it, overflow included).
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// Page ID written in the header (0 for an inline bucket's page).
    pub id: u64,
    /// Page type flags.
    pub flags: u16,
    /// Number of elements.
    pub count: u16,
    /// Extra contiguous pages.
    pub overflow: u32,
    bytes: &'a [u8],
}

/// A key/value element of a leaf page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafElement<'a> {
    /// Element flags (`BUCKET_LEAF_FLAG` for a nested bucket).
    pub flags: u32,
    /// The key.
    pub key: &'a [u8],
    /// The value (a bucket header for a nested bucket).
    pub value: &'a [u8],
}

/// An element of a branch page: the first key of a child page and its ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchElement<'a> {
    /// The child's first key.
    pub key: &'a [u8],
    /// The child page.
    pub pgid: u64,
}

fn field(bytes: &[u8], start: usize, len: u32, what: &str) -> Result<usize, PageError> {
    start
        .checked_add(len as usize)
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| {
            PageError(format!(
                "{what} at offset {start} with length {len} runs past the page end ({} bytes)",
                bytes.len()
            ))
        })
}

impl<'a> Page<'a> {
    /// Parses the header of the page held in `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, PageError> {
        let short = || PageError(format!("{} bytes cannot hold a page header", bytes.len()));
        Ok(Page {
            id: u64_at(bytes, 0).ok_or_else(short)?,
            flags: u16_at(bytes, 8).ok_or_else(short)?,
            count: u16_at(bytes, 10).ok_or_else(short)?,
            overflow: u32_at(bytes, 12).ok_or_else(short)?,
            bytes,
        })
    }

    /// Whether this is a leaf page.
    pub fn is_leaf(&self) -> bool {
        self.flags & LEAF_PAGE != 0
    }

    /// Whether this is a branch page.
    pub fn is_branch(&self) -> bool {
        self.flags & BRANCH_PAGE != 0
    }

    /// The page type as bbolt names it, for messages.
    pub fn kind(&self) -> &'static str {
        match self.flags {
            f if f & BRANCH_PAGE != 0 => "branch",
            f if f & LEAF_PAGE != 0 => "leaf",
            f if f & META_PAGE != 0 => "meta",
            f if f & FREELIST_PAGE != 0 => "freelist",
            _ => "unknown",
        }
    }

    /// The page's bytes, header included.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    fn element_start(&self, index: u16) -> Result<usize, PageError> {
        if index >= self.count {
            return Err(PageError(format!(
                "element {index} of a page with {} elements",
                self.count
            )));
        }
        let start = PAGE_HEADER + usize::from(index) * ELEMENT_LEN;
        field(self.bytes, start, ELEMENT_LEN as u32, "element")?;
        Ok(start)
    }

    /// Leaf element `index`, with its key and value.
    pub fn leaf(&self, index: u16) -> Result<LeafElement<'a>, PageError> {
        if !self.is_leaf() {
            return Err(PageError(format!(
                "a {} page has no leaf elements",
                self.kind()
            )));
        }
        let at = self.element_start(index)?;
        let read = |off: usize| u32_at(self.bytes, at + off).unwrap_or(0);
        let (flags, pos, ksize, vsize) = (read(0), read(4), read(8), read(12));
        let key_start = at
            .checked_add(pos as usize)
            .ok_or_else(|| PageError("element position overflows".into()))?;
        let key_end = field(self.bytes, key_start, ksize, "leaf key")?;
        let value_end = field(self.bytes, key_end, vsize, "leaf value")?;
        Ok(LeafElement {
            flags,
            key: &self.bytes[key_start..key_end],
            value: &self.bytes[key_end..value_end],
        })
    }

    /// Branch element `index`, with its key and child page.
    pub fn branch(&self, index: u16) -> Result<BranchElement<'a>, PageError> {
        if !self.is_branch() {
            return Err(PageError(format!(
                "a {} page has no branch elements",
                self.kind()
            )));
        }
        let at = self.element_start(index)?;
        let pos = u32_at(self.bytes, at).unwrap_or(0);
        let ksize = u32_at(self.bytes, at + 4).unwrap_or(0);
        let pgid = u64_at(self.bytes, at + 8).unwrap_or(0);
        let key_start = at
            .checked_add(pos as usize)
            .ok_or_else(|| PageError("element position overflows".into()))?;
        let key_end = field(self.bytes, key_start, ksize, "branch key")?;
        Ok(BranchElement {
            key: &self.bytes[key_start..key_end],
            pgid,
        })
    }

    /// The page IDs listed on a freelist page.
    pub fn freelist_ids(&self) -> Result<Vec<u64>, PageError> {
        if self.flags & FREELIST_PAGE == 0 {
            return Err(PageError(format!(
                "a {} page is not a freelist",
                self.kind()
            )));
        }
        // A count of 0xFFFF means the real count is the first u64 after the header.
        let (count, start) = if self.count == 0xFFFF {
            let n = u64_at(self.bytes, PAGE_HEADER)
                .ok_or_else(|| PageError("freelist count missing".into()))?;
            (n, PAGE_HEADER + 8)
        } else {
            (u64::from(self.count), PAGE_HEADER)
        };
        let len = count
            .checked_mul(8)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| start.saturating_add(*n) <= self.bytes.len())
            .ok_or_else(|| {
                PageError(format!(
                    "freelist of {count} IDs does not fit in its {} bytes",
                    self.bytes.len()
                ))
            })?;
        Ok(self.bytes[start..start + len]
            .chunks_exact(8)
            .map(|c| u64_at(c, 0).unwrap_or(0))
            .collect())
    }
}

/// Builds pages by hand, for tests here and in the reader.
#[cfg(test)]
pub(crate) mod build {
    use super::*;

    /// A page header.
    pub fn header(id: u64, flags: u16, count: u16, overflow: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(PAGE_HEADER);
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(&overflow.to_le_bytes());
        b
    }

    /// A leaf page (unpadded) holding `items` as (flags, key, value).
    pub fn leaf(id: u64, items: &[(u32, &[u8], &[u8])]) -> Vec<u8> {
        let mut page = header(id, LEAF_PAGE, items.len() as u16, 0);
        let mut data = Vec::new();
        let elements_end = PAGE_HEADER + items.len() * ELEMENT_LEN;
        for (i, (flags, key, value)) in items.iter().enumerate() {
            let at = PAGE_HEADER + i * ELEMENT_LEN;
            let pos = (elements_end + data.len() - at) as u32;
            page.extend_from_slice(&flags.to_le_bytes());
            page.extend_from_slice(&pos.to_le_bytes());
            page.extend_from_slice(&(key.len() as u32).to_le_bytes());
            page.extend_from_slice(&(value.len() as u32).to_le_bytes());
            data.extend_from_slice(key);
            data.extend_from_slice(value);
        }
        page.extend(data);
        page
    }

    /// A branch page (unpadded) holding `items` as (first key, child pgid).
    pub fn branch(id: u64, items: &[(&[u8], u64)]) -> Vec<u8> {
        let mut page = header(id, BRANCH_PAGE, items.len() as u16, 0);
        let mut data = Vec::new();
        let elements_end = PAGE_HEADER + items.len() * ELEMENT_LEN;
        for (i, (key, pgid)) in items.iter().enumerate() {
            let at = PAGE_HEADER + i * ELEMENT_LEN;
            let pos = (elements_end + data.len() - at) as u32;
            page.extend_from_slice(&pos.to_le_bytes());
            page.extend_from_slice(&(key.len() as u32).to_le_bytes());
            page.extend_from_slice(&pgid.to_le_bytes());
            data.extend_from_slice(key);
        }
        page.extend(data);
        page
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    #[test]
    fn leaf_elements_read_back_in_order() {
        let bytes = leaf(9, &[(0, b"a", b"1"), (BUCKET_LEAF_FLAG, b"bb", b"22")]);
        let page = Page::parse(&bytes).unwrap();
        assert_eq!((page.id, page.count, page.kind()), (9, 2, "leaf"));
        assert_eq!(
            page.leaf(0).unwrap(),
            LeafElement {
                flags: 0,
                key: b"a",
                value: b"1"
            }
        );
        let second = page.leaf(1).unwrap();
        assert_eq!(
            (second.flags, second.key, second.value),
            (1, &b"bb"[..], &b"22"[..])
        );
        assert!(page.leaf(2).is_err(), "past the count");
        assert!(page.branch(0).is_err(), "a leaf has no branch elements");
    }

    #[test]
    fn branch_elements_read_back() {
        let bytes = branch(3, &[(b"a", 4), (b"m", 5)]);
        let page = Page::parse(&bytes).unwrap();
        assert_eq!(page.kind(), "branch");
        assert_eq!(
            page.branch(1).unwrap(),
            BranchElement { key: b"m", pgid: 5 }
        );
    }

    #[test]
    fn truncated_pages_and_bad_offsets_are_errors() {
        assert!(Page::parse(&[0u8; 15]).is_err());
        let bytes = leaf(9, &[(0, b"key", b"value")]);
        // Cut anywhere: parsing the element fails cleanly.
        for cut in PAGE_HEADER..bytes.len() {
            let page = Page::parse(&bytes[..cut]).unwrap();
            assert!(page.leaf(0).is_err(), "cut at {cut}");
        }
        // A position pointing far past the end, and sizes that overflow.
        let mut bad = bytes.clone();
        bad[PAGE_HEADER + 4..PAGE_HEADER + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Page::parse(&bad).unwrap().leaf(0).is_err());
        let mut bad = bytes.clone();
        bad[PAGE_HEADER + 12..PAGE_HEADER + 16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Page::parse(&bad).unwrap().leaf(0).is_err());
        // A count larger than the page holds.
        let mut bad = bytes;
        bad[10..12].copy_from_slice(&500u16.to_le_bytes());
        assert!(Page::parse(&bad).unwrap().leaf(300).is_err());
    }

    #[test]
    fn freelist_ids_including_the_large_count_form() {
        let mut small = header(2, FREELIST_PAGE, 2, 0);
        small.extend_from_slice(&5u64.to_le_bytes());
        small.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(Page::parse(&small).unwrap().freelist_ids().unwrap(), [5, 7]);
        let mut large = header(2, FREELIST_PAGE, 0xFFFF, 0);
        large.extend_from_slice(&1u64.to_le_bytes());
        large.extend_from_slice(&9u64.to_le_bytes());
        assert_eq!(Page::parse(&large).unwrap().freelist_ids().unwrap(), [9]);
        let mut lying = header(2, FREELIST_PAGE, 0xFFFF, 0);
        lying.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(Page::parse(&lying).unwrap().freelist_ids().is_err());
    }
}
