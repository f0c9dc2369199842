//! etcdctl's `-w fields`: one `"Name" : value` line per field, as its fields printer writes
//! them (Go's `fmt.Println` of numbers and booleans, `%q` of strings), for the scripts that
//! read them with `awk` (`member list -w fields | awk '/ClientURL/ ...'`).

use std::fmt::Display;

use etcdops::client::ResponseHeader;

use crate::etcdctl::go_quote;

/// `"name" : value`, as `fmt.Println` writes a number, a boolean or a text printed as is.
pub fn line(name: &str, value: impl Display) -> String {
    format!("\"{name}\" : {value}")
}

/// `"name" : "value"`, the value quoted as Go's `%q` quotes it.
pub fn quoted(name: &str, value: &[u8]) -> String {
    format!("\"{name}\" : {}", go_quote(value))
}

/// The response header's four lines (zeros printed, unlike etcdctl's JSON).
pub fn header(lines: &mut Vec<String>, header: Option<&ResponseHeader>) {
    let h = header.copied().unwrap_or_default();
    lines.push(line("ClusterID", h.cluster_id));
    lines.push(line("MemberID", h.member_id));
    lines.push(line("Revision", h.revision));
    lines.push(line("RaftTerm", h.raft_term));
}

/// A key-value pair's six lines (`prefix` is `Prev` for a previous value).
pub fn key_value(
    lines: &mut Vec<String>,
    prefix: &str,
    key: &[u8],
    (create_revision, mod_revision, version): (i64, i64, i64),
    value: &[u8],
    lease: i64,
) {
    lines.push(quoted(&format!("{prefix}Key"), key));
    lines.push(line(&format!("{prefix}CreateRevision"), create_revision));
    lines.push(line(&format!("{prefix}ModRevision"), mod_revision));
    lines.push(line(&format!("{prefix}Version"), version));
    lines.push(quoted(&format!("{prefix}Value"), value));
    lines.push(line(&format!("{prefix}Lease"), lease));
}

/// A list of texts as `fmt.Println` prints a `[]string`: `[a b]`.
pub fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_as_etcdctls_fields_printer_writes_them() {
        assert_eq!(line("Revision", 54), "\"Revision\" : 54");
        assert_eq!(line("IsLearner", false), "\"IsLearner\" : false");
        assert_eq!(
            quoted("ClientURL", b"http://10.0.0.1:2379"),
            "\"ClientURL\" : \"http://10.0.0.1:2379\""
        );
        assert_eq!(
            quoted("Value", b"a\"b\n\xff"),
            "\"Value\" : \"a\\\"b\\n\\xff\""
        );
        assert_eq!(go_list(&[]), "[]");
        assert_eq!(go_list(&["a".into(), "b c".into()]), "[a b c]");
        let mut lines = Vec::new();
        header(&mut lines, None);
        assert_eq!(lines[0], "\"ClusterID\" : 0");
        assert_eq!(lines.len(), 4);
    }
}
