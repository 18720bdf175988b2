//! The command line: configuration errors (one line, exit 2, before listening),
//! `idemgate verify` on captured requests, and the listings (with what an empty one says).

use std::process::Output;

use serde_json::json;

use crate::{
    gateway_harness::{Setup, Signer, body, inbox, numbered, typed},
    harness::unix_now,
};

const SOURCE: &str = r#"
[sources.hooks]
scheme = "standard-webhooks"
secrets = ["env:HOOKS_SECRET"]
event_type = "/type"
allowed_types = ["t.created"]
"#;

fn secret() -> String {
    Signer::Standard(vec![9; 32]).config_secret()
}

fn config_error(sources: &str, env: &[(&str, &str)]) -> String {
    let setup = Setup::new(sources);
    let output = setup.run(&["serve"], env);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "listened despite a bad config");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    stderr
}

#[test]
fn a_missing_secret_variable_names_the_key_and_the_variable() {
    let stderr = config_error(SOURCE, &[]);
    assert!(stderr.contains("sources.hooks.secrets[0]: environment variable HOOKS_SECRET is not set"), "{stderr}");
}

#[test]
fn an_unknown_scheme_lists_the_known_ones() {
    let stderr = config_error("[sources.a]\nscheme = \"stripey\"\nsecrets = [\"x\"]\n", &[]);
    assert!(stderr.contains("sources.a.scheme: unknown scheme \"stripey\""), "{stderr}");
    assert!(stderr.contains("standard-webhooks"), "{stderr}");
}

#[test]
fn an_unknown_key_is_named() {
    let stderr = config_error("[sources.a]\nscheme = \"github\"\nsecrets = [\"x\"]\ntolerence = \"5m\"\n", &[]);
    assert!(stderr.contains("sources.a.tolerence: unknown field `tolerence`"), "{stderr}");
}

#[test]
fn a_bad_duration_is_named() {
    let stderr =
        config_error("[sources.a]\nscheme = \"slack\"\nsecrets = [\"x\"]\ntolerance = \"5 minutes-ish\"\n", &[]);
    assert!(stderr.contains("sources.a.tolerance: invalid duration"), "{stderr}");
}

#[test]
fn a_malformed_secret_is_refused_without_echoing_it() {
    let stderr = config_error(SOURCE, &[("HOOKS_SECRET", "whsec_%%%not-base64%%%")]);
    assert!(stderr.contains("sources.hooks.secrets[0]"), "{stderr}");
    assert!(!stderr.contains("not-base64"), "the secret was echoed: {stderr}");
}

#[test]
fn an_environment_override_replaces_a_file_value() {
    let stderr = config_error(SOURCE, &[("HOOKS_SECRET", &secret()), ("IDEMGATE_SERVER__LISTEN", "not-an-address")]);
    assert!(stderr.contains("server.listen"), "{stderr}");
}

/// The refusal `verify` printed on its `answer    401 {…}` line, as JSON.
fn answer(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().find_map(|l| l.strip_prefix("answer    401 ")).unwrap_or_else(|| panic!("{stdout}"));
    serde_json::from_str(line).unwrap()
}

fn verify(setup: &Setup, headers: &[(String, String)], body: &[u8], at: Option<i64>) -> (Output, String) {
    let dir = setup.dir.path();
    let head: String = headers.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    std::fs::write(dir.join("head.txt"), format!("POST /in/hooks HTTP/1.1\n{head}")).unwrap();
    std::fs::write(dir.join("body.bin"), body).unwrap();
    let (h, b) = (dir.join("head.txt"), dir.join("body.bin"));
    let mut args = vec!["verify", "--source", "hooks", "--headers", h.to_str().unwrap(), "--body", b.to_str().unwrap()];
    let at = at.map(|t| t.to_string());
    if let Some(at) = &at {
        args.extend(["--at", at]);
    }
    let output = setup.run(&args, &[("HOOKS_SECRET", &secret())]);
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    (output, stdout)
}

