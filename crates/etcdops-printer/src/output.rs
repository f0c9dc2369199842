//! Printing results: one `Serialize` value per command, shown as a table, JSON or simple lines.
//! Data goes to stdout; warnings and errors go to stderr.

use std::io::{self, Write};

use comfy_table::Table;
use etcdops::kv::Encoding;
use serde::Serialize;

use crate::{Compat, OutputFormat};

/// Borders as etcdctl draws them: `+---+` lines around the header and the table, `|` between
/// columns, no lines between rows.
const TABLE_STYLE: &str = "||--+-++|    ++++++";

/// A result that can be shown as a table and as etcdctl-style simple lines.
pub trait Render: Serialize {
    /// Column headers.
    fn headers(&self) -> Vec<&'static str>;
    /// Table rows, one cell per header.
    fn rows(&self) -> Vec<Vec<String>>;
    /// etcdctl-style `-w simple` lines.
    fn simple_lines(&self) -> Vec<String>;
    /// Columns (by index) whose cells hold several lines on purpose, each escaped by the
    /// view itself (a lease's keys, one per line). Every other cell is printed on one line
    /// whatever it holds: a newline in a member name cannot add a row.
    fn multiline_columns(&self) -> Vec<usize> {
        Vec::new()
    }
    /// Whether a simple line holds several lines on purpose, each escaped by the view (a
    /// value under its key, as etcdctl prints it). Otherwise each is printed as one line.
    fn multiline_simple(&self) -> bool {
        false
    }
    /// Lines for stderr after the output (each escaped when printed): what etcdctl writes
    /// there in `format` (an endpoint that failed), or etcdops' own note under `compat`.
    fn stderr_lines(&self, format: OutputFormat, compat: Compat) -> Vec<String> {
        let _ = (format, compat);
        Vec::new()
    }
    /// etcdctl's own `-w json` of this result (`--compat etcdctl`), IDs as hex strings where
    /// etcdctl's `--hex` makes them so; `None` for a command etcdctl does not have, which
    /// prints etcdops' JSON.
    fn etcdctl_json(&self, hex: bool) -> Option<serde_json::Value> {
        let _ = hex;
        None
    }
    /// etcdctl's `-w table` of this result (`--compat etcdctl`); `None` for a command etcdctl
    /// draws no table for, which prints etcdops' table.
    fn etcdctl_table(&self) -> Option<crate::etcdctl_table::EtcdctlTable> {
        None
    }
    /// etcdctl's `-w protobuf` of this result (the response message, encoded); `None` for a
    /// command whose answer is no single etcd message, which `-w protobuf` then refuses.
    fn etcdctl_protobuf(&self) -> Option<Vec<u8>> {
        None
    }
    /// etcdctl's `-w fields` lines of this result; `None` for a command etcdctl prints no
    /// fields for, which `-w fields` then refuses.
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        None
    }
}

/// The refusal of `-w protobuf` for a command whose answer is no single etcd message.
pub fn no_protobuf() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "`-w protobuf` prints etcd's response message, and this command's answer is none; use -w json",
    )
}

/// The refusal of `-w fields` for a command etcdctl has no fields output for.
pub fn no_fields() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "`-w fields` is etcdctl's, and etcdctl prints no fields for this command; use -w json",
    )
}

/// Prints `value` in `format` to stdout: the stdout half of [`crate::Printer::print`], the one
/// door for callers (it also prints the value's stderr lines).
pub(crate) fn print<T: Render>(format: OutputFormat, value: &T) -> io::Result<()> {
    write_value(&mut io::stdout().lock(), format, value)
}

