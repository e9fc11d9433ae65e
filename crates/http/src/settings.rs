//! The HTTP port's own keys, shared by NameNodes and DataNodes as Hadoop's `HttpServer2`
//! shares them: how long a connection may sit idle, and how many connections the kernel
//! may hold waiting for `accept`.

use std::io;
use std::time::Duration;

use tokio::net::{lookup_host, TcpListener, TcpSocket, ToSocketAddrs};

/// Settings of one HTTP port, from Hadoop's `hadoop.http.*` keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// How long a connection may sit without sending a whole request head
    /// (`hadoop.http.idle_timeout.ms`, 60 s by default). Without it an idle or trickling
    /// client held its connection, and a descriptor, for ever.
    pub idle_timeout: Duration,
    /// The listen backlog (`hadoop.http.socket.backlog.size`, 500 as in current Hadoop).
    /// A burst of connects beyond it has its SYNs dropped and waits a second or more for a
    /// retransmission, which under load made a burst slower than the idle timeout.
    pub backlog: u32,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            idle_timeout: Duration::from_secs(60),
            backlog: 500,
        }
    }
}

impl HttpSettings {
    /// Applies one key: `Ok(false)` when the key is not an HTTP one, `Err` with what the
    /// value should be when it is malformed.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, &'static str> {
        let number = || value.trim().parse::<u64>().map_err(|_| "a number");
        match key {
            "hadoop.http.idle_timeout.ms" => {
                self.idle_timeout = Duration::from_millis(number()?.max(1))
            }
            "hadoop.http.socket.backlog.size" => {
                self.backlog =
                    u32::try_from(number()?.max(1)).map_err(|_| "a backlog below 2^32")?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Binds `addr` (its first resolved address) with this backlog.
    pub async fn bind(&self, addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let addr = lookup_host(addr)
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::AddrNotAvailable, "no address to bind"))?;
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        // As `TcpListener::bind` does: a restarted server rebinds a port whose old
        // connections linger in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(self.backlog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_and_bad_values_refused() {
        let mut s = HttpSettings::default();
        assert_eq!(s.set("hadoop.http.idle_timeout.ms", "1500"), Ok(true));
        assert_eq!(s.idle_timeout, Duration::from_millis(1500));
        assert_eq!(s.set("hadoop.http.socket.backlog.size", "64"), Ok(true));
        assert_eq!(s.backlog, 64);
        assert_eq!(
            s.set("hadoop.http.idle_timeout.ms", "soon"),
            Err("a number")
        );
        assert_eq!(s.set("dfs.replication", "3"), Ok(false));
    }

    #[tokio::test]
    async fn binds_and_accepts() {
        let settings = HttpSettings {
            backlog: 7,
            ..HttpSettings::default()
        };
        let l = settings.bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (_, peer) = l.accept().await.unwrap();
        assert!(peer.ip().is_loopback());
    }
}