#[test]
fn verify_passes_a_good_capture_and_names_the_failing_check_otherwise() {
    let setup = Setup::new(SOURCE);
    let signer = Signer::Standard(vec![9; 32]);
    let now = unix_now();
    let good = body("msg_1", "t.created");
    let headers = signer.headers("msg_1", &good, now);

    let (ok, stdout) = verify(&setup, &headers, &good, None);
    assert!(ok.status.success(), "{stdout}");
    assert!(!stdout.contains("answer "), "a delivery that verifies is not refused: {stdout}");
    assert!(stdout.contains("signature ok") && stdout.contains("identity  ok      msg_1"), "{stdout}");

    let (tampered, stdout) = verify(&setup, &headers, &body("msg_1", "t.createX"), None);
    assert_eq!(tampered.status.code(), Some(1));
    assert!(stdout.contains("signature FAILED  signature does not match"), "{stdout}");
    assert_eq!(answer(&stdout), json!({"error": "authentication", "reason": "signature_mismatch"}));

    let (late, stdout) = verify(&setup, &headers, &good, Some(now + 3600));
    assert_eq!(late.status.code(), Some(1));
    assert!(stdout.contains("timestamp is outside the tolerance"), "{stdout}");
    let stale = json!({"error": "authentication", "reason": "timestamp_out_of_tolerance", "tolerance_secs": 300});
    assert_eq!(answer(&stdout), stale);

    let unsigned: Vec<_> = headers.iter().filter(|(name, _)| name != "webhook-signature").cloned().collect();
    assert_eq!(unsigned.len() + 1, headers.len(), "{headers:?}");
    let (missing, stdout) = verify(&setup, &unsigned, &good, None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stdout.contains("signature FAILED  header webhook-signature is missing"), "{stdout}");
    assert_eq!(
        answer(&stdout),
        json!({"error": "authentication", "reason": "missing_header", "header": "webhook-signature"})
    );
    let mut repeated = headers.clone();
    repeated.extend(headers.iter().filter(|(name, _)| name == "webhook-signature").cloned());
    let (malformed, stdout) = verify(&setup, &repeated, &good, None);
    assert_eq!(malformed.status.code(), Some(1));
    assert_eq!(
        answer(&stdout),
        json!({"error": "authentication", "reason": "malformed_header", "header": "webhook-signature"})
    );
    let signature = &headers.iter().find(|(name, _)| name == "webhook-signature").unwrap().1;
    assert!(!stdout.contains(signature.as_str()) && !stdout.contains("msg_1"), "no value, no body: {stdout}");
    let (at_capture, _) = verify(&setup, &headers, &good, Some(now + 10));
    assert!(at_capture.status.success(), "--at judges the timestamp as of then");

    let other_type = body("msg_2", "t.deleted");
    let (refused, stdout) = verify(&setup, &signer.headers("msg_2", &other_type, now), &other_type, None);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stdout.contains("type      FAILED  t.deleted is not in allowed_types"), "{stdout}");

    let broken = b"{\"id\":1,\"id\":2}".to_vec();
    let (json, stdout) = verify(&setup, &signer.headers("msg_3", &broken, now), &broken, None);
    assert_eq!(json.status.code(), Some(1));
    assert!(stdout.contains("json      FAILED  duplicate object key"), "{stdout}");
    assert!(!stdout.contains(&secret()), "the secret was printed");
}