/// Writes `value` in `format` to `out`, as [`print`] prints it.
fn write_value<T: Render>(out: &mut dyn Write, format: OutputFormat, value: &T) -> io::Result<()> {
    match format {
        OutputFormat::Json => {
            let json = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
            writeln!(out, "{}", json_safe(json))?;
        }
        etcdctl if etcdctl.is_etcdctl_json() => {
            let hex = format == OutputFormat::EtcdctlJsonHex;
            match value.etcdctl_json(hex) {
                // etcdctl prints its JSON on one line.
                Some(theirs) => writeln!(out, "{}", json_line(&theirs)?)?,
                None => {
                    let json = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
                    writeln!(out, "{}", json_safe(json))?;
                }
            }
        }
        // Whatever a command put in its cells and lines (names and errors from etcd, fields
        // of a manifest), no control character reaches the terminal raw and each cell and
        // line stays one line, unless the view says it holds several lines on purpose (its
        // data escaped line by line with `text` or `plain`).
        OutputFormat::EtcdctlTable if value.etcdctl_table().is_some() => {
            if let Some(table) = value.etcdctl_table() {
                write!(out, "{}", table.render())?;
            }
        }
        OutputFormat::Table | OutputFormat::EtcdctlTable => {
            let mut table = Table::new();
            table.load_preset(TABLE_STYLE);
            table.set_header(value.headers());
            let multiline = value.multiline_columns();
            for row in value.rows() {
                table.add_row(row.iter().enumerate().map(|(column, cell)| {
                    let lines = if multiline.contains(&column) {
                        Lines::Keep
                    } else {
                        Lines::Escape
                    };
                    escape(cell, lines)
                }));
            }
            writeln!(out, "{table}")?;
        }
        OutputFormat::Protobuf => {
            out.write_all(&value.etcdctl_protobuf().ok_or_else(no_protobuf)?)?;
        }
        OutputFormat::Fields => {
            // Each field one line: values are quoted as Go's %q quotes them.
            for line in value.etcdctl_fields().ok_or_else(no_fields)? {
                writeln!(out, "{line}")?;
            }
        }
        OutputFormat::Simple | OutputFormat::EtcdctlJson | OutputFormat::EtcdctlJsonHex => {
            let lines = if value.multiline_simple() {
                Lines::Keep
            } else {
                Lines::Escape
            };
            for line in value.simple_lines() {
                writeln!(out, "{}", escape(&line, lines))?;
            }
        }
    }
    out.flush()
}

/// Whether [`escape`] leaves newlines (and tabs) as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Multi-line text stays multi-line (a value printed on its own).
    Keep,
    /// Everything on one line: `\n` for a newline (keys, names, a value beside its key).
    Escape,
}

