//! The configuration as the operator meets it, through the real binary: paths relative to
//! the config file whatever the working directory, commands that need only the secrets
//! they use, environment overrides that switch the store or name a mistyped variable, and
//! `idemgate config check`, which never shows a secret.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use crate::{
    gateway_harness::{Gateway, Signer, body, idemgate_bin, inbox},
    harness::unix_now,
};

const KEY: [u8; 32] = [7; 32];

/// The repository's sample configuration.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../idemgate.toml")
}

/// `idemgate args --config config`, run in `cwd` with `env` added.
fn idemgate(cwd: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(idemgate_bin())
        .args(args)
        .arg("--config")
        .arg(config)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder holding `idemgate.toml` with `config`, and the folders beside it.
struct Folder {
    dir: tempfile::TempDir,
}

impl Folder {
    fn new(config: &str) -> Self {
        let folder = Self { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir(folder.dir.path().join("etc")).unwrap();
        std::fs::create_dir(folder.dir.path().join("elsewhere")).unwrap();
        std::fs::write(folder.config(), config).unwrap();
        folder
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("etc").join("idemgate.toml")
    }

    /// A working directory that is not the config file's folder.
    fn elsewhere(&self) -> PathBuf {
        self.dir.path().join("elsewhere")
    }

    /// Every file under `folder`, relative to the temporary folder.
    fn files(&self) -> Vec<String> {
        fn walk(dir: &Path, root: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, root, found);
                } else {
                    found.push(path.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        let mut found = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut found);
        found.sort();
        found
    }
}

const RELATIVE_STORE: &str = r#"
[server]
listen = "127.0.0.1:0"
[store]
path = "data/idemgate.sqlite3"
[sources.hooks]
scheme = "standard-webhooks"
secrets = ["env:HOOKS_SECRET"]
destinations = ["app"]
[destinations.app]
url = "http://127.0.0.1:1/"
[worker]
enabled = false
"#;

#[test]
fn the_store_path_is_relative_to_the_config_file_and_only_serve_creates_the_store() {
    let folder = Folder::new(RELATIVE_STORE);
    let (config, elsewhere) = (folder.config(), folder.elsewhere());
    let store = folder.dir.path().join("etc/data/idemgate.sqlite3");
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let env = [("HOOKS_SECRET", secret.as_str())];

    let backup = folder.dir.path().join("backup.sqlite3");
    let commands: [&[&str]; 7] = [
        &["events", "list"],
        &["events", "show", "hooks", "msg_1"],
        &["events", "stats"],
        &["events", "replay"],
        &["destination", "enable", "app"],
        &["store", "purge", "--dry-run"],
        &["store", "backup", "--to", backup.to_str().unwrap()],
    ];
    for args in commands {
        let output = idemgate(&elsewhere, &config, args, &env);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(&format!("no store at {}", store.display())), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} answered without a store: {output:?}");
    }
    assert_eq!(folder.files(), ["etc/idemgate.toml"], "no command created a store, a lock or a folder");

    // serve, started in the test's own working directory, creates the store beside the config.
    let gateway = Gateway::start(&config, &env);
    let event = body("msg_1", "t.created");
    let signer = Signer::Standard(KEY.to_vec());
    assert_eq!(gateway.post("hooks", &signer.headers("msg_1", &event, unix_now()), &event).status(), 202);
    assert_eq!(inbox(&store).receipts, ["msg_1"]);
    for cwd in [elsewhere.as_path(), folder.dir.path(), Path::new("/")] {
        let listed = idemgate(cwd, &config, &["events", "list", "--json"], &env);
        assert!(listed.status.success(), "from {}: {listed:?}", cwd.display());
        assert!(text(&listed.stdout).contains("\"msg_1\""), "{listed:?}");
    }
    let replayed = idemgate(&elsewhere, &config, &["events", "replay"], &env);
    assert!(text(&replayed.stdout).starts_with("replayed 0 job(s)"), "an existing store: {replayed:?}");
    let files = folder.files();
    assert!(files.iter().all(|file| !file.starts_with("elsewhere")), "{files:?}");
    assert!(files.contains(&"etc/data/idemgate.sqlite3".to_owned()), "{files:?}");
}

const EVERY_SECRET: &str = r#"
[server]
listen = "127.0.0.1:0"
[store]
path = "data/idemgate.sqlite3"
[admin]
listen = "127.0.0.1:0"
token = "env:ADMIN_TOKEN"
[sources.hooks]
scheme = "standard-webhooks"
secrets = ["env:HOOKS_SECRET"]
destinations = ["app"]
[destinations.app]
url = "http://127.0.0.1:1/"
secret = "env:APP_SECRET"
"#;

/// Starts `idemgate worker` and returns its first stdout line, then stops it.
fn worker_first_line(config: &Path, env: &[(&str, &str)]) -> (String, Output) {
    let mut child = Command::new(idemgate_bin())
        .args(["worker", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    (line, child.wait_with_output().unwrap())
}

#[test]
fn each_command_needs_only_the_secrets_and_files_it_uses() {
    let folder = Folder::new(EVERY_SECRET);
    let (config, cwd) = (folder.config(), folder.elsewhere());
    let hooks = Signer::Standard(KEY.to_vec()).config_secret();
    let app = Signer::Standard(vec![8; 32]).config_secret();
    let all =
        [("HOOKS_SECRET", hooks.as_str()), ("APP_SECRET", app.as_str()), ("ADMIN_TOKEN", "admin-token-0123456789")];
    drop(Gateway::start(&config, &all));

    for args in [&["events", "list"][..], &["events", "stats"], &["store", "purge", "--dry-run"]] {
        let output = idemgate(&cwd, &config, args, &[]);
        assert!(output.status.success(), "{args:?} with no secret at all: {output:?}");
    }
    let enable = idemgate(&cwd, &config, &["destination", "enable", "app"], &[]);
    assert!(text(&enable.stdout).contains("app: was neither disabled nor paused"), "{enable:?}");
    // TLS files are read only by serve.
    let tls = ("IDEMGATE_SERVER__TLS", r#"{ cert = "missing.pem", key = "missing-key.pem" }"#);
    assert!(idemgate(&cwd, &config, &["events", "stats"], &[tls]).status.success());

    let (line, _) = worker_first_line(&config, &[all[1]]);
    assert_eq!(line.trim(), "worker running", "the worker needs only the destinations' secrets");
    let (line, output) = worker_first_line(&config, &[all[0], all[2]]);
    assert_eq!(line, "");
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("destinations.app.secret: environment variable APP_SECRET is not set"));

    let dir = folder.dir.path();
    std::fs::write(dir.join("head.txt"), "webhook-id: msg_1\n").unwrap();
    std::fs::write(dir.join("body.json"), "{}").unwrap();
    let capture = ["verify", "--source", "hooks", "--headers", "../head.txt", "--body", "../body.json"];
    let verify = idemgate(&cwd, &config, &capture, &[all[0]]);
    assert_eq!(verify.status.code(), Some(1), "a check fails, the configuration does not: {verify:?}");
    assert!(text(&verify.stdout).contains("signature FAILED"), "{verify:?}");
    let verify = idemgate(&cwd, &config, &capture, &[all[1], all[2]]);
    assert_eq!(verify.status.code(), Some(2), "{verify:?}");
    assert!(text(&verify.stderr).contains("sources.hooks.secrets[0]: environment variable HOOKS_SECRET is not set"));

    for (missing, key) in [(0, "sources.hooks.secrets[0]"), (1, "destinations.app.secret"), (2, "admin.token")] {
        let env: Vec<_> = all.iter().enumerate().filter(|(i, _)| *i != missing).map(|(_, pair)| *pair).collect();
        let serve = idemgate(&cwd, &config, &["serve"], &env);
        assert_eq!(serve.status.code(), Some(2), "{serve:?}");
        assert!(serve.stdout.is_empty(), "serve listened without {key}");
        let stderr = text(&serve.stderr);
        assert!(stderr.contains(&format!("{key}: environment variable")), "{stderr}");
    }
    let serve = idemgate(&cwd, &config, &["serve"], &[all[0], all[1], all[2], tls]);
    assert_eq!(serve.status.code(), Some(2), "{serve:?}");
    assert!(text(&serve.stderr).contains("server.tls.cert"), "{serve:?}");
    // A receiving instance without its worker signs nothing.
    let receiving = Gateway::start(&config, &[all[0], all[2], ("IDEMGATE_WORKER__ENABLED", "false")]);
    drop(receiving);
}

#[test]
fn a_mistyped_variable_is_named_as_the_variable() {
    let folder =
        Folder::new(&RELATIVE_STORE.replace("env:HOOKS_SECRET", "whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE="));
    for (variable, says) in [
        ("IDEMGATE_SERVER__LISTN", "IDEMGATE_SERVER__LISTN: no key server.listn (expected one of `listen`"),
        ("IDEMGATE_STORE__PAHT", "IDEMGATE_STORE__PAHT: no key store.paht"),
        ("IDEMGATE_SOURCE__HOOKS__SCHEME", "IDEMGATE_SOURCE__HOOKS__SCHEME: no key source.hooks.scheme"),
    ] {
        let output = idemgate(&folder.elsewhere(), &folder.config(), &["serve"], &[(variable, "x")]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("idemgate: config error: {says}")), "{stderr}");
    }
}

/// A fresh schema on the test database, as a URL whose connections use it; PostgreSQL
/// missing is a failure, never a skip.
fn fresh_schema() -> String {
    let base = std::env::var("IDEMGATE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/idemgate_test".to_owned());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let name = format!("config_switch_{}_{nanos}", std::process::id());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(idemgate::store::create_schema(&base, &name))
        .unwrap_or_else(|err| panic!("PostgreSQL is needed at {base} (set IDEMGATE_TEST_POSTGRES): {err}"))
}

#[test]
fn an_override_of_the_store_url_switches_the_sample_config_to_postgres() {
    let folder = Folder::new(&std::fs::read_to_string(sample()).unwrap());
    let url = fresh_schema();
    let env = [
        ("IDEMGATE_STORE__URL", url.as_str()),
        ("IDEMGATE_SERVER__LISTEN", "127.0.0.1:0"),
        ("IDEMGATE_WORKER__ENABLED", "false"),
    ];
    let gateway = Gateway::start(&folder.config(), &env);
    let signer = Signer::Standard(b"idemgate-sample-secret-32-bytes!".to_vec());
    let event = body("msg_pg", "invoice.paid");
    assert_eq!(gateway.post("demo", &signer.headers("msg_pg", &event, unix_now()), &event).status(), 202);
    gateway.stop();
    let stats = idemgate(&folder.elsewhere(), &folder.config(), &["events", "stats", "--json"], &env);
    assert!(stats.status.success(), "{stats:?}");
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["sources"][0]["source"], "demo", "{stats}");
    assert_eq!(stats["sources"][0]["receipts"], 1, "{stats}");
    assert_eq!(folder.files(), ["etc/idemgate.toml"], "no SQLite store beside the config");

    // And back: a path from the environment replaces a URL in the file.
    let pg = Folder::new(&format!(
        "[store]\nurl = \"env:NOT_SET_DB_URL\"\n{}",
        RELATIVE_STORE.replace("[store]\npath = \"data/idemgate.sqlite3\"\n", "")
    ));
    let path = pg.dir.path().join("sqlite.db");
    let output = idemgate(
        &pg.elsewhere(),
        &pg.config(),
        &["events", "stats"],
        &[("IDEMGATE_STORE__PATH", path.to_str().unwrap())],
    );
    assert!(text(&output.stderr).contains(&format!("no store at {}", path.display())), "{output:?}");
    // Both from the environment stay ambiguous.
    let both = [("IDEMGATE_STORE__PATH", "x.sqlite3"), ("IDEMGATE_STORE__URL", url.as_str())];
    let output = idemgate(&pg.elsewhere(), &pg.config(), &["events", "stats"], &both);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(text(&output.stderr).contains("give either store.path (SQLite) or store.url (PostgreSQL)"));
}

#[test]
fn config_check_prints_what_is_in_effect_and_where_it_came_from_but_never_a_secret() {
    let hooks = Signer::Standard(KEY.to_vec()).config_secret();
    let token = "admin-token-which-is-secret-0123";
    let password = "hunter2-not-shown";
    let db_url = format!("postgres://idemgate:{password}@127.0.0.1:1/idemgate");
    let literal = "whsec_aWRlbWdhdGUtZGVzdGluYXRpb24tc2VjcmV0LTMyYiE=";
    let folder = Folder::new(&EVERY_SECRET.replace("env:APP_SECRET", literal));
    let env = [
        ("HOOKS_SECRET", hooks.as_str()),
        ("ADMIN_TOKEN", token),
        ("IDEMGATE_STORE__URL", db_url.as_str()),
        ("IDEMGATE_SOURCES__HOOKS__BODY_LIMIT", "4096"),
    ];
    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], &env);
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    let line = |key: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key}: {stdout}"))
    };
    assert!(line("server.listen").ends_with("# file"), "{stdout}");
    assert!(line("server.body_timeout").contains("\"30s\"") && line("server.body_timeout").ends_with("# default"));
    assert!(line("sources.hooks.body_limit").contains("4096"), "{stdout}");
    assert!(line("sources.hooks.body_limit").ends_with("# environment IDEMGATE_SOURCES__HOOKS__BODY_LIMIT"));
    assert!(line("sources.hooks.secrets").contains("[\"env:HOOKS_SECRET\"]"), "{stdout}");
    assert!(
        line("store.url").contains("\"<redacted>\"")
            && line("store.url").ends_with("# environment IDEMGATE_STORE__URL")
    );
    assert!(line("destinations.app.secret").contains("\"<redacted>\""), "{stdout}");
    assert!(line("admin.token").contains("\"env:ADMIN_TOKEN\""), "{stdout}");
    assert!(stdout.contains("# warning: destinations.app.secret: secret given literally"), "{stdout}");
    let everything = format!("{stdout}{}", text(&output.stderr));
    let base64 = hooks.trim_start_matches("whsec_");
    for secret in [hooks.as_str(), base64, token, password, literal, literal.trim_start_matches("whsec_")] {
        assert!(!everything.contains(secret), "{secret} shown: {everything}");
    }
    assert_eq!(folder.files(), ["etc/idemgate.toml"], "a check opens no store");

    // Not valid: exit 1 with the problem, as serve would see it.
    let without_token = &env[..1];
    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], without_token);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = text(&output.stderr);
    assert_eq!(stderr.trim(), "idemgate: config error: admin.token: environment variable ADMIN_TOKEN is not set");

    let sample = idemgate(&folder.elsewhere(), &sample(), &["config", "check"], &[]);
    assert!(sample.status.success(), "{sample:?}");
    assert!(!text(&sample.stdout).contains("aWRlbWdhdGUt"), "a sample secret was shown: {sample:?}");
}