#[test]
fn store_backup_restore_and_purge_from_the_command_line() {
    let setup = Setup::new(&format!("{SOURCE}retention = \"1s\"\n").replace("allowed_types = [\"t.created\"]\n", ""));
    let secret = secret();
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &[("HOOKS_SECRET", &secret)]);
    accept_all(&gateway, numbered("msg_", 5));
    let env = [("HOOKS_SECRET", secret.as_str()), ("IDEMGATE_RETENTION__AUDIT", "1s")];
    let retry = setup.run(&["events", "retry"], &env);
    assert!(retry.status.success(), "an audit record: {retry:?}");
    let copy = setup.dir.path().join("backup.sqlite3");
    let backup = setup.run(&["store", "backup", "--to", copy.to_str().unwrap()], &env);
    assert!(backup.status.success(), "{backup:?}");
    assert!(String::from_utf8_lossy(&backup.stdout).contains("5 receipt(s), 5 event(s), 0 job(s)"), "{backup:?}");
    // Older than the 1 s retention at a whole-second granularity.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let dry = setup.run(&["store", "purge", "--dry-run"], &env);
    assert!(String::from_utf8_lossy(&dry.stdout).starts_with("would purge 5 receipt(s)"), "{dry:?}");
    assert!(String::from_utf8_lossy(&dry.stdout).contains(", 1 audit record(s)"), "{dry:?}");
    assert_eq!(inbox(&setup.db()).receipts.len(), 5, "a dry run purges nothing");
    drop(gateway);
    let restore = setup.run(&["store", "restore", "--from", copy.to_str().unwrap()], &env);
    assert!(restore.status.success(), "{restore:?}");
    assert_eq!(inbox(&setup.db()).receipts.len(), 5);
    let purge = setup.run(&["store", "purge"], &env);
    assert!(String::from_utf8_lossy(&purge.stdout).starts_with("purged 5 receipt(s), 5 event(s)"), "{purge:?}");
    assert!(String::from_utf8_lossy(&purge.stdout).contains(", 1 audit record(s)"), "{purge:?}");
    assert!(inbox(&setup.db()).receipts.is_empty());
    let again = setup.run(&["store", "purge", "--dry-run"], &env);
    assert!(String::from_utf8_lossy(&again.stdout).contains(", 0 audit record(s)"), "{again:?}");
}

#[test]
fn events_list_show_and_stats_describe_what_arrived() {
    let setup = Setup::new(SOURCE);
    let secret = secret();
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &[("HOOKS_SECRET", &secret)]);
    accept_all(&gateway, numbered("msg_", 3));
    let signer = Signer::Standard(vec![9; 32]);
    let conflicting = body("msg_0", "t.created2");
    assert_eq!(gateway.post("hooks", &signer.headers("msg_0", &conflicting, unix_now()), &conflicting).status(), 409);
    let env = [("HOOKS_SECRET", secret.as_str())];
    let json = |args: &[&str]| -> serde_json::Value {
        let output = setup.run(args, &env);
        assert!(output.status.success(), "{output:?}");
        assert!(output.stderr.is_empty(), "short commands stay quiet: {output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let page = json(&["events", "list", "--limit", "2", "--json"]);
    let ids: Vec<_> = page["events"].as_array().unwrap().iter().map(|e| e["identity"].clone()).collect();
    assert_eq!(ids, ["msg_2", "msg_1"], "newest first");
    let before = page["next_before"].to_string();
    let rest = json(&["events", "list", "--limit", "2", "--before", &before, "--json"]);
    assert_eq!(rest["events"][0]["identity"], "msg_0");
    assert_eq!(rest["next_before"], serde_json::Value::Null);
    let shown = json(&["events", "show", "hooks", "msg_1", "--json"]);
    assert_eq!(shown["outcome"], "applied");
    assert_eq!(shown["result"], serde_json::json!({"event": "msg_1"}));
    let stats = json(&["events", "stats", "--json"]);
    assert_eq!(stats["sources"][0]["receipts"], 3);
    assert_eq!(stats["sources"][0]["conflicts"], 1);
    let missing = setup.run(&["events", "show", "hooks", "nope"], &env);
    assert_eq!(missing.status.code(), Some(1));

    // The 409 is on the event it contradicts: its hash, count and times, never its bytes.
    let shown = json(&["events", "show", "hooks", "msg_0", "--json"]);
    let conflicts = shown["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{shown}");
    assert_eq!(conflicts[0]["body_sha256"], idemgate::core::BodyHash::of(&conflicting).to_hex());
    assert_eq!(conflicts[0]["seen_count"], 1);
    assert!(conflicts[0]["first_seen_at"].is_i64() && conflicts[0]["last_seen_at"].is_i64(), "{shown}");
    assert!(!shown.to_string().contains("t.created2"), "the conflicting body is not shown: {shown}");
    assert_eq!(json(&["events", "show", "hooks", "msg_1", "--json"])["conflicts"], serde_json::json!([]));
    let text = String::from_utf8(setup.run(&["events", "show", "hooks", "msg_0"], &env).stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("conflicts ")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("conflicts 1 delivery(ies) with other bytes, answered 409"), "{text}");
    let hash = idemgate::core::BodyHash::of(&conflicting).to_hex();
    assert!(text.lines().any(|l| l.starts_with(&format!("conflict  sha256 {hash}  seen 1  first "))), "{text}");
}

#[test]
fn an_empty_listing_says_so_on_stderr_and_its_json_stays_a_list() {
    let setup = Setup::new(SOURCE);
    let secret = secret();
    let env = [("HOOKS_SECRET", secret.as_str())];
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &env);
    drop(gateway);
    for (args, said) in [
        (&["events", "list"][..], "No events match."),
        (&["events", "list", "--source", "hooks", "--state", "dead"][..], "No events match."),
        (&["events", "stats"][..], "No events received yet."),
        (&["destination", "list"][..], "No destination has jobs yet."),
    ] {
        let output = setup.run(args, &env);
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{args:?}: stdout holds rows only: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr).trim_end(), said, "{args:?}");
    }
    for (args, list) in [
        (&["events", "list", "--json"][..], "events"),
        (&["events", "stats", "--json"][..], "sources"),
        (&["destination", "list", "--json"][..], "destinations"),
    ] {
        let output = setup.run(args, &env);
        assert!(output.status.success() && output.stderr.is_empty(), "{args:?}: {output:?}");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(json[list], serde_json::json!([]), "{args:?}: {json}");
    }
}

