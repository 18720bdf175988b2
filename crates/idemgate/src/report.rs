//! How `main` says that a command failed: the error and its causes on one line, each cause
//! once, and nothing at all when the reader of stdout went away.

use crate::commands::StdoutClosed;

/// Whether `err` is stdout closed by its reader (`idemgate events list | head -1`): the
/// reader has what it wanted, so that is success, and silent.
pub(crate) fn is_closed_stdout(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<StdoutClosed>())
}

/// `err` and its causes on one line, each cause once ([`idemgate::errors::one_line`]).
pub(crate) fn message(err: &anyhow::Error) -> String {
    idemgate::errors::one_line(err.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the store: {0}")]
    struct Embeds(#[source] std::io::Error);

    #[test]
    fn a_cause_the_message_already_holds_is_said_once() {
        let io = std::io::Error::other("file is not a database");
        let err = anyhow::Error::new(Embeds(io)).context("cannot read the store");
        assert_eq!(message(&err), "cannot read the store: cannot open the store: file is not a database");
        let err = anyhow::Error::new(std::io::Error::other("refused")).context("cannot connect");
        assert_eq!(message(&err), "cannot connect: refused");
    }

    #[test]
    fn stdout_closed_is_found_under_context() {
        let err = anyhow::Error::new(StdoutClosed).context("cannot print");
        assert!(is_closed_stdout(&err));
        assert!(!is_closed_stdout(&anyhow::anyhow!("Broken pipe (os error 32)")));
    }
}
