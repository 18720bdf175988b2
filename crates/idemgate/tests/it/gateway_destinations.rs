//! What an operator sees of each destination, against the real process: enabled or
//! disabled by a `410` since when, jobs by state, the latest success and failure, and a
//! health taken from recent attempts, so a destination whose every job is dead is not
//! "ok". The same on `idemgate destination list`, its `--json`, the admin API and the
//! dashboard.

use std::{net::SocketAddr, time::Duration};

use idemgate_testkit::{Destination, Step};
use serde_json::Value;

use crate::{
    gateway_dashboard::{TOKEN, page, sign_in},
    gateway_harness::{Gateway, Setup, Signer, body},
    harness::{exchange, unix_now},
};

const KEY: [u8; 32] = [11; 32];

fn stdout(setup: &Setup, args: &[&str]) -> String {
    let output = setup.run(args, &[]);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn listed(setup: &Setup) -> Value {
    serde_json::from_str::<Value>(&stdout(setup, &["destination", "list", "--json"])).unwrap()["destinations"].clone()
}

fn named<'a>(all: &'a Value, name: &str) -> &'a Value {
    all.as_array().unwrap().iter().find(|d| d["name"] == name).unwrap_or_else(|| panic!("no {name} in {all}"))
}

fn admin_get(admin: SocketAddr, path: &str) -> Value {
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let reply = exchange(admin, head.as_bytes());
    assert_eq!(reply.status(), 200, "{reply:?}");
    reply.body().clone()
}

#[test]
fn each_destination_shows_its_state_jobs_latest_success_and_failure_and_a_health_from_recent_attempts() {
    let refusing = Destination::start(&[]);
    refusing.otherwise(Step::Status(400));
    let fine = Destination::start(&[]);
    let gone = Destination::start(&[]);
    gone.otherwise(Step::Status(410));
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         destinations = [\"app\", \"billing\", \"legacy\"]\n\
         [destinations.app]\nurl = \"{app}\"\ntimeout = \"1s\"\nretry_schedule = []\n\
         [destinations.billing]\nurl = \"{billing}\"\ntimeout = \"1s\"\n\
         [destinations.legacy]\nurl = \"{legacy}\"\ntimeout = \"1s\"\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        app = refusing.url(),
        billing = fine.url(),
        legacy = gone.url(),
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    for id in ["msg_1", "msg_2"] {
        let event = body(id, "t");
        let headers = Signer::Standard(KEY.to_vec()).headers(id, &event, unix_now());
        assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    }
    let mut all = listed(&setup);
    for _ in 0..500 {
        let settled = named(&all, "app")["jobs"]["dead"] == 2
            && named(&all, "billing")["jobs"]["succeeded"] == 2
            && named(&all, "legacy")["state"] == "disabled";
        if settled {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        all = listed(&setup);
    }

    let app = named(&all, "app");
    assert_eq!(app["state"], "enabled", "{app}");
    assert_eq!(app["health"], "failing", "every job dead is not ok: {app}");
    assert_eq!(app["jobs"], serde_json::json!({"dead": 2}), "{app}");
    assert!(app["last_success_at"].is_null(), "{app}");
    assert_eq!(app["last_failure"]["status"], 400, "{app}");
    assert!(app["last_failure"]["at"].as_i64().unwrap() >= unix_now() - 600, "unix seconds: {app}");
    let billing = named(&all, "billing");
    assert_eq!((&billing["health"], &billing["state"]), (&"ok".into(), &"enabled".into()), "{billing}");
    assert!(billing["last_success_at"].is_i64() && billing["last_failure"].is_null(), "{billing}");
    let legacy = named(&all, "legacy");
    assert_eq!((&legacy["state"], &legacy["disabled_reason"]), (&"disabled".into(), &"410 Gone".into()), "{legacy}");
    assert!(legacy["disabled_at"].is_i64(), "{legacy}");
    assert_eq!(legacy["last_failure"]["status"], 410, "{legacy}");

    assert_eq!(admin_get(admin, "/admin/v1/destinations"), all, "the API's view is the CLI's");

    let text = stdout(&setup, &["destination", "list"]);
    let block = |name: &str| -> String {
        text.split_once(&format!("{name}\n")).unwrap().1.lines().take(5).collect::<Vec<_>>().join("\n")
    };
    let app_text = block("app");
    assert!(app_text.contains("  state         enabled\n  health        failing\n  jobs          dead 2"), "{text}");
    assert!(app_text.contains("  last success  -"), "{text}");
    let failure = app_text.lines().find(|l| l.starts_with("  last failure  ")).unwrap();
    let at = failure.split_whitespace().nth(2).unwrap();
    assert!(at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "{failure}");
    assert!(
        failure.contains(&format!("{at} (")) && failure.ends_with(") 400"),
        "RFC 3339, how long ago, the status: {failure}"
    );
    assert!(block("legacy").contains("  state         disabled (410 Gone) since "), "{text}");
    assert!(!text.contains(&app["last_failure"]["at"].to_string()), "no unix seconds in the text: {text}");

    let page = page(admin, &sign_in(admin).session()).body;
    let row = |name: &str| -> String {
        page.split_once(&format!("<tr data-destination=\"{name}\">"))
            .unwrap()
            .1
            .split("</tr>")
            .next()
            .unwrap()
            .to_owned()
    };
    assert!(
        row("app")
            .contains("<td class=\"health\" data-label=\"health\"><span class=\"badge warn\">failing</span></td>"),
        "{}",
        row("app")
    );
    assert!(
        row("billing").contains("<td class=\"health\" data-label=\"health\"><span class=\"badge good\">ok</span></td>"),
        "{}",
        row("billing")
    );
    assert!(row("legacy").contains("disabled (410 Gone) since <time datetime="), "{}", row("legacy"));
}
