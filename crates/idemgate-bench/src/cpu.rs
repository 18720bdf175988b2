//! The server's CPU time, read from `/proc/<pid>/stat` before and after a run. CPU time per
//! request drifts far less than throughput on a shared machine, so benchmarks compare by it.

use std::{collections::BTreeMap, time::Duration};

/// Why a `/proc/<pid>/stat` line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatError {
    /// No `(comm)` field, or nothing after it.
    #[error("no command field in the stat line")]
    NoComm,
    /// Fewer fields than `utime` and `stime` need.
    #[error("the stat line has too few fields")]
    TooShort,
    /// `utime` or `stime` is not a number.
    #[error("utime or stime is not a number")]
    NotANumber,
}

/// User and system time of a process, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticks {
    /// `utime`, field 14.
    pub user: u64,
    /// `stime`, field 15.
    pub system: u64,
}

impl Ticks {
    /// User plus system time, with `per_second` ticks per second.
    #[must_use]
    pub fn total(self, per_second: u64) -> Duration {
        let ticks = self.user.saturating_add(self.system);
        Duration::from_secs_f64(ticks as f64 / per_second.max(1) as f64)
    }
}

/// Parses `utime` and `stime` from one `/proc/<pid>/stat` line.
///
/// The command name (field 2) is in parentheses and may itself hold spaces and
/// parentheses, so the fields after it are counted from the *last* `)`.
///
/// ```
/// # use idemgate_bench::cpu::{parse_stat, Ticks};
/// let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 1 0 5 0 0";
/// assert_eq!(parse_stat(line), Ok(Ticks { user: 250, system: 31 }));
/// ```
pub fn parse_stat(line: &str) -> Result<Ticks, StatError> {
    let (_, after) = line.rsplit_once(')').ok_or(StatError::NoComm)?;
    // After the command come field 3 (state) onwards; utime is field 14, stime field 15.
    let mut fields = after.split_ascii_whitespace().skip(14 - 3);
    let mut next = || fields.next().ok_or(StatError::TooShort)?.parse::<u64>().map_err(|_| StatError::NotANumber);
    let user = next()?;
    let system = next()?;
    Ok(Ticks { user, system })
}

/// The CPU time `pid` has used so far (user + system).
pub fn used(pid: u32) -> std::io::Result<Duration> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let ticks = parse_stat(&line).map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
    Ok(ticks.total(rustix::param::clock_ticks_per_second()))
}

/// The CPU time `pids` have used so far, summed; `None` when there are none or one cannot
/// be read (it exited).
#[must_use]
pub fn used_by_all(pids: &[u32]) -> Option<Duration> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&pid| used(pid).ok()).sum()
}

/// The CPU time each thread of `pids` has used so far, by thread id: its name (the
/// `comm` field, which Linux cuts at 15 bytes) and its time. A thread that ends between two
/// readings drops out of the second one, so differences of these undercount where the
/// process total ([`used_by_all`]) does not.
#[must_use]
pub fn used_by_thread(pids: &[u32]) -> BTreeMap<u32, (String, Duration)> {
    let per_second = rustix::param::clock_ticks_per_second();
    let mut threads = BTreeMap::new();
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
            let Ok(line) = std::fs::read_to_string(task.path().join("stat")) else { continue };
            let (Ok(ticks), Some(name)) = (parse_stat(&line), comm(&line)) else { continue };
            threads.insert(tid, (name.to_owned(), ticks.total(per_second)));
        }
    }
    threads
}

/// The time each thread name used between two [`used_by_thread`] readings, summed over
/// the threads of that name (a runtime's workers share one).
#[must_use]
pub fn by_name(
    before: &BTreeMap<u32, (String, Duration)>,
    after: &BTreeMap<u32, (String, Duration)>,
) -> BTreeMap<String, Duration> {
    let mut names: BTreeMap<String, Duration> = BTreeMap::new();
    for (tid, (name, used)) in after {
        let earlier = before.get(tid).map_or(Duration::ZERO, |(_, used)| *used);
        *names.entry(name.clone()).or_default() += used.saturating_sub(earlier);
    }
    names
}

/// The command field of a stat line: what lies between the first `(` and the last `)`.
fn comm(line: &str) -> Option<&str> {
    let start = line.find('(')? + 1;
    let end = line.rfind(')')?;
    line.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line() {
        let line = "1234 (counter) S 1 1234 1234 0 -1 4194560 2000 0 3 0 1500 420 0 0 20 0 5 0 99 0 0\n";
        assert_eq!(parse_stat(line), Ok(Ticks { user: 1500, system: 420 }));
    }

    #[test]
    fn a_command_with_spaces_and_parentheses() {
        let line = "77 (my) (odd name) R 1 77 77 0 -1 0 0 0 0 0 9 8 0 0 20 0 1 0 1 0 0";
        assert_eq!(parse_stat(line), Ok(Ticks { user: 9, system: 8 }));
        let line = "77 ())) R 1 77 77 0 -1 0 0 0 0 0 12 3 0 0 20 0 1 0 1 0 0";
        assert_eq!(parse_stat(line), Ok(Ticks { user: 12, system: 3 }));
    }

    #[test]
    fn broken_lines_are_refused() {
        assert_eq!(parse_stat("1 counter S 1 2 3"), Err(StatError::NoComm));
        assert_eq!(parse_stat("1 (counter) S 1 2 3 4 5 6 7 8 9 10"), Err(StatError::TooShort));
        assert_eq!(parse_stat("1 (c) S 1 1 1 0 -1 0 0 0 0 0 x 8 0"), Err(StatError::NotANumber));
    }

    #[test]
    fn threads_are_summed_by_name() {
        let ms = Duration::from_millis;
        let before = BTreeMap::from([(1, ("worker".to_owned(), ms(10))), (2, ("worker".to_owned(), ms(5)))]);
        let after = BTreeMap::from([
            (1, ("worker".to_owned(), ms(30))),
            (2, ("worker".to_owned(), ms(6))),
            (3, ("writer".to_owned(), ms(4))),
        ]);
        assert_eq!(
            by_name(&before, &after),
            BTreeMap::from([("worker".to_owned(), ms(21)), ("writer".to_owned(), ms(4))])
        );
        assert_eq!(comm("77 (my) (odd name) R 1"), Some("my) (odd name"));
    }

    #[test]
    fn this_process_threads_are_listed() {
        let threads = used_by_thread(&[std::process::id()]);
        assert!(!threads.is_empty());
        assert!(threads.contains_key(&std::process::id()), "the main thread is one of them");
    }

    #[test]
    fn ticks_add_up_to_a_duration() {
        assert_eq!(Ticks { user: 150, system: 50 }.total(100), Duration::from_secs(2));
    }

    #[test]
    fn this_process_stat_file_parses() {
        assert!(used(std::process::id()).is_ok());
        assert!(used_by_all(&[std::process::id(), std::process::id()]).is_some());
        assert_eq!(used_by_all(&[]), None);
    }
}
