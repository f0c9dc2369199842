//! Where a page should end: a guess of the key about N keys past the cursor, from the keys
//! already read, so that every page asks etcd for a bounded range `[cursor, bound)`.
//!
//! etcd 3.4 and 3.5 count every key from a request's start to its end whatever its limit
//! (mvcc's index walks the whole range), so a page over the rest of a 1M-key range costs the
//! whole rest; a bounded page costs its own keys. A guess only costs time, never correctness:
//! pages cover the range exactly whatever their bounds (a bound too near gives a short page,
//! one too far makes etcd walk further than needed, the limit still caps what it sends).
//!
//! Keys map to numbers: the bytes after a common prefix, as digits of a mixed radix, each
//! position's radix the number of distinct bytes seen there in keys (+ 1 when a key was seen
//! to end there: the digit 0). Keys made of few symbols per position
//! (`/registry/pods/NNNNN`, lowercase names) then interpolate almost linearly, which bytes
//! in base 256 would not (a carry from `9` to `0` would skip 246 empty digits).

/// Positions with an alphabet of their own; the ones after share one (huge keys stay cheap).
const POSITIONS: usize = 512;

/// The bytes seen at one position of keys, and their digits.
#[derive(Debug, Clone)]
struct Alphabet {
    /// Whether each byte was seen here.
    seen: [bool; 256],
    /// Whether a key was seen to end here (its digit 0).
    ends: bool,
    /// Each byte's digit: its rank among the seen bytes (+ 1 when keys end here), or the
    /// digit of the largest seen byte below it (0: none below), so the mapping keeps the
    /// keys' order.
    digit: [u16; 256],
    /// The seen bytes, ascending.
    symbols: Vec<u8>,
}

impl Alphabet {
    fn new() -> Self {
        Alphabet {
            seen: [false; 256],
            ends: false,
            digit: [0; 256],
            symbols: Vec::new(),
        }
    }

    /// Learns `b` (`None`: a key ends here).
    fn add(&mut self, b: Option<u8>) {
        match b {
            Some(b) if !self.seen[usize::from(b)] => self.seen[usize::from(b)] = true,
            None if !self.ends => self.ends = true,
            _ => return,
        }
        self.symbols = (0..=255u8).filter(|&b| self.seen[usize::from(b)]).collect();
        let mut digit = u16::from(self.ends);
        let mut below = 0;
        for b in 0..=255u8 {
            if self.seen[usize::from(b)] {
                below = digit;
                digit += 1;
            }
            self.digit[usize::from(b)] = below;
        }
    }

    fn radix(&self) -> u128 {
        (self.symbols.len() + usize::from(self.ends)).max(1) as u128
    }

    /// The byte of `digit`, `None` for the end of a key.
    fn byte(&self, digit: u16) -> Option<u8> {
        let rank = usize::from(digit).checked_sub(usize::from(self.ends))?;
        self.symbols.get(rank).copied()
    }
}

/// The bytes keys were seen to be made of, position by position, and the numbers keys map to.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeySpace {
    /// One alphabet per position up to POSITIONS, then one shared by the rest.
    positions: Vec<Alphabet>,
}

/// Most a bound's distance grows over the sample it was guessed from.
const MAX_GROWTH: f64 = 16.0;

/// Numbers stay at or under this (room to add a step without overflow).
const NUMBER_LIMIT: u128 = 1 << 126;

impl KeySpace {
    /// Learns the bytes of `key`.
    pub(crate) fn observe(&mut self, key: &[u8]) {
        let bytes = key.iter().map(|&b| Some(b)).chain([None]);
        for (i, b) in bytes.enumerate() {
            let at = i.min(POSITIONS);
            while self.positions.len() <= at {
                self.positions.push(Alphabet::new());
            }
            self.positions[at].add(b);
        }
    }

    fn alphabet(&self, position: usize) -> Option<&Alphabet> {
        self.positions.get(position.min(POSITIONS))
    }

    /// The positions of a frame starting at `prefix`, with their alphabets: as many as fit
    /// the radix product under NUMBER_LIMIT; and that product (the first number past every
    /// key of the frame).
    fn frame(&self, prefix: usize) -> (Vec<&Alphabet>, u128) {
        let mut alphabets = Vec::new();
        let mut limit = 1u128;
        let mut at = prefix;
        while let Some(alphabet) = self.alphabet(at) {
            match limit.checked_mul(alphabet.radix()) {
                Some(next) if next <= NUMBER_LIMIT => limit = next,
                _ => break,
            }
            alphabets.push(alphabet);
            at += 1;
        }
        (alphabets, limit)
    }

