//! `idemgate serve`'s log on stderr: plain text when it goes to a file or a pipe, colours
//! only on a terminal and never under `NO_COLOR`, and the signal that stopped it named.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    process::{Command, Stdio},
};

use crate::gateway_harness::{Setup, idemgate_bin};

/// A literal secret, so start-up logs a warning (the line a terminal shows in colour).
const SOURCE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"a-literal-secret\"]\n";

/// Runs `serve` with stderr piped until `signal` (`TERM`, `INT`) stops it; its log.
fn log_until(signal: &str) -> String {
    let setup = Setup::new(SOURCE);
    let mut child = Command::new(idemgate_bin())
        .args(["serve", "--config"])
        .arg(setup.config())
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on "), "{line:?}");
    Command::new("kill").args([format!("-{signal}"), child.id().to_string()]).status().unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn a_piped_log_has_no_colours_and_names_the_signal_that_stopped_it() {
    for (signal, name) in [("TERM", "SIGTERM"), ("INT", "SIGINT")] {
        let log = log_until(signal);
        assert!(!log.contains("\x1b["), "escape codes in a piped log: {log:?}");
        assert!(log.contains(" WARN ") && log.contains("secret given literally"), "{log}");
        let received = log.lines().position(|line| {
            line.contains(" INFO ") && line.contains(&format!("{name} received; stopping signal=\"{name}\""))
        });
        let stopped = log.lines().position(|line| line.contains(" INFO ") && line.ends_with("stopped"));
        assert!(received.is_some() && received < stopped, "{log}");
    }
}

/// `serve` on a pseudo-terminal (util-linux `script`), failing at once on a port in use
/// after logging the config's warning; everything the terminal showed.
fn on_a_terminal(no_color: Option<&str>) -> String {
    let setup = Setup::new(SOURCE);
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let command = format!("'{}' serve --config '{}'", idemgate_bin(), setup.config().display());
    let mut script = Command::new("script");
    script
        .args(["-qec", &command, "/dev/null"])
        .env("IDEMGATE_SERVER__LISTEN", busy.local_addr().unwrap().to_string())
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    if let Some(value) = no_color {
        script.env("NO_COLOR", value);
    }
    let output = script.output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let shown = String::from_utf8(output.stdout).unwrap();
    assert!(shown.contains("secret given literally") && shown.contains("cannot listen on"), "{shown:?}");
    shown
}

#[test]
fn on_a_terminal_the_log_is_coloured_unless_no_color_is_set() {
    assert!(on_a_terminal(None).contains("\x1b["), "no colours on a terminal");
    assert!(on_a_terminal(Some("")).contains("\x1b["), "an empty NO_COLOR does not count");
    let plain = on_a_terminal(Some("1"));
    assert!(!plain.contains("\x1b["), "colours despite NO_COLOR: {plain:?}");
}