#[test]
fn a_bad_api_value_is_refused_at_its_key_and_its_secrets_are_never_shown() {
    let api = "[api]\nenabled = true\nsecrets_key = \"env:API_KEY\"\nallow_networks = [\"127.0.0.0/8\"]\n\
               [api.tokens.ci]\ntoken = \"env:API_TOKEN\"\nrole = \"publish\"\n";
    let folder = Folder::new(&format!("{}{api}", EVERY_SECRET.replace("env:APP_SECRET", "env:HOOKS_SECRET")));
    let hooks = Signer::Standard(KEY.to_vec()).config_secret();
    let (token, key) = ("api-token-which-is-secret-0123", "0f".repeat(32));
    let mut env = vec![("HOOKS_SECRET", hooks.as_str()), ("ADMIN_TOKEN", "admin-token-which-is-secret-0123")];
    env.extend([("API_TOKEN", token), ("API_KEY", key.as_str())]);
    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], &env);
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("api.tokens.ci.token = \"env:API_TOKEN\""), "{stdout}");
    assert!(stdout.contains("api.secrets_key = \"env:API_KEY\""), "{stdout}");
    assert!(!stdout.contains(token) && !stdout.contains(&key), "{stdout}");

    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], &env[..3]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        text(&output.stderr).trim(),
        "idemgate: config error: api.secrets_key: environment variable API_KEY is not set"
    );
    let short = [env[0], env[1], env[2], ("API_KEY", "0f0f")];
    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], &short);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("idemgate: config error: api.secrets_key: "), "{stderr}");
    assert!(!stderr.contains("0f0f"), "{stderr}");

    let bad_network = api.replace("127.0.0.0/8", "127.0.0.0/33");
    std::fs::write(
        folder.config(),
        format!("{}{bad_network}", EVERY_SECRET.replace("env:APP_SECRET", "env:HOOKS_SECRET")),
    )
    .unwrap();
    let output = idemgate(&folder.elsewhere(), &folder.config(), &["config", "check"], &env);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        text(&output.stderr).trim(),
        "idemgate: config error: api.allow_networks[0]: \"127.0.0.0/33\" is not a network in CIDR form (e.g. \"10.0.0.0/8\")"
    );
}