    /// The number of `key` in a frame of keys starting with its first `prefix` bytes.
    fn number(frame: &[&Alphabet], key: &[u8], prefix: usize) -> u128 {
        let mut n = 0u128;
        for (i, alphabet) in frame.iter().enumerate() {
            let d = key
                .get(prefix + i)
                .map_or(0, |&b| alphabet.digit[usize::from(b)]);
            n = n * alphabet.radix() + u128::from(d);
        }
        n
    }

    /// The key of number `n` in a frame of keys starting with `prefix`: its digits as bytes,
    /// up to its last non-zero digit or the first end of a key.
    fn key(frame: &[&Alphabet], prefix: &[u8], mut n: u128) -> Vec<u8> {
        let mut digits = vec![0u16; frame.len()];
        for (d, alphabet) in digits.iter_mut().zip(frame).rev() {
            *d = (n % alphabet.radix()) as u16;
            n /= alphabet.radix();
        }
        let used = digits.iter().rposition(|&d| d != 0).map_or(0, |i| i + 1);
        let mut key = prefix.to_vec();
        for (&d, alphabet) in digits[..used].iter().zip(frame) {
            match alphabet.byte(d) {
                Some(b) => key.push(b),
                None => break,
            }
        }
        key
    }

    /// A key about `want` keys past `from`, extrapolated from a sample: `[lo, hi]` held
    /// `keys` keys' worth of distance (`lo <= hi <= from`). `None` when no useful guess
    /// exists (no distance in the sample, or past every key of the frame): read to the end.
    pub(crate) fn guess(
        &self,
        (lo, hi, keys): (&[u8], &[u8], f64),
        from: &[u8],
        want: f64,
    ) -> Option<Vec<u8>> {
        if keys <= 0.0 || want <= 0.0 {
            return None;
        }
        let common = common_prefix(lo, from).min(common_prefix(lo, hi));
        // In the frame of the common prefix; when the guess carries past it, in the frame of
        // a shorter prefix (`...0129999` + 4,000 keys is past every `...012` key).
        (0..=common)
            .rev()
            .find_map(|prefix| self.guess_in(prefix, (lo, hi, keys), from, want))
            .or_else(|| self.carry(common, (lo, hi, keys), from, want))
    }

    /// A guess that carries past every byte seen where it lands: `...0199999` + 4,000 keys
    /// when no key of `...02` was read yet. The carry goes to the last byte of the common
    /// prefix that a byte used after the prefix follows (`1` -> `2`), the bytes between to
    /// their smallest, and what is left of the step below.
    fn carry(
        &self,
        common: usize,
        (lo, hi, keys): (&[u8], &[u8], f64),
        from: &[u8],
        want: f64,
    ) -> Option<Vec<u8>> {
        let (frame, limit) = self.frame(common);
        let number = |key| Self::number(&frame, key, common);
        let sample = number(hi).checked_sub(number(lo)).filter(|&d| d > 0)?;
        let step = self.step(sample, limit, keys, want);
        let over = (number(from) + step).checked_sub(limit)?.min(limit - 1);
        let mut used = [false; 256];
        for alphabet in self.positions.iter().skip(common) {
            for &b in &alphabet.symbols {
                used[usize::from(b)] = true;
            }
        }
        let j = (0..common.min(from.len()))
            .rev()
            .find(|&j| (usize::from(from[j]) + 1..256).any(|b| used[b]))?;
        let next = (usize::from(from[j]) + 1..256).find(|&b| used[b])? as u8;
        let mut bound = from[..j].to_vec();
        bound.push(next);
        for k in j + 1..common {
            let smallest = self.alphabet(k).and_then(|a| a.symbols.first().copied());
            bound.push(smallest.unwrap_or(0));
        }
        let below = Self::key(&frame, &[], over);
        bound.extend(below);
        (bound.as_slice() > from).then_some(bound)
    }

    /// The distance to go past `from`: the sample's, times the keys wanted per key sampled
    /// (at most MAX_GROWTH), at least 1, at most `limit`.
    fn step(&self, sample: u128, limit: u128, keys: f64, want: f64) -> u128 {
        let growth = (want / keys).min(MAX_GROWTH);
        let step = ((sample as f64) * growth).max(1.0);
        if step >= limit as f64 {
            limit
        } else {
            step as u128
        }
    }

