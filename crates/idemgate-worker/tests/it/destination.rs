//! A destination server on 127.0.0.1 that follows a script of behaviours and records
//! every request it gets.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
};
use idemgate_http::{CloseWithoutResponse, ServeOptions, serve};

/// What the destination does with one request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    Status(u16),
    StatusRetryAfter(u16, u64),
    Sleep(Duration),
    Close,
}

#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Behaviour>>,
    otherwise: Mutex<Option<Behaviour>>,
    received: Mutex<Vec<Received>>,
}

/// The running destination; stops with the test's runtime.
#[derive(Clone)]
pub struct Destination {
    shared: Arc<Shared>,
    pub addr: SocketAddr,
}

impl Destination {
    /// Answers by `script` in order, then `otherwise` (200 if not set).
    pub async fn start(script: Vec<Behaviour>) -> Self {
        let shared = Arc::new(Shared { script: Mutex::new(script.into()), ..Shared::default() });
        let router = Router::new().route("/hook", post(hook)).with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, router, ServeOptions::default(), std::future::pending()));
        Self { shared, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn otherwise(&self, behaviour: Behaviour) {
        *self.shared.otherwise.lock().unwrap() = Some(behaviour);
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

async fn hook(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    shared.received.lock().unwrap().push(Received { headers, body });
    let next = shared.script.lock().unwrap().pop_front();
    let behaviour = next.or_else(|| shared.otherwise.lock().unwrap().clone()).unwrap_or(Behaviour::Status(200));
    match behaviour {
        Behaviour::Status(status) => (StatusCode::from_u16(status).unwrap(), "answer body").into_response(),
        Behaviour::StatusRetryAfter(status, secs) => {
            (StatusCode::from_u16(status).unwrap(), [("retry-after", secs.to_string())], "slow down").into_response()
        }
        Behaviour::Sleep(duration) => {
            tokio::time::sleep(duration).await;
            StatusCode::OK.into_response()
        }
        Behaviour::Close => {
            let mut response = StatusCode::OK.into_response();
            response.extensions_mut().insert(CloseWithoutResponse);
            response
        }
    }
}
