//! etcdctl's `-w table` under its personality: its columns (the cells of its `simple` lines,
//! under its header names), headers centred and cells right-aligned as its tablewriter draws
//! them, with ASCII borders (etcdctl 3.4 to 3.6) or Unicode box characters (3.7 and later).

/// The borders of a release's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Borders {
    /// `+---+`, `|` (etcdctl 3.4 to 3.6, tablewriter 0.x).
    Ascii,
    /// `┌─┬┐ │ ├┼┤ └┴┘` (etcdctl and etcdutl 3.7, tablewriter 1.x).
    Unicode,
}

impl Borders {
    /// The borders of the release that answered (`3.7.1`); unknown releases get ASCII.
    pub fn of_release(version: Option<&str>) -> Borders {
        let newer = |v: &str| etcdops::endpoint::is_release_at_least(v, (3, 7));
        match version.is_some_and(newer) {
            true => Borders::Unicode,
            false => Borders::Ascii,
        }
    }

    /// Left, middle, right and line characters of the top, separator and bottom lines, and
    /// the column separator.
    fn glyphs(self) -> ([[char; 4]; 3], char) {
        match self {
            Borders::Ascii => (
                [
                    ['+', '+', '+', '-'],
                    ['+', '+', '+', '-'],
                    ['+', '+', '+', '-'],
                ],
                '|',
            ),
            Borders::Unicode => (
                [
                    ['┌', '┬', '┐', '─'],
                    ['├', '┼', '┤', '─'],
                    ['└', '┴', '┘', '─'],
                ],
                '│',
            ),
        }
    }
}

/// One etcdctl table: header names (as etcdctl spells them, upper case), rows of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdctlTable {
    /// Column names.
    pub headers: Vec<&'static str>,
    /// Cells, one row per line, as many as headers.
    pub rows: Vec<Vec<String>>,
    /// The release's borders.
    pub borders: Borders,
}

impl EtcdctlTable {
    /// The table as etcdctl prints it, every line ended by a newline.
    pub fn render(&self) -> String {
        let width = |s: &str| s.chars().count();
        let columns = self.headers.len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                let cells = self.rows.iter().filter_map(|r| r.get(c)).map(|s| width(s));
                cells.chain([width(self.headers[c])]).max().unwrap_or(0)
            })
            .collect();
        let ([top, middle, bottom], bar) = self.borders.glyphs();
        let rule = |[left, cross, right, line]: [char; 4]| {
            let parts: Vec<String> = widths
                .iter()
                .map(|w| line.to_string().repeat(w + 2))
                .collect();
            format!("{left}{}{right}\n", parts.join(&cross.to_string()))
        };
        let line =
            |cells: Vec<String>| format!("{bar} {} {bar}\n", cells.join(&format!(" {bar} ")));
        let mut out = rule(top);
        let header = self.headers.iter().zip(&widths).map(|(h, w)| {
            let gap = w - width(h);
            format!("{}{h}{}", " ".repeat(gap / 2), " ".repeat(gap - gap / 2))
        });
        out.push_str(&line(header.collect()));
        out.push_str(&rule(middle));
        for row in &self.rows {
            let cells = widths.iter().enumerate().map(|(c, w)| {
                let cell = row.get(c).map(String::as_str).unwrap_or_default();
                format!("{}{cell}", " ".repeat(w - width(cell)))
            });
            out.push_str(&line(cells.collect()));
        }
        out.push_str(&rule(bottom));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_tables_are_etcdctl_3_5s() {
        // etcdctl 3.5.1's `endpoint hashkv -w table`.
        let table = EtcdctlTable {
            headers: vec!["ENDPOINT", "HASH"],
            rows: vec![vec!["127.0.0.1:23791".into(), "10320978".into()]],
            borders: Borders::of_release(Some("3.5.1")),
        };
        assert_eq!(
            table.render(),
            "+-----------------+----------+\n\
             |    ENDPOINT     |   HASH   |\n\
             +-----------------+----------+\n\
             | 127.0.0.1:23791 | 10320978 |\n\
             +-----------------+----------+\n"
        );
    }

    #[test]
    fn unicode_tables_are_etcdutl_3_7s() {
        // tests/fixtures/etcd-3.7.1/outputs/etcdutl-snapshot-status.table
        let table = EtcdctlTable {
            headers: vec!["HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE", "VERSION"],
            rows: vec![vec![
                "e2a81450".into(),
                "54".into(),
                "44".into(),
                "37 kB".into(),
                "3.7.0".into(),
            ]],
            borders: Borders::of_release(Some("3.7.0")),
        };
        let fixture = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/etcd-3.7.1/outputs/etcdutl-snapshot-status.table"),
        )
        .unwrap();
        assert_eq!(table.render(), fixture);
        assert_eq!(Borders::of_release(Some("3.6.14")), Borders::Ascii);
        assert_eq!(Borders::of_release(Some("4.0.0")), Borders::Unicode);
        assert_eq!(Borders::of_release(None), Borders::Ascii);
    }
}
