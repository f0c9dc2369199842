//! Member and cluster IDs, printed the way etcd's logs and etcdctl's tables print them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A member or cluster ID. Displays and serializes as lowercase hex without padding
/// (`5f62a924ac85910`), so IDs survive JSON tools that lose precision on 64-bit numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MemberId(pub u64);

impl fmt::Display for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

impl Serialize for MemberId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemberId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for MemberId {
    type Err = String;

    /// Parses hex as etcd prints it (an optional `0x` is accepted).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.trim().trim_start_matches("0x");
        u64::from_str_radix(hex, 16)
            .map(MemberId)
            .map_err(|_| format!("'{s}' is not a member ID (hex, as the member list shows it)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_as_unpadded_lowercase_hex() {
        let id = MemberId(0x05f6_2a92_4ac8_5910);
        assert_eq!(id.to_string(), "5f62a924ac85910");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"5f62a924ac85910\"");
        assert_eq!("5f62a924ac85910".parse::<MemberId>(), Ok(id));
        assert!("zz".parse::<MemberId>().is_err());
        let back: MemberId = serde_json::from_str("\"5f62a924ac85910\"").unwrap();
        assert_eq!(back, id);
    }
}
