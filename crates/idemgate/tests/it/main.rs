//! Integration tests of the counter example over real HTTP on 127.0.0.1, against a real
//! process and a real SQLite file, with state read independently of the server.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod admin_listener;
mod admin_openapi_fuzz;
mod alerts;
mod broker_harness;
mod broker_logs;
mod broker_setup;
mod cli_docs;
mod config_cli;
mod doc_citations;
mod doc_links;
mod gateway_admin;
mod gateway_brokers;
mod gateway_cli;
mod gateway_dashboard;
mod gateway_delivery;
mod gateway_destinations;
mod gateway_harness;
mod gateway_in_process;
mod gateway_operator;
mod gateway_protect;
mod gateway_refusals;
mod gateway_startup;
mod harness;
mod hostile_clients;
mod idempotency_suite;
mod outbound_api;
mod outbound_attempts;
mod outbound_delivery;
mod outbound_endpoints;
mod outbound_instances;
mod outbound_keys;
mod outbound_messages;
mod outbound_racers;
mod outbound_schemas;
mod pg_cluster;
mod postgres_instances;
mod proxy_hardening;
mod queue_outcomes;
mod send_cli;
mod send_mail;
mod serve_logs;
mod smtp_submission;
mod store_faults;
mod traces;

mod counter_contract;
mod counter_faults;
mod counter_process;
mod counter_rejections;
mod crash_soak;
mod gateway_inbox;
mod gateway_metrics;
mod gateway_reload;
mod gateway_retry;
mod gateway_routing;
mod gateway_schemes;
mod gateway_senders;
mod gateway_tls;
