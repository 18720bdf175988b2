//! An error with its causes on one line, each cause once, for the command's last word and
//! for the log: many messages embed their source's text (`cannot open the store: {0}`),
//! and some do not (tokio-postgres says `db error` and keeps the server's reason as its
//! source), so the whole chain is walked and a cause whose text the line holds is skipped.

use std::error::Error;

/// `err` and its causes joined by `: `, each said once.
#[must_use]
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(err);
    while let Some(err) = cause {
        let text = err.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = err.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the store: {0}")]
    struct Embeds(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("db error")]
    struct Keeps(#[source] std::io::Error);

    #[test]
    fn a_cause_the_message_already_holds_is_said_once_and_one_it_does_not_is_added() {
        let embeds = Embeds(std::io::Error::other("file is not a database"));
        assert_eq!(one_line(&embeds), "cannot open the store: file is not a database");
        let keeps = Keeps(std::io::Error::other("database \"x\" does not exist"));
        assert_eq!(one_line(&keeps), "db error: database \"x\" does not exist");
    }
}
