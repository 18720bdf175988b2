//! `idemgate apps list | show`: the sending side's applications (issue 37) as an operator
//! reads them in a terminal, as aligned text or `--json`. Reads the store directly through
//! `idemgate_http::console::applications`, so `--json` prints the admin API's shapes
//! (`/admin/v1/applications`, `/admin/v1/applications/{app}`) and the text is made from
//! the same views. Like the admin API it never shows a signing secret or a custom header's
//! value; text an endpoint or a customer chose (URLs, names, a failure's words) is escaped
//! so it cannot steer the terminal.

use idemgate_core::UnixTime;
use idemgate_http::console::applications::{self, ApplicationDetail, ApplicationsPage, ViewError};
use idemgate_store::Store;

use crate::operator::{printable, to_json, when};

/// What `apps list` says (on stderr) when there is no application: its text is then empty.
pub const NO_APPLICATIONS: &str = "No application yet: the outbound API ([api], /api/v1) creates them.";

/// How much of a name, URL or failure text one field prints.
const FIELD_SHOWN: usize = 200;

/// The page of applications after `after` (an application id) as text, one a line, or JSON.
pub async fn list(
    store: &Store,
    (after, limit): (Option<String>, usize),
    as_json: bool,
    now: UnixTime,
) -> Result<String, ViewError> {
    let page = applications::applications_page(store, after, limit, now).await?;
    if as_json {
        return Ok(to_json(&page));
    }
    Ok(list_text(&page))
}

fn list_text(page: &ApplicationsPage) -> String {
    if page.applications.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "{:<32} {:<24} {:<24} {:>9} {:>14} {:>8} {:>9}\n",
        "id", "uid", "name", "endpoints", "not delivering", "retrying", "dead jobs"
    );
    for a in &page.applications {
        text.push_str(&format!(
            "{:<32} {:<24} {:<24} {:>9} {:>14} {:>8} {:>9}\n",
            a.id,
            printable(a.uid.as_deref().unwrap_or("-"), FIELD_SHOWN),
            printable(&a.name, FIELD_SHOWN),
            a.endpoints,
            a.endpoints_not_delivering,
            a.endpoints_retrying,
            a.endpoints_with_dead_jobs,
        ));
    }
    if let Some(after) = &page.next_after {
        text.push_str(&format!("(more: --after {after})\n"));
    }
    text
}

/// The application `app` (its id or uid) with its endpoints, as text or JSON; `None` when
/// there is no such application.
pub async fn show(store: &Store, app: &str, as_json: bool, now: UnixTime) -> Result<Option<String>, ViewError> {
    let Some(detail) = applications::found(applications::application_detail(store, app, now).await)? else {
        return Ok(None);
    };
    if as_json {
        return Ok(Some(to_json(&detail)));
    }
    Ok(Some(show_text(&detail, now)))
}

fn show_text(detail: &ApplicationDetail, now: UnixTime) -> String {
    let a = &detail.application;
    let mut text = format!(
        "{}\n  uid           {}\n  name          {}\n  rate limit    {}\n  created       {}\n  endpoints     {} ({} not delivering, {} retrying, {} with dead jobs)\n",
        a.id,
        printable(a.uid.as_deref().unwrap_or("-"), FIELD_SHOWN),
        printable(&a.name, FIELD_SHOWN),
        a.throttle_rate.map_or("none".to_owned(), |r| format!("{r}/s")),
        when(a.created_at, now),
        a.endpoints,
        a.endpoints_not_delivering,
        a.endpoints_retrying,
        a.endpoints_with_dead_jobs,
    );
    for e in &detail.endpoints {
        let state = match &e.disabled_reason {
            Some(reason) => format!("{} ({})", e.state, printable(reason, FIELD_SHOWN)),
            None => e.state.clone(),
        };
        let jobs: Vec<String> = e.jobs.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let names = |list: &Option<Vec<String>>| {
            list.as_ref().map_or("all".to_owned(), |l| printable(&l.join(", "), FIELD_SHOWN))
        };
        let failure = e.last_failure.as_ref().map_or("-".to_owned(), |f| {
            let what =
                f.status.map_or_else(|| printable(f.error.as_deref().unwrap_or("-"), FIELD_SHOWN), |s| s.to_string());
            format!("{} {what}", when(f.at, now))
        });
        text.push_str(&format!(
            "\n  {}{}\n    url           {}\n    state         {state}\n    health        {}\n    jobs          {}\n    event types   {}\n    channels      {}\n    rate limit    {}\n    header names  {}\n    last success  {}\n    last failure  {failure}\n",
            e.id,
            e.uid.as_deref().map_or(String::new(), |uid| format!(" ({})", printable(uid, FIELD_SHOWN))),
            printable(&e.url, FIELD_SHOWN * 4),
            e.health,
            if jobs.is_empty() { "-".to_owned() } else { jobs.join(", ") },
            names(&e.event_types),
            names(&e.channels),
            e.throttle_rate.map_or("none".to_owned(), |r| format!("{r}/s")),
            if e.header_names.is_empty() { "-".to_owned() } else { printable(&e.header_names.join(", "), FIELD_SHOWN) },
            e.last_success_at.map_or("-".to_owned(), |at| when(at, now)),
        ));
    }
    text
}
