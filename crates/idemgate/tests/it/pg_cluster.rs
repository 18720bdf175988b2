//! A throwaway PostgreSQL cluster of the test's own, in a temporary folder on a free port,
//! for tests that need a database server that goes down and comes back (the shared server
//! on 5432 is never stopped). The binaries are Debian's `/usr/lib/postgresql/*/bin` (the
//! newest) or `initdb` on `PATH`; as root they run as the `postgres` user, since `initdb`
//! refuses root. Anything that goes wrong panics: a test that needs the cluster fails.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Output},
};

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// `Some("postgres")` when the binaries must run as that user.
    user: Option<String>,
    pub port: u16,
}

impl Cluster {
    /// An initialised cluster, not started: `trust` authentication for `postgres` on
    /// 127.0.0.1 (replication connections included, initdb's default), durable commits
    /// (the defaults), its socket in its own folder.
    pub fn init() -> Self {
        Self::init_with("")
    }

    /// [`Self::init`] whose commits wait for the standby named `standby`
    /// ([`Self::standby_of`]): `synchronous_standby_names` and `synchronous_commit = on`.
    /// Until that standby is connected, nothing that writes can commit.
    pub fn primary() -> Self {
        Self::init_with("wal_level = replica\nmax_wal_senders = 4\nsynchronous_standby_names = 'standby'\n")
    }

    fn init_with(extra: &str) -> Self {
        let cluster = Self::empty();
        let data = cluster.data();
        cluster.run("initdb", &["-D", &data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
        let settings = format!(
            "listen_addresses = '127.0.0.1'\nfsync = on\nsynchronous_commit = on\nmax_connections = 50\n{extra}"
        );
        cluster.configure(&settings);
        cluster
    }

    /// A streaming standby of `primary` (started), copied with `pg_basebackup -R` and not
    /// started, on a port of its own, reporting as `standby` (its `cluster_name`), so it is
    /// the primary's synchronous standby once started. Once promoted it has no standby of
    /// its own, so its `synchronous_standby_names` is empty: commits would wait forever
    /// otherwise.
    pub fn standby_of(primary: &Self) -> Self {
        let cluster = Self::empty();
        let port = primary.port.to_string();
        let data = cluster.data();
        cluster.run(
            "pg_basebackup",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-D", &data, "-R", "-X", "stream", "--no-sync"],
        );
        cluster.configure("cluster_name = 'standby'\nsynchronous_standby_names = ''\n");
        cluster
    }

    /// A folder of its own (owned by the user that runs the binaries) and a free port.
    fn empty() -> Self {
        let bin = binaries();
        let user = is_root().then(|| "postgres".to_owned());
        let dir = tempfile::tempdir().expect("a temporary folder for the cluster");
        if let Some(user) = &user {
            let (uid, gid) = (id(user, "-u"), id(user, "-g"));
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the cluster's folder");
        }
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        Self { dir, bin, user, port }
    }

    /// Appends this cluster's port and socket folder, then `settings`, to its
    /// `postgresql.conf` (later lines win over what a copied file said).
    fn configure(&self, settings: &str) {
        let conf = Path::new(&self.data()).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("read postgresql.conf");
        text.push_str(&format!(
            "\nport = {}\nunix_socket_directories = '{}'\n{settings}",
            self.port,
            self.dir.path().display()
        ));
        std::fs::write(&conf, text).expect("write postgresql.conf");
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server and waits until it accepts connections.
    pub fn start(&self) {
        let log = self.dir.path().join("server.log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "-t", "60", "start"]);
    }

    /// Stops the server (`fast`: sessions are ended, open transactions rolled back) and
    /// waits until it is down.
    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "-t", "60", "stop"]);
    }

    /// SIGKILLs the postmaster, as a crash of the server would (its backends end when they
    /// notice it is gone, without answering), and waits until the port refuses connections.
    pub fn kill(&self) {
        let pid_file = Path::new(&self.data()).join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).expect("read postmaster.pid");
        let pid = text.lines().next().expect("a pid in postmaster.pid").trim().to_owned();
        let killed = Command::new("kill").args(["-KILL", &pid]).status().expect("run kill");
        assert!(killed.success(), "kill -KILL {pid}: {killed}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(std::time::Instant::now() < deadline, "port {} still open after SIGKILL", self.port);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Promotes a standby to a primary (`pg_ctl promote`) and waits until it takes writes.
    pub fn promote(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-w", "-t", "60", "promote"]);
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let output = self
            .command(program)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|err| panic!("cannot run {program} from {}: {err}", self.bin.display()));
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").args(["-D", &self.data(), "-m", "immediate", "stop"]).output();
    }
}

/// The folder holding `initdb`, `pg_ctl` and `pg_basebackup`.
fn binaries() -> PathBuf {
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    debian.sort_by_key(|bin| {
        bin.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok())
    });
    if let Some(newest) = debian.pop() {
        return newest;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| dir.join("initdb").is_file())
        .expect("PostgreSQL's initdb is needed (in /usr/lib/postgresql/*/bin or on PATH) for a throwaway cluster")
}

fn is_root() -> bool {
    id_of(&["-u"]) == 0
}

fn id(user: &str, which: &str) -> u32 {
    id_of(&[which, user])
}

fn id_of(args: &[&str]) -> u32 {
    let output = Command::new("id").args(args).output().expect("run id");
    assert!(output.status.success(), "id {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().parse().expect("a numeric id")
}
