//! The accept loop: HTTP/1.1 with keep-alive, a header timeout, and graceful shutdown
//! (stop accepting, let in-flight requests finish, close idle connections).
//!
//! It also honours [`CloseWithoutResponse`]: a handler can ask for its connection to be
//! closed without any answer, which is how tests reproduce "the response was lost after
//! the commit". hyper closes a connection without writing when its service fails, so the
//! marker is turned into a service error here.

use std::{future::Future, io, time::Duration};

use axum::{Router, body::Body, response::Response};
use http::Request;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
};
use tokio::net::TcpListener;
use tower::ServiceExt;

/// Limits of the accept loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// How long a client may take to send its request head.
    pub header_timeout: Duration,
    /// How long in-flight requests may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Response extension: close the connection instead of sending this response.
#[derive(Debug, Clone, Copy)]
pub struct CloseWithoutResponse;

#[derive(Debug, thiserror::Error)]
#[error("connection closed without a response on the handler's request")]
struct Dropped;

/// Serves `router` on `listener` until `shutdown` completes, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(options.header_timeout)
                        .serve_connection(TokioIo::new(stream), service(router.clone()));
                    let connection = graceful.watch(connection);
                    tokio::spawn(async move {
                        if let Err(err) = connection.await {
                            tracing::debug!(error = %err, "connection ended with an error");
                        }
                    });
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(err) => {
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(options.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within the shutdown grace period");
    }
    Ok(())
}

fn service(
    router: Router,
) -> impl hyper::service::Service<Request<Incoming>, Response = Response, Error = Dropped, Future: Send> + Clone {
    hyper::service::service_fn(move |request: Request<Incoming>| {
        let router = router.clone();
        async move {
            let response = match router.oneshot(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            if response.extensions().get::<CloseWithoutResponse>().is_some() {
                return Err(Dropped);
            }
            Ok::<_, Dropped>(response)
        }
    })
}

/// Resolves on SIGTERM or SIGINT: the signals that ask a server to stop gracefully.
pub async fn termination_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