    /// [`KeySpace::guess`] in the frame of keys starting with `from`'s first `prefix` bytes;
    /// `None` when the guess is past every key of the frame.
    fn guess_in(
        &self,
        prefix: usize,
        (lo, hi, keys): (&[u8], &[u8], f64),
        from: &[u8],
        want: f64,
    ) -> Option<Vec<u8>> {
        let (frame, limit) = self.frame(prefix);
        if frame.is_empty() {
            return None;
        }
        let number = |key| Self::number(&frame, key, prefix);
        let sample = number(hi).checked_sub(number(lo)).filter(|&d| d > 0)?;
        let step = self.step(sample, limit, keys, want);
        let target = number(from).checked_add(step).filter(|&t| t < limit)?;
        let bound = Self::key(&frame, &from[..prefix], target);
        (bound.as_slice() > from).then_some(bound)
    }
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(keys: &[&[u8]]) -> KeySpace {
        let mut space = KeySpace::default();
        for k in keys {
            space.observe(k);
        }
        space
    }

    fn bench_key(i: u64) -> Vec<u8> {
        format!("/registry/bench/{i:09}").into_bytes()
    }

    #[test]
    fn numbers_keep_the_order_of_keys() {
        let keys: Vec<&[u8]> = vec![b"", b"a", b"a\x00", b"ab", b"b", b"ba", b"zz", b"\xff"];
        let space = space(&keys);
        let (frame, _) = space.frame(0);
        let number = |k| KeySpace::number(&frame, k, 0);
        for pair in keys.windows(2) {
            assert!(number(pair[0]) <= number(pair[1]), "{pair:?}");
        }
        // Round trip of keys made of seen bytes.
        for k in [b"ab".as_slice(), b"zz", b"ba"] {
            assert_eq!(KeySpace::key(&frame, b"", number(k)), k);
        }
    }

    #[test]
    fn digit_keys_interpolate_almost_exactly() {
        let mut space = KeySpace::default();
        for i in 0..200_000 {
            space.observe(&bench_key(i));
        }
        // 4,000 keys read from 124,000: 5,000 more lie about 5,000 keys on.
        let (lo, hi) = (bench_key(124_000), bench_key(127_999));
        let bound = space.guess((&lo, &hi, 3999.0), &hi, 5000.0).unwrap();
        assert!(
            bound > bench_key(132_900) && bound < bench_key(133_100),
            "{bound:?}"
        );
        // Across a carry (199,999 -> 200,000) too.
        let (lo, hi) = (bench_key(196_000), bench_key(199_999));
        let bound = space.guess((&lo, &hi, 3999.0), &hi, 4000.0).unwrap();
        assert!(
            bound > bench_key(202_000) && bound < bench_key(205_000),
            "{bound:?}"
        );
        // Growth is capped: 16x the sample's distance at most.
        let (lo, hi) = (bench_key(1_000), bench_key(1_010));
        let bound = space.guess((&lo, &hi, 10.0), &hi, 1e9).unwrap();
        assert!(
            bound > bench_key(1_150) && bound <= bench_key(1_170),
            "{bound:?}"
        );
    }

    #[test]
    fn guesses_always_move_forward_and_stay_bounded() {
        let space = space(&[b"a", b"aa", b"ab", b"abc", b"b", b"ba"]);
        // No distance in the sample: no guess.
        assert_eq!(space.guess((b"ab", b"ab", 1.0), b"ab\x00", 10.0), None);
        assert_eq!(space.guess((b"ab", b"ab", 0.0), b"ab\x00", 10.0), None);
        // A tiny distance still gives a bound past `from`.
        let bound = space.guess((b"aa", b"ab", 1.0), b"ab\x00", 1.0).unwrap();
        assert!(bound.as_slice() > b"ab\x00".as_slice());
        // Past every key of the prefix: in a shorter prefix's frame; past every key at
        // all: no guess (read to the end).
        let bound = space.guess((b"aa", b"ab", 1.0), b"ab", 2.0).unwrap();
        assert!(bound.as_slice() > b"ab".as_slice(), "{bound:?}");
        assert_eq!(space.guess((b"a", b"b", 1.0), b"b", 1e9), None);
    }

    #[test]
    fn every_byte_seen_still_maps_in_order() {
        let keys: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b'k', b]).collect();
        let mut space = KeySpace::default();
        for k in &keys {
            space.observe(k);
        }
        let (frame, _) = space.frame(1);
        assert_eq!(frame[0].radix(), 256);
        let number = |k| KeySpace::number(&frame, k, 1);
        assert!(number(b"k\xfe") < number(b"k\xff"));
        assert!(number(b"k\x00") < number(b"k\x01"));
        let bound = space
            .guess((b"k\x10", b"k\x20", 16.0), b"k\x20", 16.0)
            .unwrap();
        assert!(bound.as_slice() > b"k\x20".as_slice() && bound.as_slice() < b"k\x40".as_slice());
    }
}
