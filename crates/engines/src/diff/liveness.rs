//! Liveness of the processes of a cluster: an application-level heartbeat.
//!
//! timely's TCP connections stay open to a process that is stopped (SIGSTOP) or cut off
//! by a partition that drops packets, and a commit then waits for it forever. So every
//! process also sends a small UDP datagram (`dynalog-hb` and its index) to every other
//! process every `timeout / 5` (at most every second), on the same port number as its
//! timely TCP port (UDP ports are a separate space), and watches what it receives: a
//! process not heard from for `timeout` marks the cluster failed, with the reason
//! `process I has not answered for T s`. A commit waiting for the workers checks the
//! failure and returns it as an error instead of waiting (see `runtime`); the engine
//! is then unusable ([`crate::Engine::failed`]).

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MAGIC: &[u8] = b"dynalog-hb";

/// The failure of a cluster, once a peer stopped answering; shared with the commit
/// loops.
#[derive(Debug, Default)]
pub(crate) struct Failure(Mutex<Option<String>>);

impl Failure {
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|f| f.clone())
    }

    fn set(&self, reason: String) {
        if let Ok(mut f) = self.0.lock()
            && f.is_none()
        {
            *f = Some(reason);
        }
    }
}

/// The heartbeat of this process: a thread that sends and watches; stops when dropped.
#[derive(Debug)]
pub(crate) struct Liveness {
    pub failure: Arc<Failure>,
    stop: Arc<AtomicBool>,
}

impl Drop for Liveness {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The address to send to for `host:port` (IPv4 preferred, as `localhost` often
/// resolves to `::1` first).
fn resolve(host: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = host
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("`{host}` has no address"))
}

impl Liveness {
    /// Start the heartbeat of process `me` among `hosts` (`host:port` per process).
    pub(crate) fn start(
        hosts: &[String],
        me: usize,
        timeout: Duration,
    ) -> Result<Liveness, String> {
        let peers: Vec<SocketAddr> = hosts.iter().map(|h| resolve(h)).collect::<Result<_, _>>()?;
        let own = peers
            .get(me)
            .copied()
            .ok_or_else(|| format!("no address for process {me}"))?;
        let bind: SocketAddr = if own.is_ipv4() {
            SocketAddr::from(([0, 0, 0, 0], own.port()))
        } else {
            SocketAddr::from(([0u16; 8], own.port()))
        };
        let socket = UdpSocket::bind(bind).map_err(|e| {
            format!(
                "cannot listen for the cluster's heartbeats on UDP port {}: {e}",
                own.port()
            )
        })?;
        let interval = (timeout / 5).clamp(Duration::from_millis(20), Duration::from_secs(1));
        socket
            .set_read_timeout(Some(interval / 2))
            .map_err(|e| format!("cannot set up the heartbeat socket: {e}"))?;
        let failure = Arc::new(Failure::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (failure.clone(), stop.clone());
        std::thread::Builder::new()
            .name("dynalog-heartbeat".into())
            .spawn(move || beat(socket, peers, me, timeout, interval, &f, &s))
            .map_err(|e| format!("cannot start the heartbeat thread: {e}"))?;
        Ok(Liveness { failure, stop })
    }
}

fn beat(
    socket: UdpSocket,
    peers: Vec<SocketAddr>,
    me: usize,
    timeout: Duration,
    interval: Duration,
    failure: &Failure,
    stop: &AtomicBool,
) {
    let mut message = MAGIC.to_vec();
    message.extend_from_slice(&(me as u32).to_le_bytes());
    let start = Instant::now();
    let mut heard: Vec<Instant> = vec![start; peers.len()];
    let mut sent: Option<Instant> = None;
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        if sent.is_none_or(|t| t.elapsed() >= interval) {
            for (i, peer) in peers.iter().enumerate() {
                if i != me {
                    // A failed send is a missing heartbeat for the peer: its watchdog
                    // decides.
                    let _ = socket.send_to(&message, peer);
                }
            }
            sent = Some(Instant::now());
        }
        if let Ok((n, _)) = socket.recv_from(&mut buf)
            && n == MAGIC.len() + 4
            && &buf[..MAGIC.len()] == MAGIC
        {
            let mut index = [0u8; 4];
            index.copy_from_slice(&buf[MAGIC.len()..n]);
            if let Some(t) = heard.get_mut(u32::from_le_bytes(index) as usize) {
                *t = Instant::now();
            }
        }
        for (i, t) in heard.iter().enumerate() {
            if i != me && t.elapsed() > timeout {
                failure.set(format!(
                    "process {i} has not answered for {} s (--peer-timeout): it is stopped, \
                     overloaded or cut off; the cluster cannot go on",
                    timeout.as_secs_f64()
                ));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_ports(n: usize) -> Vec<String> {
        let sockets: Vec<UdpSocket> = (0..n)
            .map(|_| UdpSocket::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        sockets
            .iter()
            .map(|s| s.local_addr().expect("address").to_string())
            .collect()
    }

    #[test]
    fn a_silent_peer_fails_the_cluster_and_a_live_one_does_not() {
        let hosts = free_ports(3);
        let timeout = Duration::from_millis(300);
        let a = Liveness::start(&hosts, 0, timeout).expect("starts");
        let b = Liveness::start(&hosts, 1, timeout).expect("starts");
        // Process 2 never starts: both notice, naming it; bounded wait.
        let started = Instant::now();
        while (a.failure.get().is_none() || b.failure.get().is_none())
            && started.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let reason = a.failure.get().expect("a fails");
        assert!(reason.contains("process 2 has not answered"), "{reason}");
        assert!(b.failure.get().expect("b fails").contains("process 2"));
    }

    #[test]
    fn peers_that_beat_stay_alive() {
        let hosts = free_ports(2);
        let timeout = Duration::from_secs(1);
        let a = Liveness::start(&hosts, 0, timeout).expect("starts");
        let b = Liveness::start(&hosts, 1, timeout).expect("starts");
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(a.failure.get(), None);
        assert_eq!(b.failure.get(), None);
        drop(b);
        let started = Instant::now();
        while a.failure.get().is_none() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(a.failure.get().expect("a fails").contains("process 1"));
    }
}
