//! The broker side of `bench/brokers.sh`: declares (or deletes) a durable RabbitMQ queue
//! on the default exchange, and creates (or deletes) a JetStream stream for one subject
//! with a one-hour duplicate window, with the brokers' own clients. It also counts the
//! messages a queue or a stream holds, to check that the benchmark delivered every event.
//!
//!     broker_setup amqp-declare URL QUEUE | amqp-count URL QUEUE | amqp-delete URL QUEUE
//!     broker_setup nats-create URL STREAM SUBJECT | nats-count URL STREAM | nats-delete URL STREAM

use std::{io::Write, process::ExitCode, time::Duration};

use lapin::{
    Connection, ConnectionProperties,
    options::{QueueDeclareOptions, QueueDeleteOptions},
    types::FieldTable,
};

type Failure = Box<dyn std::error::Error>;

async fn amqp(action: &str, url: &str, queue: &str) -> Result<(), Failure> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    match action {
        "amqp-declare" | "amqp-count" => {
            let options = QueueDeclareOptions { durable: true, ..QueueDeclareOptions::default() };
            let declared = channel.queue_declare(queue.into(), options, FieldTable::default()).await?;
            if action == "amqp-count" {
                writeln!(std::io::stdout(), "{}", declared.message_count())?;
            }
        }
        _ => {
            channel.queue_delete(queue.into(), QueueDeleteOptions::default()).await?;
        }
    }
    connection.close(200, "done".into()).await?;
    Ok(())
}

async fn nats(action: &str, url: &str, stream: &str, subject: Option<&str>) -> Result<(), Failure> {
    let context = async_nats::jetstream::new(async_nats::connect(url).await?);
    match (action, subject) {
        ("nats-create", Some(subject)) => {
            let config = async_nats::jetstream::stream::Config {
                name: stream.to_owned(),
                subjects: vec![subject.to_owned()],
                duplicate_window: Duration::from_secs(3600),
                ..Default::default()
            };
            context.create_stream(config).await?;
        }
        ("nats-count", _) => {
            let count = context.get_stream(stream).await?.info().await?.state.messages;
            writeln!(std::io::stdout(), "{count}")?;
        }
        ("nats-delete", _) => {
            context.delete_stream(stream).await?;
        }
        _ => return Err("nats-create needs a subject".into()),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let done = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [action @ ("amqp-declare" | "amqp-count" | "amqp-delete"), url, queue] => amqp(action, url, queue).await,
        [action @ ("nats-create" | "nats-count" | "nats-delete"), url, stream, rest @ ..] => {
            nats(action, url, stream, rest.first().copied()).await
        }
        _ => Err("usage: see the doc comment of examples/broker_setup.rs".into()),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("broker_setup: {err}");
            ExitCode::FAILURE
        }
    }
}
