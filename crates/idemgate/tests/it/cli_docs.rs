//! `idemgate completions` and `idemgate man`, checked by the shells and the formatters
//! that read them: bash always, zsh, fish, groff and man where they are installed.

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

use crate::gateway_harness::idemgate_bin;

fn idemgate(args: &[&str]) -> Output {
    Command::new(idemgate_bin()).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stdout_of(args: &[&str]) -> String {
    let output = idemgate(args);
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands as `idemgate --help` lists them, so a new one is checked too.
fn subcommands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let listed = help.split_once("Commands:\n").unwrap().1;
    let names: Vec<String> = listed
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 10 && names.iter().any(|name| name == "completions"), "{names:?}");
    names
}

fn installed(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Runs `program` with `args`, `input` on its stdin; its output.
fn feed(program: &str, args: &[&str], env: &[(&str, &str)], input: &str) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_bash_completion_parses_and_completes_every_subcommand() {
    let script = stdout_of(&["completions", "bash"]);
    let syntax = feed("bash", &["-n"], &[], &script);
    assert!(syntax.status.success(), "bash -n: {syntax:?}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.bash");
    std::fs::write(&path, &script).unwrap();
    let complete = |words: &str| {
        let program = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _idemgate idemgate \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        );
        let output = Command::new("bash").args(["-c", &program]).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let all = complete("idemgate ''");
    for name in subcommands() {
        assert!(all.contains(&name), "{name} not offered: {all:?}");
    }
    assert_eq!(complete("idemgate se"), ["serve", "send"]);
}

#[test]
fn the_zsh_and_fish_completions_name_every_subcommand_and_parse_where_installed() {
    let zsh = stdout_of(&["completions", "zsh"]);
    let fish = stdout_of(&["completions", "fish"]);
    assert!(zsh.starts_with("#compdef idemgate"), "{}", &zsh[..zsh.len().min(200)]);
    for name in subcommands() {
        assert!(zsh.contains(&format!("'{name}:")), "zsh: {name}");
        assert!(fish.contains(&format!("-f -a \"{name}\"")), "fish: {name}");
    }
    if installed("zsh") {
        let syntax = feed("zsh", &["-n"], &[], &zsh);
        assert!(syntax.status.success(), "zsh -n: {syntax:?}");
    }
    if installed("fish") {
        let syntax = feed("fish", &["--no-execute"], &[], &fish);
        assert!(syntax.status.success(), "fish --no-execute: {syntax:?}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idemgate.fish");
        std::fs::write(&path, &fish).unwrap();
        let program = format!("source '{}'; complete -C 'idemgate '", path.display());
        let offered = Command::new("fish").args(["-c", &program]).output().unwrap();
        let offered = String::from_utf8(offered.stdout).unwrap();
        for name in subcommands() {
            assert!(offered.lines().any(|line| line.split('\t').next() == Some(&name)), "{name}: {offered}");
        }
    }
}

#[test]
fn an_unknown_shell_is_bad_usage() {
    let output = idemgate(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid value 'tcsh'"));
}

#[test]
fn the_man_page_is_roff_that_groff_and_man_render() {
    let page = stdout_of(&["man"]);
    let (preamble, rest) = page.split_once(".TH idemgate 1 ").unwrap_or_else(|| panic!("no .TH: {page}"));
    assert!(preamble.lines().all(|line| line.starts_with('.')), "{preamble}");
    for section in
        [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT"]
    {
        assert!(rest.contains(section), "{section} missing");
    }
    for name in subcommands() {
        assert!(rest.contains(&format!("idemgate\\-{name}(1)")), "{name} not in SUBCOMMANDS");
    }
    if installed("groff") {
        let checked = feed("groff", &["-man", "-Tutf8", "-ww", "-z"], &[], &page);
        assert!(checked.status.success() && checked.stderr.is_empty(), "groff: {checked:?}");
    }
    if installed("man") {
        let shown = feed("man", &["-l", "-"], &[("MANPAGER", "cat"), ("MANWIDTH", "100")], &page);
        assert!(shown.status.success(), "man -l -: {shown:?}");
        let text = String::from_utf8(shown.stdout).unwrap();
        assert!(text.contains("idemgate - Webhook inbox and idempotency gateway"), "{text}");
        assert!(text.contains("EXIT STATUS") && text.contains("IDEMGATE_LOG_FORMAT"), "{text}");
        assert!(!text.contains(".SH") && !text.contains("\\fB"), "roff left unrendered: {text}");
    }
}

#[test]
fn one_command_s_man_page_and_an_unknown_command() {
    let page = stdout_of(&["man", "events", "list"]);
    assert!(page.contains(".TH idemgate-events-list 1 "), "{page}");
    assert!(page.contains("\\fB\\-\\-state\\fR"), "{page}");
    if installed("groff") {
        let checked = feed("groff", &["-man", "-Tutf8", "-ww", "-z"], &[], &page);
        assert!(checked.status.success() && checked.stderr.is_empty(), "groff: {checked:?}");
    }
    let unknown = idemgate(&["man", "events", "nope"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("there is no command `idemgate events nope`"));
}
