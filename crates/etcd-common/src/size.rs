//! Sizes written by people: `5242880`, `8MiB`, `5MB`, `512KiB`, `1Gi`. One parser for every
//! flag and environment variable, so `--part-size 5MB` and `ETCDOPS_PART_SIZE=5MB` mean the
//! same. Decimal units are powers of 1000 (`k`, `kB`, `M`, `MB`, `G`, `GB`, `T`, `TB`);
//! binary units powers of 1024 (`KiB`, `MiB`, `GiB`, `TiB`, and Kubernetes' `Ki`, `Mi`, `Gi`,
//! `Ti`). Case does not matter; a space may stand between number and unit.

/// Parses a size in bytes; the error says what was wrong and how to write it.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size; write it like 8MiB or 5242880"))?;
    let scale: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "ki" | "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mi" | "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gi" | "gib" => 1 << 30,
        "t" | "tb" => 1_000_000_000_000,
        "ti" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "'{text}' has an unknown unit; use KiB, MiB, GiB (powers of 1024) or kB, MB, GB"
            ));
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_binary_units() {
        assert_eq!(parse_size("8388608"), Ok(8 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("8Mi"), Ok(8 << 20));
        assert_eq!(parse_size("5 MB"), Ok(5_000_000));
        assert_eq!(parse_size("5M"), Ok(5_000_000));
        assert_eq!(parse_size("512kib"), Ok(512 << 10));
        assert_eq!(parse_size("1G"), Ok(1_000_000_000));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("MiB").is_err());
        assert!(
            parse_size("8 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999").is_err());
    }
}
