//! The guarded connector (`docs/design/outbound-api.md` §3.8): an endpoint's URL is
//! untrusted, so every new connection is checked on the address it actually reached, after
//! connecting and before a byte is written. That one check covers an IP literal (which
//! hyper's connector connects to without resolving), every DNS answer (including one that
//! changed since the endpoint was created) and IPv6; a pooled connection was checked when
//! it was opened. The rule itself is core's ([`idemgate_core::outbound::address`]).

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use http::Uri;
use hyper_util::{
    client::legacy::connect::{
        HttpConnector,
        dns::{GaiResolver, Name},
    },
    rt::TokioIo,
};
use idemgate_core::outbound::address::refusal;
use ipnet::IpNet;
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Pending<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

/// A connection reached an address endpoints may not reach. It names the address's class
/// (loopback, private, link-local, …), never the URL or anything of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("address not allowed ({range})")]
pub struct AddressNotAllowed {
    /// The range the connected address is in.
    pub range: &'static str,
}

/// How endpoint host names become addresses: the system's resolver, or a fixed table
/// (for tests: a name that resolves to 127.0.0.1 without touching DNS).
#[derive(Debug, Clone)]
pub(crate) enum Resolver {
    /// `getaddrinfo` on a blocking thread (hyper-util's resolver).
    System(GaiResolver),
    /// Each name to its addresses; a name not in it does not resolve.
    Fixed(Arc<HashMap<String, Vec<IpAddr>>>),
}

/// A name the fixed table does not hold.
#[derive(Debug, thiserror::Error)]
#[error("the name does not resolve")]
struct Unresolved;

impl tower::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pending<Self::Response, BoxError>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        match self {
            Self::System(gai) => {
                let resolving = gai.call(name);
                Box::pin(async move {
                    let addresses: Vec<SocketAddr> = resolving.await?.collect();
                    Ok(addresses.into_iter())
                })
            }
            Self::Fixed(names) => {
                let found = names.get(name.as_str()).map(|addresses| {
                    addresses.iter().map(|address| SocketAddr::new(*address, 0)).collect::<Vec<_>>().into_iter()
                });
                Box::pin(async move { found.ok_or_else(|| Box::new(Unresolved) as BoxError) })
            }
        }
    }
}

/// hyper-util's connector, refusing a connection whose peer address is not allowed.
#[derive(Debug, Clone)]
pub(crate) struct GuardedConnector {
    inner: HttpConnector<Resolver>,
    allow_networks: Arc<[IpNet]>,
}

impl GuardedConnector {
    pub(crate) fn new(inner: HttpConnector<Resolver>, allow_networks: Vec<IpNet>) -> Self {
        Self { inner, allow_networks: allow_networks.into() }
    }
}

impl tower::Service<Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pending<Self::Response, BoxError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let allow_networks = Arc::clone(&self.allow_networks);
        Box::pin(async move {
            let stream = connecting.await?;
            let peer = stream.inner().peer_addr()?;
            match refusal(peer.ip(), &allow_networks) {
                None => Ok(stream),
                // Dropping the stream closes the connection before anything was written.
                Some(range) => Err(Box::new(AddressNotAllowed { range }) as BoxError),
            }
        })
    }
}