/// `idemgate args --config config` with stdout a pipe whose reader is already gone, as
/// after `| head -1` has read its line.
fn idemgate_into_closed_pipe(cwd: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    // A pipe from tokio (std's needs a newer Rust than this crate's MSRV), handed over blocking.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let _entered = runtime.enter();
    let (writer, reader) = tokio::net::unix::pipe::pipe().unwrap();
    drop(reader);
    let writer = writer.into_blocking_fd().unwrap();
    Command::new(idemgate_bin())
        .args(args)
        .arg("--config")
        .arg(config)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_command_whose_reader_stopped_early_exits_quietly() {
    let folder = Folder::new(RELATIVE_STORE);
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let env = [("HOOKS_SECRET", secret.as_str())];
    let gateway = Gateway::start(&folder.config(), &env);
    let signer = Signer::Standard(KEY.to_vec());
    for id in ["msg_1", "msg_2", "msg_3"] {
        let event = body(id, "t.created");
        assert_eq!(gateway.post("hooks", &signer.headers(id, &event, unix_now()), &event).status(), 202);
    }
    gateway.stop();
    let commands: [&[&str]; 8] = [
        &["events", "list"],
        &["events", "list", "--json"],
        &["events", "show", "hooks", "msg_1"],
        &["events", "stats"],
        &["destination", "list"],
        &["store", "purge", "--dry-run"],
        &["config", "check"],
        &["completions", "bash"],
    ];
    for args in commands {
        let output = idemgate_into_closed_pipe(&folder.elsewhere(), &folder.config(), args, &env);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        assert_eq!(text(&output.stderr), "", "{args:?}");
    }
}

/// How often `needle` occurs in `haystack`.
fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn a_store_that_cannot_be_opened_is_said_once_with_its_absolute_path() {
    let folder = Folder::new(&RELATIVE_STORE.replace("data/idemgate.sqlite3", "./../data/../data/idemgate.sqlite3"));
    let store = folder.dir.path().join("data/idemgate.sqlite3");
    std::fs::create_dir(folder.dir.path().join("data")).unwrap();
    let commands: [&[&str]; 5] = [
        &["events", "list"],
        &["events", "stats"],
        &["destination", "list"],
        &["store", "purge", "--dry-run"],
        &["store", "backup", "--to", "backup.sqlite3"],
    ];
    let env = [("HOOKS_SECRET", "unused")];
    std::fs::write(&store, "a text file where the store should be, longer than a header would be\n".repeat(20))
        .unwrap();
    for args in commands {
        let output = idemgate(&folder.elsewhere(), &folder.config(), args, &env);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert_eq!(occurrences(&stderr, "not a database"), 1, "{args:?}: {stderr}");
        assert_eq!(occurrences(&stderr, &store.display().to_string()), 1, "{args:?}: {stderr}");
    }
    // A folder where the file should be: SQLite cannot open it.
    std::fs::remove_file(&store).unwrap();
    std::fs::create_dir(&store).unwrap();
    for args in commands {
        let output = idemgate(&folder.elsewhere(), &folder.config(), args, &env);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        assert_eq!(occurrences(&stderr, "unable to open database file"), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("/../") && !stderr.contains("/./"), "{args:?}: {stderr}");
    }
}

#[test]
fn paths_are_printed_absolute_and_normalized() {
    let folder = Folder::new(
        &RELATIVE_STORE
            .replace("data/idemgate.sqlite3", "../data/./idemgate.sqlite3")
            .replace("listen = \"127.0.0.1:0\"", "listen = \"127.0.0.1:0\"\npid_file = \"../run/../run/idemgate.pid\""),
    );
    let dir = folder.dir.path().display().to_string();
    let relative_config = Path::new("..").join("etc").join(".").join("idemgate.toml");
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let env = [("HOOKS_SECRET", secret.as_str())];

    let output = idemgate(&folder.elsewhere(), &relative_config, &["events", "list"], &env);
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("no store at {dir}/data/idemgate.sqlite3:")), "{stderr}");

    let output = idemgate(&folder.elsewhere(), &relative_config, &["config", "check"], &env);
    assert!(output.status.success(), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with(&format!("# {dir}/etc/idemgate.toml: valid\n")), "{stdout}");
    assert!(stdout.contains(&format!("store.path = \"{dir}/data/idemgate.sqlite3\"")), "{stdout}");
    assert!(stdout.contains(&format!("server.pid_file = \"{dir}/run/idemgate.pid\"")), "{stdout}");

    let tls = ("IDEMGATE_SERVER__TLS", r#"{ cert = "../tls/../tls/cert.pem", key = "tls/key.pem" }"#);
    let output = idemgate(&folder.elsewhere(), &relative_config, &["config", "check"], &[env[0], tls]);
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("from {dir}/tls/cert.pem")), "{stderr}");
    let secret = ("IDEMGATE_SOURCES__HOOKS__SECRETS", "file:../secrets/./hooks");
    let output = idemgate(&folder.elsewhere(), &relative_config, &["config", "check"], &[secret]);
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("cannot read secret file {dir}/secrets/hooks")), "{stderr}");
    let output = idemgate(&folder.elsewhere(), Path::new("../etc/../missing.toml"), &["events", "list"], &env);
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with(&format!("idemgate: config error: {dir}/missing.toml: cannot read")), "{stderr}");
    // Paths given on the command line are relative to the working directory.
    let verify = ["verify", "--source", "hooks", "--headers", "./x/../head.txt", "--body", "body.json"];
    let output = idemgate(&folder.elsewhere(), &relative_config, &verify, &env);
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with(&format!("idemgate: cannot read {dir}/elsewhere/head.txt:")), "{stderr}");
}