#[test]
fn a_postgres_url_is_exclusive_with_a_path_and_its_password_is_never_shown() {
    let url = ("IDEMGATE_STORE__URL", "postgres://idemgate:hunter2-pw@127.0.0.1:1/nothing");
    let both = Setup::new("");
    std::fs::write(both.config(), format!("[store]\npath = \"x.sqlite3\"\nurl = \"env:DB_URL\"\n{SOURCE}")).unwrap();
    let output = both.run(&["serve"], &[("HOOKS_SECRET", &secret()), ("DB_URL", url.1)]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("store.url: give either store.path (SQLite) or store.url (PostgreSQL)"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let setup = Setup::new("");
    let config =
        format!("[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"env:DB_URL\"\npool_wait = \"1s\"\n{SOURCE}");
    std::fs::write(setup.config(), config).unwrap();
    // `serve` would start without its store (gateway_startup); a command needs it now.
    let output = setup.run(&["events", "stats"], &[("DB_URL", url.1), ("HOOKS_SECRET", &secret())]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "answered without a store");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("cannot open the store: postgres error"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password was shown: {stderr}");
    let output = setup.run(&["serve"], &[("DB_URL", "mysql://localhost/x"), ("HOOKS_SECRET", &secret())]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8(output.stderr).unwrap().contains("store.url: must be a postgres://"));
}

/// Accepts `t.created` events under `identities` through `gateway`.
fn accept_all<I: AsRef<str>>(gateway: &crate::gateway_harness::Gateway, identities: impl IntoIterator<Item = I>) {
    gateway.accept_events("hooks", &Signer::Standard(vec![9; 32]), &[], typed(identities, "t.created"));
}

/// The copies `restore` kept beside the store, oldest name first.
fn kept_copies(setup: &Setup) -> Vec<std::path::PathBuf> {
    let mut kept: Vec<_> = std::fs::read_dir(setup.db().parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.contains("before-restore") && !name.ends_with("-wal") && !name.ends_with("-shm")
        })
        .collect();
    kept.sort();
    kept
}

#[test]
fn restore_is_refused_while_a_server_has_the_store_open_and_works_once_it_stopped() {
    let setup = Setup::new(SOURCE);
    let secret = secret();
    let env = [("HOOKS_SECRET", secret.as_str())];
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &env);
    accept_all(&gateway, ["msg_1", "msg_2"]);
    let copy = setup.dir.path().join("backup.sqlite3");
    assert!(setup.run(&["store", "backup", "--to", copy.to_str().unwrap()], &env).status.success());
    accept_all(&gateway, ["msg_3"]);

    let refused = setup.run(&["store", "restore", "--from", copy.to_str().unwrap()], &env);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("in use by process {}", gateway.pid())), "{stderr}");
    assert!(kept_copies(&setup).is_empty(), "a refused restore changes nothing");
    accept_all(&gateway, ["msg_4"]);
    assert_eq!(inbox(&setup.db()).receipts, ["msg_1", "msg_2", "msg_3", "msg_4"]);

    gateway.stop();
    let restored = setup.run(&["store", "restore", "--from", copy.to_str().unwrap()], &env);
    assert!(restored.status.success(), "{restored:?}");
    assert_eq!(inbox(&setup.db()).receipts, ["msg_1", "msg_2"]);
    let kept = kept_copies(&setup);
    assert_eq!(kept.len(), 1);
    assert_eq!(inbox(&kept[0]).receipts, ["msg_1", "msg_2", "msg_3", "msg_4"]);
}

