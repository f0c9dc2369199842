//! Leases, read-only: which leases exist, how long they have left and which keys they hold.
//!
//! Revoking is deliberately missing: revoking a lease deletes every key attached to it.

use std::fmt;
use std::str::FromStr;

use etcd_client::LeaseTimeToLiveOptions;
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::client::Client;
use crate::connect::EndpointClient;
use crate::error::Result;
use crate::header::ResponseHeader;

/// How many time-to-live requests `lease list` keeps in flight (Kubernetes clusters hold
/// thousands of leases, one per event batch).
const CONCURRENT_LOOKUPS: usize = 16;

/// A lease ID. Displays and serializes as 16 lowercase hex digits, zero-padded, as etcdctl
/// prints lease IDs (`694d77aa9e38260f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LeaseId(pub i64);

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl Serialize for LeaseId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LeaseId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for LeaseId {
    type Err = String;

    /// Parses hex as etcdctl prints it, padded or not (an optional `0x` is accepted).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.trim().trim_start_matches("0x");
        match i64::from_str_radix(hex, 16) {
            Ok(id) if id > 0 => Ok(LeaseId(id)),
            _ => Err(format!(
                "'{s}' is not a lease ID (hex, as the lease list shows it)"
            )),
        }
    }
}

/// One lease as `lease list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaseInfo {
    /// Lease ID.
    pub id: LeaseId,
    /// TTL it was granted with, in seconds.
    pub granted_ttl: i64,
    /// Seconds left before it expires (unless kept alive).
    pub remaining_ttl: i64,
    /// Number of keys attached to it.
    pub keys: usize,
}

/// Every live lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaseList {
    /// Leases in ID order. A lease that expired between listing and looking it up is left out.
    pub leases: Vec<LeaseInfo>,
    /// Every lease ID as etcd listed it, in its order (soonest expiry first), before any
    /// lookup: what etcdctl's `lease list` prints.
    #[serde(skip)]
    pub listed: Vec<LeaseId>,
    /// The header of etcd's answer to the listing.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

/// One lease in detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaseTimeToLive {
    /// Lease ID.
    pub id: LeaseId,
    /// False when etcd has no such lease (expired or revoked).
    pub found: bool,
    /// TTL it was granted with, in seconds (0 when not found).
    pub granted_ttl: i64,
    /// Seconds left (-1 when not found).
    pub remaining_ttl: i64,
    /// Keys attached, as text (bytes that are not UTF-8 are replaced); `None` unless asked for.
    pub keys: Option<Vec<String>>,
    /// The same keys as etcd holds them (bytes), in etcd's order; `None` unless asked for.
    #[serde(skip)]
    pub raw_keys: Option<Vec<Vec<u8>>>,
    /// The header of etcd's answer.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

async fn time_to_live(
    client: &EndpointClient,
    id: LeaseId,
    with_keys: bool,
) -> Result<LeaseTimeToLive> {
    let response = client
        .call("lease timetolive", |mut c| async move {
            let options = LeaseTimeToLiveOptions::new();
            let options = if with_keys {
                options.with_keys()
            } else {
                options
            };
            c.lease_time_to_live(id.0, Some(options)).await
        })
        .await?;
    // etcd answers an unknown lease with TTL -1 and granted TTL 0 rather than an error.
    let found = !(response.ttl() == -1 && response.granted_ttl() == 0);
    let raw_keys = with_keys.then(|| response.keys().to_vec());
    Ok(LeaseTimeToLive {
        id,
        found,
        granted_ttl: response.granted_ttl(),
        remaining_ttl: response.ttl(),
        keys: raw_keys.as_ref().map(|keys| {
            keys.iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect()
        }),
        raw_keys,
        header: ResponseHeader::of(response.header()),
    })
}

/// The cluster's leases ([`Client::leases`]), read only.
#[derive(Debug, Clone, Copy)]
pub struct Leases<'c>(&'c Client);

impl Leases<'_> {
    /// The IDs of every lease granted, in one LeaseLeases call (no TTL lookup per lease, unlike
    /// [`Leases::list`]): what counting leases needs on a cluster with many of them.
    pub async fn ids(&self) -> Result<Vec<LeaseId>> {
        let response = self
            .0
            .read_any(|client| async move {
                client
                    .call("lease list", |mut c| async move { c.leases().await })
                    .await
            })
            .await?;
        Ok(response.leases().iter().map(|l| LeaseId(l.id())).collect())
    }

    /// Lists every lease with its TTLs and the number of keys attached.
    pub async fn list(&self) -> Result<LeaseList> {
        let (client, response) = self
            .0
            .read_any(|client| async move {
                let response = client
                    .call("lease list", |mut c| async move { c.leases().await })
                    .await?;
                Ok((client, response))
            })
            .await?;
        let listed: Vec<LeaseId> = response.leases().iter().map(|l| LeaseId(l.id())).collect();
        let mut ids = listed.clone();
        ids.sort();
        let client = &client;
        let details: Vec<LeaseTimeToLive> = stream::iter(ids)
            .map(|id| async move { time_to_live(client, id, true).await })
            .buffered(CONCURRENT_LOOKUPS)
            .try_collect()
            .await?;
        Ok(LeaseList {
            leases: details
                .into_iter()
                .filter(|d| d.found)
                .map(|d| LeaseInfo {
                    id: d.id,
                    granted_ttl: d.granted_ttl,
                    remaining_ttl: d.remaining_ttl,
                    keys: d.keys.map_or(0, |k| k.len()),
                })
                .collect(),
            listed,
            header: ResponseHeader::of(response.header()),
        })
    }

    /// One lease's TTLs, and with `with_keys` the keys attached to it.
    pub async fn time_to_live(&self, id: LeaseId, with_keys: bool) -> Result<LeaseTimeToLive> {
        if id.0 <= 0 {
            return Err(etcd_common::InvalidOption::input(
                "lease ID",
                format!("{id} is not a lease ID; the lease list shows the IDs"),
            )
            .into());
        }
        self.0
            .read_any(|client| async move { time_to_live(&client, id, with_keys).await })
            .await
    }
}

impl Client {
    /// The cluster's leases, read only.
    pub fn leases(&self) -> Leases<'_> {
        Leases(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ids_print_padded_like_etcdctl_and_parse_either_way() {
        let id = LeaseId(0x694d_77aa_9e38_260f);
        assert_eq!(id.to_string(), "694d77aa9e38260f");
        assert_eq!(LeaseId(0x1f).to_string(), "000000000000001f");
        assert_eq!(
            serde_json::to_string(&LeaseId(0x1f)).unwrap(),
            "\"000000000000001f\""
        );
        assert_eq!("1f".parse::<LeaseId>(), Ok(LeaseId(0x1f)));
        assert_eq!("000000000000001f".parse::<LeaseId>(), Ok(LeaseId(0x1f)));
        assert_eq!("0x1f".parse::<LeaseId>(), Ok(LeaseId(0x1f)));
        assert!("xyz".parse::<LeaseId>().is_err());
        assert!("0".parse::<LeaseId>().is_err());
        assert!("ffffffffffffffff".parse::<LeaseId>().is_err());
    }
}
