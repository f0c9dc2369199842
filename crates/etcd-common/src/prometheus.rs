//! The Prometheus text exposition format, as node_exporter's textfile collector reads it:
//! each metric's `# HELP` and `# TYPE` lines, then its samples, label values escaped.

use std::fmt::Write as _;

/// A metric's type, as its `# TYPE` line gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A value that goes up and down (a time, a size, a revision).
    Gauge,
    /// A count that only goes up (since the process started).
    Counter,
}

impl MetricKind {
    fn as_str(self) -> &'static str {
        match self {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
        }
    }
}

/// A sample's value as the text format writes it: integers as they are, floats in their
/// shortest form (`1700000000.5`, `42`), and `+Inf`, `-Inf`, `NaN`.
pub trait SampleValue {
    /// The value's text.
    fn to_sample(&self) -> String;
}

impl SampleValue for f64 {
    fn to_sample(&self) -> String {
        if self.is_nan() {
            "NaN".to_string()
        } else if self.is_infinite() {
            if *self > 0.0 { "+Inf" } else { "-Inf" }.to_string()
        } else {
            self.to_string()
        }
    }
}

macro_rules! integer_sample {
    ($($t:ty),*) => {$(
        impl SampleValue for $t {
            fn to_sample(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
integer_sample!(i64, u64, i32, u32, usize);

/// A Prometheus text file being written, metric by metric.
///
/// ```
/// use etcd_common::{MetricKind, PrometheusText};
///
/// let mut text = PrometheusText::new();
/// text.gauge("backup_revision", "Revision of the last backup.", 42_i64);
/// text.metric("backups_total", MetricKind::Counter, "Backups stored.");
/// text.sample("backups_total", &[("store", "s3://b")], 3_u64);
/// let lines = [
///     "# HELP backup_revision Revision of the last backup.",
///     "# TYPE backup_revision gauge",
///     "backup_revision 42",
///     "# HELP backups_total Backups stored.",
///     "# TYPE backups_total counter",
///     "backups_total{store=\"s3://b\"} 3",
/// ];
/// assert_eq!(text.finish(), lines.join("\n") + "\n");
/// ```
#[derive(Debug, Default, Clone)]
pub struct PrometheusText {
    text: String,
}

impl PrometheusText {
    /// An empty file.
    pub fn new() -> Self {
        PrometheusText::default()
    }

    /// Starts metric `name`: its `# HELP` (escaped) and `# TYPE` lines. Its samples follow.
    pub fn metric(&mut self, name: &str, kind: MetricKind, help: &str) -> &mut Self {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {}", kind.as_str());
        self
    }

    /// One sample of `name` with `labels` (values escaped; none: a bare name).
    pub fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        value: impl SampleValue,
    ) -> &mut Self {
        self.text.push_str(name);
        if !labels.is_empty() {
            let pairs: Vec<String> = labels
                .iter()
                .map(|(label, value)| format!("{label}=\"{}\"", escape_label_value(value)))
                .collect();
            let _ = write!(self.text, "{{{}}}", pairs.join(","));
        }
        let _ = writeln!(self.text, " {}", value.to_sample());
        self
    }

    /// A gauge with one unlabelled sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl SampleValue) -> &mut Self {
        self.metric(name, MetricKind::Gauge, help)
            .sample(name, &[], value)
    }

    /// A counter with one unlabelled sample.
    pub fn counter(&mut self, name: &str, help: &str, value: impl SampleValue) -> &mut Self {
        self.metric(name, MetricKind::Counter, help)
            .sample(name, &[], value)
    }

    /// A line of an earlier file of the same format, kept as it is (a sample carried
    /// forward); a line break is added.
    pub fn kept_line(&mut self, line: &str) -> &mut Self {
        self.text.push_str(line.trim_end_matches('\n'));
        self.text.push('\n');
        self
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The whole text.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A `# HELP` text: backslash and line break escaped.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A label value: backslash, double quote and line break escaped.
fn escape_label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gauge_and_a_counter_have_help_type_and_sample_lines() {
        let mut text = PrometheusText::new();
        text.gauge("a_seconds", "Time of a.", 1700000000.25_f64)
            .counter("b_total", "Count of b.", 7_u64);
        assert_eq!(
            text.finish(),
            "# HELP a_seconds Time of a.\n# TYPE a_seconds gauge\na_seconds 1700000000.25\n\
             # HELP b_total Count of b.\n# TYPE b_total counter\nb_total 7\n"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let mut text = PrometheusText::new();
        text.metric("m", MetricKind::Gauge, "h").sample(
            "m",
            &[("path", "C:\\dir"), ("say", "a \"quote\"\nand a line")],
            1_i64,
        );
        assert_eq!(
            text.finish(),
            "# HELP m h\n# TYPE m gauge\nm{path=\"C:\\\\dir\",say=\"a \\\"quote\\\"\\nand a line\"} 1\n"
        );
    }

    #[test]
    fn help_text_escapes_backslash_and_line_breaks_but_not_quotes() {
        let mut text = PrometheusText::new();
        text.metric("m", MetricKind::Counter, "one \\ \"two\"\nthree");
        assert_eq!(
            text.as_str(),
            "# HELP m one \\\\ \"two\"\\nthree\n# TYPE m counter\n"
        );
    }

    #[test]
    fn values_are_written_as_prometheus_reads_them() {
        assert_eq!(0.0_f64.to_sample(), "0");
        assert_eq!(42.0_f64.to_sample(), "42");
        assert_eq!(1.5_f64.to_sample(), "1.5");
        assert_eq!(f64::INFINITY.to_sample(), "+Inf");
        assert_eq!(f64::NEG_INFINITY.to_sample(), "-Inf");
        assert_eq!(f64::NAN.to_sample(), "NaN");
        assert_eq!((-3_i64).to_sample(), "-3");
        assert_eq!(u64::MAX.to_sample(), "18446744073709551615");
    }

    #[test]
    fn kept_lines_are_carried_as_they_are() {
        let mut text = PrometheusText::new();
        text.kept_line("x 1").kept_line("y{a=\"b\"} 2\n");
        assert_eq!(text.finish(), "x 1\ny{a=\"b\"} 2\n");
    }
}
