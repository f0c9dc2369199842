//! bbolt's two meta pages at the start of the db, and how bbolt chooses between them.
//!
//! Meta page layout after the 16-byte page header, little-endian: magic u32 (0xED0CDAED),
//! version u32 (2), page size u32, flags u32, root bucket {pgid u64, sequence u64}, freelist
//! pgid u64, high-water pgid u64, txid u64, checksum u64 = FNV-1a 64 of the 56 bytes before it.

use serde::Serialize;

use super::page::{PAGE_HEADER, u32_at, u64_at};

const META_LEN: usize = 64;
const MAGIC: u32 = 0xED0C_DAED;
const VERSION: u32 = 2;
/// Bytes of a db's start that hold both meta pages for any page size up to 64 KiB.
pub const META_REGION: usize = 2 * 65536;

/// What a valid meta page says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MetaSummary {
    /// Page size in bytes.
    pub page_size: u32,
    /// Transaction ID of the newest valid meta.
    pub txid: u64,
    /// Page ID of the root bucket.
    pub root_pgid: u64,
    /// High-water mark: pages in use are below it.
    pub high_water_pgid: u64,
}

/// FNV-1a 64, as bbolt checksums its meta pages.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn parse_meta(page: &[u8]) -> Result<MetaSummary, String> {
    let meta = page
        .get(PAGE_HEADER..PAGE_HEADER + META_LEN)
        .ok_or("the db is shorter than a meta page")?;
    // The bytes found are not shown: a file that is not a db may hold anything (a secret
    // file a link in a store pointed to).
    if u32_at(meta, 0) != Some(MAGIC) {
        return Err("bad magic (not a bbolt db)".into());
    }
    let version = u32_at(meta, 4).unwrap_or(0);
    if version != VERSION {
        return Err(format!("unsupported bbolt version {version}"));
    }
    let checksum = u64_at(meta, 56).unwrap_or(0);
    if fnv1a64(&meta[..56]) != checksum {
        return Err("meta checksum mismatch".into());
    }
    Ok(MetaSummary {
        page_size: u32_at(meta, 8).unwrap_or(0),
        root_pgid: u64_at(meta, 16).unwrap_or(0),
        high_water_pgid: u64_at(meta, 40).unwrap_or(0),
        txid: u64_at(meta, 48).unwrap_or(0),
    })
}

/// The freelist page ID recorded in the meta page `check_meta_pages` chose (`u64::MAX` when
/// the freelist is not synced, as etcd runs bbolt).
pub(crate) fn chosen_freelist(head: &[u8], best: &MetaSummary) -> u64 {
    [0, best.page_size as usize]
        .into_iter()
        .filter_map(|at| head.get(at..))
        .filter(|page| parse_meta(page).is_ok_and(|m| m == *best))
        .find_map(|page| u64_at(page, PAGE_HEADER + 32))
        .unwrap_or(u64::MAX)
}