/// `s` with every control character (C0, DEL, C1: ESC, BEL, CR, NUL, ...) and every
/// invisible direction or format mark written as a visible escape (`\x1b`, `\r`, `\0`,
/// `\u{202e}`), so that etcd data cannot move the cursor, recolour, retitle the terminal or
/// forge an output line. Backslashes are left alone (JSON values stay readable); `-w json`
/// shows the exact text.
pub fn escape(s: &str, lines: Lines) -> String {
    let needs = |c: char| {
        let keep = lines == Lines::Keep && (c == '\n' || c == '\t');
        !keep && (c.is_control() || is_invisible_mark(c))
    };
    if !s.chars().any(needs) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !needs(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out
}

/// JSON with the characters serde leaves raw inside strings but a terminal may act on (DEL,
/// the C1 controls such as U+009B CSI, direction marks) written as `\u` escapes: the same
/// JSON to a parser, inert on a terminal.
pub fn json_safe(json: String) -> String {
    let risky = |c: char| c.is_control() || is_invisible_mark(c);
    if !json.chars().any(|c| risky(c) && c != '\n') {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if risky(c) && c != '\n' {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A value as one line of JSON, [`json_safe`].
pub fn json_line<T: Serialize>(value: &T) -> io::Result<String> {
    serde_json::to_string(value)
        .map(json_safe)
        .map_err(io::Error::other)
}

/// Zero-width and bidirectional marks that make text look other than it is.
fn is_invisible_mark(c: char) -> bool {
    matches!(c as u32, 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2069 | 0xfeff)
}

/// Etcd data (a key, a value, a name) for one line of table or simple output: text escaped
/// (newlines too), base64 marked `base64:` so that it cannot pass for a text key that looks
/// like base64.
pub fn text(value: &str, encoding: Encoding) -> String {
    match encoding {
        Encoding::Base64 => format!("base64:{value}"),
        Encoding::Text | Encoding::Redacted => escape(value, Lines::Escape),
    }
}

/// Etcd data that is one line in any encoding: a member name, a lease's key, an alarm.
pub fn plain(value: &str) -> String {
    escape(value, Lines::Escape)
}

/// Prints `etcdops: warning: {message}` to stderr, escaped: warnings may quote etcd data.
pub fn warn(message: &str) {
    eprintln!("etcdops: warning: {}", plain(message));
}

/// Prints `etcdops: {message}` to stderr, escaped.
pub fn note(message: &str) {
    eprintln!("etcdops: {}", plain(message));
}

/// Bytes in SI units as etcdctl prints them (`20 kB`, `3.1 MB`).
pub fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

/// Go's `humanize.Bytes` (SI units, as etcdctl and etcdutl print sizes): one decimal below 10, none
/// above, the value rounded half up at one decimal first.
pub fn humanize_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 10 {
        return format!("{bytes} B");
    }
    let e = ((bytes as f64).ln() / 1000f64.ln()).floor();
    let unit = UNITS[(e as usize).min(UNITS.len() - 1)];
    let value = ((bytes as f64) / 1000f64.powf(e) * 10.0 + 0.5).floor() / 10.0;
    if value < 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// An optional value as a cell: empty when absent.
pub fn cell<T: ToString>(value: &Option<T>) -> String {
    value.as_ref().map(ToString::to_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two rows whose names are what etcd or a manifest may hold, and a column of keys
    /// that is several lines on purpose.
    #[derive(Serialize)]
    struct Named {
        names: Vec<String>,
    }

    impl Render for Named {
        fn headers(&self) -> Vec<&'static str> {
            vec!["NAME", "KEYS"]
        }
        fn rows(&self) -> Vec<Vec<String>> {
            self.names
                .iter()
                .map(|n| vec![n.clone(), format!("{}\n{}", plain("/a"), plain("/b"))])
                .collect()
        }
        fn simple_lines(&self) -> Vec<String> {
            self.names.clone()
        }
        fn multiline_columns(&self) -> Vec<usize> {
            vec![1]
        }
    }

    fn rendered(format: OutputFormat, value: &Named) -> String {
        let mut out = Vec::new();
        write_value(&mut out, format, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_name_holding_control_characters_stays_in_its_row() {
        let names = vec![
            "m0\nFAKE-ROW".to_string(),
            "m1\r\tx\x07\x1b[2J\u{202e}gnp.exe\u{85}".to_string(),
        ];
        let value = Named { names };
        let table = rendered(OutputFormat::Table, &value);
        // Header, borders and, per row, the name's one line beside the two keys' lines.
        assert_eq!(table.lines().count(), 3 + 2 * 2 + 1, "{table}");
        assert!(
            !table
                .lines()
                .any(|l| l.contains("FAKE-ROW") && !l.contains("m0"))
        );
        assert!(table.contains("m0\\nFAKE-ROW"), "{table}");
        assert!(
            table.contains("m1\\r\\tx\\x07\\x1b[2J\\u{202e}gnp.exe\\x85"),
            "{table}"
        );
        assert!(
            table.contains("| /b "),
            "the keys' own lines are kept:\n{table}"
        );
        for c in table.chars() {
            assert!(c == '\n' || !c.is_control(), "{c:?} raw in:\n{table}");
        }
        let simple = rendered(OutputFormat::Simple, &value);
        assert_eq!(
            simple,
            "m0\\nFAKE-ROW\nm1\\r\\tx\\x07\\x1b[2J\\u{202e}gnp.exe\\x85\n"
        );
    }

    #[test]
    fn control_characters_are_shown_as_escapes() {
        let nasty = "a\x1b]0;title\x07b\rc\0d\x7f\u{9b}e\u{202e}f";
        assert_eq!(
            escape(nasty, Lines::Escape),
            "a\\x1b]0;title\\x07b\\rc\\0d\\x7f\\x9be\\u{202e}f"
        );
        assert_eq!(plain("k\nFAKE-LINE"), "k\\nFAKE-LINE");
        assert_eq!(escape("v1\nv2\tx\x1b", Lines::Keep), "v1\nv2\tx\\x1b");
        assert_eq!(plain("/registry/pods/a\\b ü"), "/registry/pods/a\\b ü");
    }

    #[test]
    fn json_keeps_its_meaning_without_raw_c1_controls() {
        let value = serde_json::json!({"k": "a\u{9b}2J\u{7f}\u{202e}b\u{1b}"});
        let line = json_line(&value).unwrap();
        assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            value
        );
    }

    #[test]
    fn base64_is_marked() {
        assert_eq!(text("/wCA", Encoding::Base64), "base64:/wCA");
        assert_eq!(text("/wCA", Encoding::Text), "/wCA");
        assert_eq!(text("x\ny", Encoding::Text), "x\\ny");
    }

    #[test]
    fn bytes_print_like_etcdctl() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(20480), "20 kB");
        assert_eq!(human_bytes(3_145_728), "3.1 MB");
        assert_eq!(human_bytes(2_147_483_648), "2.1 GB");
    }
}