#[test]
fn a_toml_syntax_error_names_file_line_and_column_and_shows_the_line() {
    let folder = Folder::new(&RELATIVE_STORE.replace("[worker]\nenabled = false", "[worker]\npoll_interval = 5 s"));
    let dir = folder.dir.path().display().to_string();
    let relative_config = Path::new("..").join("etc").join("idemgate.toml");
    let line = RELATIVE_STORE.lines().position(|line| line == "[worker]").unwrap() + 2;
    for args in [&["serve"][..], &["worker"], &["config", "check"], &["events", "list"], &["store", "purge"]] {
        let output = idemgate(&folder.elsewhere(), &relative_config, args, &[("HOOKS_SECRET", "unused")]);
        assert!(!output.status.success(), "{args:?}: {output:?}");
        let stderr = text(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(
            lines[0].starts_with(&format!("idemgate: config error: {dir}/etc/idemgate.toml:{line}:17: ")),
            "{stderr}"
        );
        assert_eq!(lines[1], format!(" {line} | poll_interval = 5 s"), "{stderr}");
        assert_eq!(lines[2], format!(" {} | {}^", " ".repeat(line.to_string().len()), " ".repeat(16)), "{stderr}");
    }
}

#[test]
fn a_listen_address_may_be_a_host_name_that_resolves() {
    let folder = Folder::new(RELATIVE_STORE);
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("localhost:{port}");
    let env = [
        ("HOOKS_SECRET", secret.as_str()),
        ("IDEMGATE_SERVER__LISTEN", listen.as_str()),
        ("IDEMGATE_ADMIN__LISTEN", "localhost:0"),
        ("IDEMGATE_ADMIN__TOKEN", "admin-token-0123456789"),
        ("IDEMGATE_METRICS__LISTEN", "localhost:0"),
    ];
    let mut gateway = Gateway::start(&folder.config(), &env);
    assert_eq!(gateway.addr, format!("127.0.0.1:{port}").parse().unwrap());
    assert!(gateway.admin_addr().ip().is_loopback());
    assert!(gateway.next_line().starts_with("metrics listening on 127.0.0.1:"));
    let event = body("msg_1", "t.created");
    let signer = Signer::Standard(KEY.to_vec());
    assert_eq!(gateway.post("hooks", &signer.headers("msg_1", &event, unix_now()), &event).status(), 202);
    gateway.stop();

    // A name that cannot resolve (a label longer than 63 bytes: no query is sent) is a
    // one-line error naming the key.
    let unresolvable = format!("{}:{port}", "a".repeat(64));
    for key in ["SERVER", "ADMIN", "METRICS"] {
        let variable = format!("IDEMGATE_{key}__LISTEN");
        let env = [env[0], env[3], (variable.as_str(), unresolvable.as_str())];
        let output = idemgate(&folder.elsewhere(), &folder.config(), &["serve"], &env);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let key = key.to_lowercase();
        assert!(stderr.starts_with(&format!("idemgate: config error: {key}.listen: host ")), "{stderr}");
        assert!(stderr.contains("does not resolve"), "{stderr}");
    }
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap_or_else(|err| panic!("{}: {err}", path.display())).permissions().mode() & 0o777
}

#[test]
fn the_store_its_folder_and_its_backups_are_readable_by_their_owner_alone() {
    let folder = Folder::new(RELATIVE_STORE);
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let env = [("HOOKS_SECRET", secret.as_str())];
    let data = folder.dir.path().join("etc/data");
    let store = data.join("idemgate.sqlite3");
    let gateway = Gateway::start(&folder.config(), &env);
    let event = body("msg_1", "t.created");
    let signer = Signer::Standard(KEY.to_vec());
    assert_eq!(gateway.post("hooks", &signer.headers("msg_1", &event, unix_now()), &event).status(), 202);
    assert_eq!(mode(&data), 0o700, "the folder serve created");
    for file in ["idemgate.sqlite3", "idemgate.sqlite3-wal", "idemgate.sqlite3-shm"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    gateway.stop();

    let backup = folder.dir.path().join("backup.sqlite3");
    let output =
        idemgate(&folder.elsewhere(), &folder.config(), &["store", "backup", "--to", "../backup.sqlite3"], &env);
    assert!(output.status.success(), "{output:?}");
    assert!(text(&output.stdout).starts_with(&format!("backup {}: 1 receipt(s)", backup.display())), "{output:?}");
    assert_eq!(mode(&backup), 0o600);
    let again =
        idemgate(&folder.elsewhere(), &folder.config(), &["store", "backup", "--to", "../backup.sqlite3"], &env);
    assert!(text(&again.stderr).contains("the backup file already exists"), "{again:?}");
    assert_eq!(mode(&backup), 0o600);

    // A backup made readable by others is restored as a store readable by its owner alone,
    // and the store it replaces is kept the same way.
    std::fs::set_permissions(&backup, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let output =
        idemgate(&folder.elsewhere(), &folder.config(), &["store", "restore", "--from", "../backup.sqlite3"], &env);
    assert!(output.status.success(), "{output:?}");
    let kept = std::fs::read_dir(&data).unwrap().map(|entry| entry.unwrap().path()).collect::<Vec<_>>();
    for file in kept {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    assert_eq!(mode(&store), 0o600);
}