/// Checks the meta pages at the start of a db (`head` holds at least its first two pages) and
/// returns the newest valid one, as bbolt itself chooses.
pub fn check_meta_pages(head: &[u8], db_size: u64) -> Result<MetaSummary, String> {
    let first = parse_meta(head);
    let page_size = match &first {
        Ok(m) => m.page_size as usize,
        // Meta 0 damaged: find meta 1 at the usual page sizes.
        Err(_) => [4096usize, 16384, 65536]
            .into_iter()
            .find(|ps| head.get(*ps..).is_some_and(|p| parse_meta(p).is_ok()))
            .unwrap_or(4096),
    };
    if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
        return Err(format!("implausible page size {page_size}"));
    }
    let second = head
        .get(page_size..)
        .ok_or_else(|| "the db is shorter than two pages".to_string())
        .and_then(parse_meta);
    // A meta page that disagrees with the layout's page size is damaged (found by fuzzing: a
    // page size of 0 in the newer meta page divided by zero below).
    let same_page_size = |meta: MetaSummary| {
        if meta.page_size as usize == page_size {
            Ok(meta)
        } else {
            Err(format!(
                "meta page says the page size is {} but the db's pages are {page_size} bytes",
                meta.page_size
            ))
        }
    };
    let (first, second) = (
        first.and_then(same_page_size),
        second.and_then(same_page_size),
    );
    let best = match (first, second) {
        (Ok(a), Ok(b)) => {
            if a.txid >= b.txid {
                a
            } else {
                b
            }
        }
        (Ok(a), Err(_)) | (Err(_), Ok(a)) => a,
        (Err(a), Err(b)) => return Err(format!("both meta pages are invalid: {a}; {b}")),
    };
    if db_size % u64::from(best.page_size) != 0 {
        return Err(format!(
            "db size {db_size} is not a multiple of the page size {}",
            best.page_size
        ));
    }
    if best
        .high_water_pgid
        .saturating_mul(u64::from(best.page_size))
        > db_size
    {
        return Err(format!(
            "meta says {} pages are in use but the db holds only {}",
            best.high_water_pgid,
            db_size / u64::from(best.page_size)
        ));
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_page(page_size: usize, txid: u64, hwm: u64) -> Vec<u8> {
        let mut page = vec![0u8; page_size];
        let mut meta = Vec::new();
        meta.extend_from_slice(&MAGIC.to_le_bytes());
        meta.extend_from_slice(&VERSION.to_le_bytes());
        meta.extend_from_slice(&(page_size as u32).to_le_bytes());
        meta.extend_from_slice(&0u32.to_le_bytes());
        meta.extend_from_slice(&3u64.to_le_bytes()); // root pgid
        meta.extend_from_slice(&0u64.to_le_bytes()); // sequence
        meta.extend_from_slice(&u64::MAX.to_le_bytes()); // freelist
        meta.extend_from_slice(&hwm.to_le_bytes());
        meta.extend_from_slice(&txid.to_le_bytes());
        let sum = fnv1a64(&meta);
        meta.extend_from_slice(&sum.to_le_bytes());
        page[PAGE_HEADER..PAGE_HEADER + META_LEN].copy_from_slice(&meta);
        page
    }

    #[test]
    fn newest_valid_meta_wins_and_damage_is_found() {
        let mut db = meta_page(4096, 7, 4);
        db.extend(meta_page(4096, 8, 4));
        db.resize(4 * 4096, 0);
        let meta = check_meta_pages(&db, db.len() as u64).unwrap();
        assert_eq!((meta.page_size, meta.txid, meta.root_pgid), (4096, 8, 3));

        // Damage meta 1: meta 0 still serves.
        db[4096 + 40] ^= 0xff;
        assert_eq!(check_meta_pages(&db, db.len() as u64).unwrap().txid, 7);
        // Damage both: refused.
        db[40] ^= 0xff;
        assert!(check_meta_pages(&db, db.len() as u64).is_err());
    }

    #[test]
    fn a_newer_meta_page_with_another_page_size_is_not_used() {
        // Found by fuzzing: meta 1 (newer, valid checksum) says the page size is 0.
        let mut db = meta_page(4096, 7, 4);
        let mut second = meta_page(4096, 8, 4);
        second[PAGE_HEADER + 8..PAGE_HEADER + 12].copy_from_slice(&0u32.to_le_bytes());
        let sum = fnv1a64(&second[PAGE_HEADER..PAGE_HEADER + 56]);
        second[PAGE_HEADER + 56..PAGE_HEADER + 64].copy_from_slice(&sum.to_le_bytes());
        db.extend(second);
        db.resize(4 * 4096, 0);
        let meta = check_meta_pages(&db, db.len() as u64).unwrap();
        assert_eq!((meta.page_size, meta.txid), (4096, 7));
        // With meta 0 damaged too, nothing is usable: an error, not a division by zero.
        db[40] ^= 0xff;
        let err = check_meta_pages(&db, db.len() as u64).unwrap_err();
        assert!(err.contains("invalid"), "{err}");
    }

    #[test]
    fn truncated_or_foreign_files_are_refused() {
        let mut db = meta_page(4096, 1, 10);
        db.extend(meta_page(4096, 2, 10));
        db.resize(4 * 4096, 0);
        let err = check_meta_pages(&db, db.len() as u64).unwrap_err();
        assert!(err.contains("10 pages"), "{err}");
        assert!(check_meta_pages(b"SQLite format 3\0", 16).is_err());
        assert!(check_meta_pages(&db, 4097).is_err());
    }
}
