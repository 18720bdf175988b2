//! The crash soak: concurrent senders deliver signed events to the counter example, each
//! event repeated (at once, in parallel, after a delay) and retried on every error as a
//! provider would, while the server is SIGKILLed at random moments (during commits too)
//! and restarted on the same file. Afterwards the file is read independently and the
//! promise is checked: every event ever answered 200 has exactly one receipt and one
//! effect, and every answer carried the receipt's original result.
//!
//! Short mode by default (CI); `IDEMGATE_SOAK_EVENTS` and `IDEMGATE_SOAK_MIN_KILLS` scale it.

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::Duration,
};

use crate::harness::{Counter, Delivery, event, state, temp_db};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One attempt that must not panic when the server is down: `None` for any failure.
fn try_deliver(addr: SocketAddr, body: &str) -> Option<(u16, serde_json::Value)> {
    let delivery = Delivery::signed(body.as_bytes());
    let mut request =
        format!("POST /webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in delivery.headers() {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split("\r\n\r\n").nth(1)?;
    Some((status, serde_json::from_str(body).ok()?))
}

/// Delivers until the server answers 200, as a retrying provider does; records the answer.
fn deliver_until_answered(
    addr: &RwLock<SocketAddr>,
    body: &str,
    answers: &Mutex<Vec<(String, serde_json::Value)>>,
    id: &str,
) {
    for _ in 0..2000 {
        let target = *addr.read().unwrap();
        match try_deliver(target, body) {
            Some((200, answer)) => {
                answers.lock().unwrap().push((id.to_owned(), answer));
                return;
            }
            Some((status, answer)) => assert!(status == 503, "unexpected answer {status} {answer} for {id}"),
            None => {}
        }
        thread::sleep(Duration::from_millis(5));
    }
    panic!("{id} was never answered");
}

#[test]
fn no_acknowledged_event_is_lost_or_applied_twice_across_sigkills() {
    let events = setting("IDEMGATE_SOAK_EVENTS", 1500);
    let min_kills = setting("IDEMGATE_SOAK_MIN_KILLS", 10);
    let (_dir, db) = temp_db();
    let first = Counter::start(&db);
    let addr = Arc::new(RwLock::new(first.addr));
    let server = Arc::new(Mutex::new(Some(first)));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(AtomicUsize::new(0));
    let senders_done = Arc::new(AtomicBool::new(false));
    let values: Vec<i64> = (0..events).map(|i| (i * 37 % 100 + 1) as i64).collect();

    let killer = {
        let (server, addr, done, db) = (Arc::clone(&server), Arc::clone(&addr), Arc::clone(&senders_done), db.clone());
        thread::spawn(move || {
            let mut kills = 0;
            let mut rng = fastrand::Rng::with_seed(7);
            while !done.load(Ordering::SeqCst) || kills < min_kills {
                thread::sleep(Duration::from_millis(rng.u64(20..120)));
                if let Some(running) = server.lock().unwrap().take() {
                    running.sigkill();
                }
                kills += 1;
                let restarted = Counter::start(&db);
                *addr.write().unwrap() = restarted.addr;
                *server.lock().unwrap() = Some(restarted);
            }
            kills
        })
    };

    thread::scope(|scope| {
        for sender in 0..8 {
            let (addr, answers, next, values) = (&addr, &answers, &next, &values);
            scope.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(sender);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= values.len() {
                        return;
                    }
                    let id = format!("evt-s{i}");
                    let body = event(&id, values[i]);
                    deliver_until_answered(addr, &body, answers, &id);
                    match rng.u8(0..4) {
                        0 => deliver_until_answered(addr, &body, answers, &id),
                        1 => {
                            thread::scope(|inner| {
                                inner.spawn(|| deliver_until_answered(addr, &body, answers, &id));
                                deliver_until_answered(addr, &body, answers, &id);
                            });
                        }
                        2 => {
                            thread::sleep(Duration::from_millis(rng.u64(10..60)));
                            deliver_until_answered(addr, &body, answers, &id);
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    senders_done.store(true, Ordering::SeqCst);
    let kills = killer.join().unwrap();
    if let Some(running) = server.lock().unwrap().take() {
        assert!(running.sigterm().success());
    }

    let stored = state(&db);
    let answers = answers.lock().unwrap();
    let mut applied_answers: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, answer) in answers.iter() {
        let receipt = stored.receipts.get(id).unwrap_or_else(|| panic!("{id} was answered 200 but has no receipt"));
        assert_eq!(answer["result"], *receipt, "{id}: an answer did not carry the original result");
        if answer["status"] == "applied" {
            *applied_answers.entry(id.as_str()).or_default() += 1;
        }
    }
    assert!(applied_answers.values().all(|&n| n == 1), "an event was answered applied twice");
    assert_eq!(stored.receipts.len(), events, "every event has its receipt");
    // Each receipt's result is the total right after its increment: sorted, consecutive
    // results differ by exactly that event's value, so every effect happened once.
    let mut by_result: Vec<(i64, &String)> = stored.receipts.iter().map(|(id, result)| (*result, id)).collect();
    by_result.sort();
    let mut total = 0;
    for (result, id) in &by_result {
        let index: usize = id.trim_start_matches("evt-s").parse().unwrap();
        total += values[index];
        assert_eq!(*result, total, "{id}: its increment was not applied exactly once");
    }
    assert_eq!(stored.total, total);
    assert!(kills >= min_kills, "only {kills} kills");
    eprintln!("crash soak: {events} events, {} answers, {kills} SIGKILLs, zero violations", answers.len());
}