#[test]
fn restore_after_a_crash_keeps_a_copy_with_everything_the_crashed_store_held() {
    let setup = Setup::new(SOURCE);
    let secret = secret();
    let env = [("HOOKS_SECRET", secret.as_str())];
    let mut gateway = crate::gateway_harness::Gateway::start(&setup.config(), &env);
    accept_all(&gateway, ["msg_1", "msg_2"]);
    let copy = setup.dir.path().join("backup.sqlite3");
    assert!(setup.run(&["store", "backup", "--to", copy.to_str().unwrap()], &env).status.success());
    accept_all(&gateway, ["msg_3", "msg_4", "msg_5"]);
    gateway.kill();
    let wal = setup.db().with_file_name("idemgate.sqlite3-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0, "the crash left its commits in the WAL");

    let restored = setup.run(&["store", "restore", "--from", copy.to_str().unwrap()], &env);
    assert!(restored.status.success(), "{restored:?}");
    assert_eq!(inbox(&setup.db()).receipts, ["msg_1", "msg_2"]);
    let kept = kept_copies(&setup);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let everything = ["msg_1", "msg_2", "msg_3", "msg_4", "msg_5"];
    assert_eq!(inbox(&kept[0]).receipts, everything, "the kept copy holds what only the WAL held");
    assert!(String::from_utf8_lossy(&restored.stdout).contains(&kept[0].display().to_string()), "{restored:?}");

    let again = setup.run(&["store", "restore", "--from", copy.to_str().unwrap()], &env);
    assert!(again.status.success(), "{again:?}");
    let kept = kept_copies(&setup);
    assert_eq!(kept.len(), 2, "a second restore keeps its own copy: {kept:?}");
    assert!(kept.iter().any(|path| inbox(path).receipts == everything), "the first copy was not overwritten");
}

#[test]
fn the_config_is_found_before_or_after_the_subcommand_and_through_idemgate_config() {
    let setup = Setup::new(SOURCE);
    let secret = secret();
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &[("HOOKS_SECRET", &secret)]);
    let event = body("msg_1", "t.created");
    let signer = Signer::Standard(vec![9; 32]);
    assert_eq!(gateway.post("hooks", &signer.headers("msg_1", &event, unix_now()), &event).status(), 202);
    let config = setup.config();
    let stats = |args: &[&str], env: &[(&str, &str)]| {
        let output = std::process::Command::new(crate::gateway_harness::idemgate_bin())
            .args(args)
            .env("HOOKS_SECRET", &secret)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        let stats: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        stats
    };
    let config = config.to_str().unwrap();
    let before = stats(&["--config", config, "events", "stats", "--json"], &[]);
    let after = stats(&["events", "stats", "--json", "--config", config], &[]);
    let from_env = stats(&["events", "stats", "--json"], &[("IDEMGATE_CONFIG", config)]);
    assert_eq!(before, after);
    assert_eq!(before, from_env);
    assert!(before.to_string().contains("hooks"), "{before}");
}
