//! The accept loop: HTTP/1.1 with keep-alive, a header timeout, optional TLS, and graceful
//! shutdown (stop accepting, let in-flight requests finish, close idle connections).
//!
//! Every request carries a [`Peer`] extension: the address it came from and whether TLS
//! was terminated here, for handlers that must say so (proxy mode's forwarding headers).
//!
//! It also honours [`CloseWithoutResponse`]: a handler can ask for its connection to be
//! closed without any answer, which is how tests reproduce "the response was lost after
//! the commit". hyper closes a connection without writing when its service fails, so the
//! marker is turned into a service error here.

use std::{future::Future, io, net::SocketAddr, time::Duration};

use axum::{Router, body::Body, response::Response};
use http::Request;
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::{GracefulShutdown, Watcher},
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpListener, TcpStream},
};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// Limits and transport of the accept loop.
#[derive(Clone)]
pub struct ServeOptions {
    /// How long a client may take to send its request head (and, with TLS, to finish the
    /// handshake).
    pub header_timeout: Duration,
    /// How long in-flight requests may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
    /// Terminate TLS with this acceptor; plain HTTP when `None`.
    pub tls: Option<TlsAcceptor>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { header_timeout: Duration::from_secs(30), shutdown_grace: Duration::from_secs(30), tls: None }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("header_timeout", &self.header_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Request extension: the connection a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The client's address as the socket sees it (a proxy in front is the client).
    pub addr: SocketAddr,
    /// Whether the connection is TLS terminated by this server.
    pub tls: bool,
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
                Ok((stream, addr)) => {
                    tokio::spawn(connection(stream, addr, router.clone(), options.clone(), graceful.watcher()));
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
    if tokio::time::timeout(options.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!("in-flight requests did not finish within the shutdown grace period");
    }
    Ok(())
}

/// One accepted connection: the TLS handshake if configured, then HTTP/1.1.
async fn connection(stream: TcpStream, addr: SocketAddr, router: Router, options: ServeOptions, watcher: Watcher) {
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = &options.tls else {
        return http1(stream, Peer { addr, tls: false }, router, &options, watcher).await;
    };
    match tokio::time::timeout(options.header_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => http1(tls, Peer { addr, tls: true }, router, &options, watcher).await,
        Ok(Err(err)) => tracing::debug!(error = %err, "tls handshake failed"),
        Err(_) => tracing::debug!("tls handshake timed out"),
    }
}

async fn http1<S>(stream: S, peer: Peer, router: Router, options: &ServeOptions, watcher: Watcher)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .serve_connection(TokioIo::new(stream), service(router, peer));
    if let Err(err) = watcher.watch(connection).await {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}

fn service(
    router: Router,
    peer: Peer,
) -> impl hyper::service::Service<Request<Incoming>, Response = Response, Error = Dropped, Future: Send> + Clone {
    hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let router = router.clone();
        request.extensions_mut().insert(peer);
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

/// Resolves on SIGTERM or SIGINT, the signals that ask a server to stop gracefully, and
/// logs which one came (at INFO, so an operator sees why the process stopped).
///
/// The handlers are installed when this is called, not when the future is first polled:
/// call it before announcing that the server is up, so a signal sent right after the
/// announcement stops it gracefully instead of killing it by the default action.
/// Call it inside the tokio runtime.
pub fn termination_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            tracing::error!("cannot install signal handlers; stop with SIGKILL");
            return std::future::pending().await;
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "{name} received; stopping");
    }
}
