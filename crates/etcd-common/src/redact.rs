//! Credentials in URLs never reach a message: `http://root:PASS@host:2379` is shown as
//! `http://root:***@host:2379` wherever an endpoint is displayed.
//!
//! etcdctl's client ignores user-info in an endpoint (it takes only the URL's host); etcdops
//! refuses it ([`ClusterConfig::normalize_endpoint`](crate::ClusterConfig::normalize_endpoint)),
//! so after validation no endpoint carries credentials. These helpers cover what is shown
//! before and around that validation (errors, `Debug`).

/// One endpoint as given (with or without a scheme), its user-info's password (or a lone
/// user-info token) replaced by `***`.
pub fn redact_endpoint(endpoint: &str) -> String {
    let (scheme, rest) = match endpoint.find("://") {
        Some(i) => endpoint.split_at(i + 3),
        None => ("", endpoint),
    };
    // Everything before the last '@' is taken for user-info, even past a '/', '?' or '#' that
    // would end a URL's host: a password may hold them (base64 passwords hold '/'), and
    // over-redacting a path with an '@' costs nothing.
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => format!("{scheme}{}@{host}", redact_userinfo(userinfo)),
        None => endpoint.to_string(),
    }
}

/// `user:pass` → `user:***`; a lone token (often a secret itself) → `***`.
fn redact_userinfo(userinfo: &str) -> String {
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_string(),
    }
}

/// Every `scheme://user:pass@host` in free text with its password replaced by `***`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let start = i + 3;
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let token_end = after
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ',' | ';')
            })
            .unwrap_or(after.len());
        // The user-info ends at the token's last '@', even past a '/', '?' or '#' (which a
        // password may hold); without one, the URL's host ends at the first of them.
        let end = match after[..token_end].rfind('@') {
            Some(at) => {
                out.push_str(&redact_userinfo(&after[..at]));
                out.push('@');
                at + 1
            }
            None => 0,
        };
        let host_end = end
            + after[end..token_end]
                .find(['/', '?', '#'])
                .unwrap_or(token_end - end);
        out.push_str(&after[end..host_end]);
        rest = &after[host_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_passwords_are_redacted_with_and_without_a_scheme() {
        assert_eq!(
            redact_endpoint("http://root:PASS@host:2379"),
            "http://root:***@host:2379"
        );
        assert_eq!(redact_endpoint("root:PASS@host:2379"), "root:***@host:2379");
        assert_eq!(redact_endpoint("https://TOKEN@h:1/x"), "https://***@h:1/x");
        assert_eq!(redact_endpoint("https://h:2379"), "https://h:2379");
        assert_eq!(redact_endpoint("h:2379"), "h:2379");
        // An '@' in the password itself: everything before the last '@' is user-info.
        assert_eq!(redact_endpoint("http://u:p@ss@h:1"), "http://u:***@h:1");
    }

    #[test]
    fn passwords_holding_a_url_delimiter_are_redacted_whole() {
        // Generated passwords (base64) hold '/', and '?' or '#' are common: none of the
        // password may show, whatever a URL parser would take for its path.
        for (endpoint, shown) in [
            ("http://root:se/cret@h:2379", "http://root:***@h:2379"),
            ("root:se/cret@h:2379", "root:***@h:2379"),
            ("https://root:p#ss@h:1", "https://root:***@h:1"),
            ("https://root:p?ss@h:1/x", "https://root:***@h:1/x"),
        ] {
            assert_eq!(redact_endpoint(endpoint), shown, "{endpoint}");
        }
        assert_eq!(
            redact_urls("dial http://root:se/cret@h:2379: refused"),
            "dial http://root:***@h:2379: refused"
        );
    }

    #[test]
    fn urls_in_text_are_redacted() {
        assert_eq!(
            redact_urls("a http://root:PASS@h:1, then https://x:Y@z:2/p done"),
            "a http://root:***@h:1, then https://x:***@z:2/p done"
        );
        assert_eq!(redact_urls("no url here"), "no url here");
        assert_eq!(redact_urls("'http://h:1'"), "'http://h:1'");
    }
}
