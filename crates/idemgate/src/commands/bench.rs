//! `idemgate bench`: turns the command line into a workload for the load generator
//! ([`idemgate_bench`]), drives it and prints the report, exiting 1 if exactly-once failed;
//! `bench seed` fills a store instead. Receipts and signatures are dated by the clock it is
//! given.

use std::{path::Path, process::ExitCode};

use anyhow::{Context, anyhow};
use idemgate::config;
use idemgate_bench as bench;
use idemgate_client::WebhookSigner;
use idemgate_clock::Clock;
use idemgate_core::{Secret, scheme::DemoV1};
use idemgate_store::sqlite::maintenance;

use super::{EXIT_FAILED, print_line};
use crate::cli::{BenchWorkload, Keys};

pub(super) async fn bench(workload: BenchWorkload, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    let replays = matches!(workload, BenchWorkload::Api { keys: Keys::Replay, .. });
    let (target, work, run) = match workload {
        BenchWorkload::Seed { db, source, receipts } => {
            let started = std::time::Instant::now();
            let written = maintenance::seed_receipts(&db, &source, receipts, clock.now())?;
            print_line(&format!("seeded {written} receipts of {source} in {:.1} s", started.elapsed().as_secs_f64()))?;
            return Ok(ExitCode::SUCCESS);
        }
        BenchWorkload::Counter { target, secret_env, events, redeliver, run } => {
            let text = std::env::var(&secret_env).with_context(|| format!("{secret_env} is not set"))?;
            let secret = Secret::from_hex(&text, 32).map_err(|err| anyhow!("{secret_env}: {err}"))?;
            let signer = WebhookSigner::new(&DemoV1::DEFAULT, secret).map_err(|err| anyhow!("{secret_env}: {err}"))?;
            (target, bench::counter_workload(&signer, events, redeliver, run.seed, clock.now()), run)
        }
        BenchWorkload::Webhooks { target, scheme, secret, events, redeliver, run } => {
            let text = config::secrets::resolve("--secret", &secret, Path::new("."), &mut Vec::new())?;
            let signer = super::send::signer(&scheme, &text)?;
            (target, bench::webhook_workload(&signer, events, redeliver, run.seed, clock.now()), run)
        }
        BenchWorkload::Outbound { target, token, messages, repeat, run } => {
            let token = config::secrets::resolve("--token", &token, Path::new("."), &mut Vec::new())?;
            (target, bench::outbound_workload(&token, messages, repeat, run.seed), run)
        }
        BenchWorkload::Api { target, requests, keys, run } => {
            (target, bench::api_workload(requests, keys != Keys::None, run.seed), run)
        }
    };
    let options = bench::Options {
        concurrency: run.concurrency,
        progress: !run.json,
        rate: run.rate,
        server_pids: run.server_pid,
        warm_up: replays,
    };
    let report = bench::drive(&target, work, options).await?;
    print_line(&if run.json { report.to_json().to_string() } else { report.to_text() })?;
    Ok(if report.exactly_once == Some(false) { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS })
}
