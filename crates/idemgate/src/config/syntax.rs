//! A TOML syntax error as an editor wants it: `FILE:LINE:COLUMN: what`, then the line with
//! a caret under the column. The line is shown as written unless it may hold a secret (a
//! secret key, a URL that may carry a password, an inline table, a line whose key is not
//! clear): then its value's strings, words and numbers are shown as `…`, and a line
//! inside a multi-line string is not shown at all.

use super::{ConfigError, raw};

/// The error `err` of parsing `text`, the file `file`.
pub(super) fn error(file: &str, text: &str, err: &toml::de::Error) -> ConfigError {
    let what = message(err);
    let Some(start) = err.span().map(|span| span.start.min(text.len())) else {
        return ConfigError::new(file, what);
    };
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let (number, column) = (text[..start].matches('\n').count() + 1, text[line_start..start].chars().count() + 1);
    let key = format!("{file}:{number}:{column}");
    let Some((shown, caret)) = shown_line(&text[..line_start], &text[line_start..line_end], column - 1) else {
        return ConfigError::new(key, format!("{what} (the line is inside a multi-line string: not shown)"));
    };
    let gutter = number.to_string().len();
    let pad = " ".repeat(gutter);
    ConfigError::new(key, format!("{what}\n {number} | {shown}\n {pad} | {}^", " ".repeat(caret)))
}

/// toml's message on one line. What it quotes between backticks is kept when it is
/// punctuation (`expected \`]\``), else dropped: it may be part of a secret value.
fn message(err: &toml::de::Error) -> String {
    let text = err.message().lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(", ");
    let mut parts = text.split('`');
    let mut out = parts.next().unwrap_or_default().to_owned();
    for (i, part) in parts.enumerate() {
        let quoted = i % 2 == 0;
        if quoted && part.chars().any(char::is_alphanumeric) {
            out.push('…');
        } else if quoted {
            out.push_str(&format!("`{part}`"));
        } else {
            out.push_str(part);
        }
    }
    if out.is_empty() { "invalid TOML".to_owned() } else { out }
}

/// The line to show and the caret's column in it (0-based), or `None` when the line is
/// inside a multi-line string. `before` is the text before the line.
fn shown_line(before: &str, line: &str, column: usize) -> Option<(String, usize)> {
    if before.matches("\"\"\"").count() % 2 == 1 || before.matches("'''").count() % 2 == 1 {
        return None;
    }
    if is_plain(before, line) {
        return Some((line.to_owned(), column));
    }
    Some(masked(line, column))
}

/// Whether `line` can be shown as written: blank, a table header alone, or `key = value`
/// of a key that holds no secret, without an inline table. (A comment may hold an old
/// secret, and a header followed by a key its value.)
fn is_plain(before: &str, line: &str) -> bool {
    let trimmed = line.trim_start();
    if trimmed.is_empty() || (trimmed.starts_with('[') && !trimmed.contains('=')) {
        return true;
    }
    if trimmed.starts_with('#') || trimmed.starts_with('[') {
        return false;
    }
    let Some((key, value)) = line.split_once('=') else { return false };
    let header = before.lines().rev().map(str::trim).find(|l| l.starts_with('['));
    let table = header.map(|h| h.trim_matches(|c| c == '[' || c == ']')).unwrap_or_default();
    let path: Vec<&str> = table
        .split('.')
        .chain(key.split('.'))
        .map(|k| k.trim().trim_matches(['"', '\'']))
        .filter(|k| !k.is_empty())
        .collect();
    let last = path.last().copied().unwrap_or_default();
    let secret_word = ["secret", "token", "password", "url"].iter().any(|word| last.contains(word));
    !raw::is_secret_key(&path) && !secret_word && !value.contains('{')
}

/// `line` with its value hidden: the key before the first `=` as written, then each
/// string's contents and each bare word or number as `…` (punctuation kept); and where
/// `column` lands in it.
fn masked(line: &str, column: usize) -> (String, usize) {
    let value_start = line.chars().position(|c| c == '=').map_or(0, |i| i + 1);
    let (mut shown, mut caret) = (String::new(), None);
    let (mut quote, mut escaped, mut in_word) = (None::<char>, false, false);
    for (i, c) in line.chars().enumerate() {
        if i == column {
            caret = Some(shown.chars().count().saturating_sub(usize::from(quote.is_some() || in_word)));
        }
        let word = c.is_alphanumeric() || "_-.+:@/%".contains(c);
        match quote {
            _ if i < value_start => shown.push(c),
            Some(open) if c == open && !escaped => {
                quote = None;
                shown.push(c);
            }
            Some(_) => escaped = c == '\\' && !escaped,
            None if c == '"' || c == '\'' => {
                (quote, in_word) = (Some(c), false);
                shown.push_str(&format!("{c}…"));
            }
            None if word && in_word => {}
            None if word => {
                in_word = true;
                shown.push('…');
            }
            None => {
                in_word = false;
                shown.push(c);
            }
        }
    }
    let end = shown.chars().count();
    (shown, caret.unwrap_or(end))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        let err = toml::from_str::<toml::Table>(text).unwrap_err();
        error("/etc/idemgate.toml", text, &err).to_string()
    }

    #[test]
    fn a_syntax_error_names_file_line_and_column_and_shows_the_line() {
        let shown = error_of("[server]\nlisten = \"127.0.0.1:8080\"\nbody_timeout = 30s\n");
        let lines: Vec<&str> = shown.lines().collect();
        assert!(lines[0].starts_with("/etc/idemgate.toml:3:16: "), "{shown}");
        assert_eq!(lines[1], " 3 | body_timeout = 30s", "{shown}");
        assert_eq!(lines[2], "   |                ^", "{shown}");
    }

    #[test]
    fn a_line_that_may_hold_a_secret_shows_no_string_contents() {
        for text in [
            "[admin]\ntoken = \"very-secret-token\" x\n",
            "[sources.a]\nsecrets = [\"very-secret-token\" \"b\"]\n",
            "[smtp.m.users]\nalice = \"very-secret-token\" x\n",
            "[sources]\na = { secrets = [\"very-secret-token\"] x }\n",
            "[store]\nurl = 'postgres://u:very-secret-token@h/db' x\n",
            "[server]\n[admin] token = \"very-secret-token\"\n",
            "[server]\n# token very-secret-token \u{7f}\n",
        ] {
            let shown = error_of(text);
            assert!(!shown.contains("very-secret"), "{shown}");
            assert!(shown.starts_with("/etc/idemgate.toml:2:"), "{shown}");
        }
        let shown = error_of("[admin]\ntoken = \"\"\"\nvery-secret-token\n");
        assert!(shown.contains("not shown") && !shown.contains("very-secret"), "{shown}");
        let shown = error_of("[admin]\ntoken = \"very-secret-token\" x\n");
        assert!(shown.ends_with(" 2 | token = \"…\" …\n   |             ^"), "{shown}");
        let shown = error_of("[admin]\ntoken = 12345678901234567890123456789\n");
        assert!(shown.ends_with(" 2 | token = …\n   |         ^"), "{shown}");
    }
}
