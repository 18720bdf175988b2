//! The gateway started in-process with `idemgate::run::run` on `127.0.0.1:0`: the same
//! routes and worker as `idemgate serve`, stopped by its shutdown future instead of a signal.

use idemgate::{
    config,
    run::{RunOptions, run},
};
use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Setup, Signer, forwarding},
    harness::{post, unix_now},
};

const KEY: [u8; 32] = [5; 32];

#[test]
fn run_forwards_a_signed_event_and_stops_when_its_shutdown_future_completes() {
    let recorder = Destination::start(&[]);
    let signer = Signer::Standard(KEY.to_vec());
    let setup = Setup::new(&forwarding(&signer, &recorder, "", &format!("secret = {:?}", signer.config_secret())));
    let (config, _) = config::load(&setup.config(), std::env::vars()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions { public: Some(listener), ..RunOptions::default() };
    let gateway = runtime.spawn(run(config, options, async move {
        let _ = stopped.await;
    }));

    let body = br#"{"type":"t","n":1}"#;
    let headers = signer.headers("msg_in_process", body, unix_now());
    assert_eq!(post(addr, "/in/hooks", &headers, body).status(), 202);
    recorder.wait_until("the event forwarded", |r| !r.is_empty());
    let received = recorder.received();
    assert_eq!(received[0].header("webhook-id"), "msg_in_process");
    assert_eq!(received[0].body, body);

    stop.send(()).unwrap();
    runtime.block_on(gateway).unwrap().unwrap();
    assert!(std::net::TcpStream::connect(addr).is_err(), "the listener is closed after shutdown");
}
