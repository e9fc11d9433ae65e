//! Host names as Hadoop's Java code takes them: the machine's canonical name (a
//! DataNode's registered name, a server principal's `_HOST`), and an address's reverse
//! lookup.

/// The machine's name as HDFS's DataNode takes it (Java's `getLocalHost()` then
/// `getCanonicalHostName()`): the host name resolved to an IPv4 address and that address
/// looked up again, so a host whose name maps to 127.0.0.1 registers as `localhost` on both.
/// The address itself when it has no name; the bare host name when that does not resolve.
pub fn machine_host_name() -> String {
    use std::net::{IpAddr, ToSocketAddrs};
    let own = own_host_name().unwrap_or_else(|| "localhost".into());
    let Some(ip) = (own.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()))
        .map(|a| a.ip())
    else {
        return own;
    };
    let IpAddr::V4(v4) = ip else { return own };
    name_of(v4).unwrap_or_else(|| v4.to_string())
}

/// `gethostname`.
fn own_host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed with it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(&buf[..len]).ok()?;
    (rc == 0 && !name.is_empty()).then(|| name.to_string())
}

/// The name an address's reverse lookup gives (`getnameinfo`), if it has one.
pub fn name_of(ip: std::net::Ipv4Addr) -> Option<String> {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip.octets()),
        },
        sin_zero: [0; 8],
    };
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: `sin` is a valid sockaddr_in of the size passed; `host` is writable for the
    // length passed and getnameinfo NUL-terminates what it writes there on success.
    let rc = unsafe {
        libc::getnameinfo(
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: NUL-terminated by getnameinfo, within `host`.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
    name.to_str().ok().map(str::to_string)
}

/// The name a server bound to `ip` goes by, as Hadoop takes it for a principal's `_HOST`
/// (`InetSocketAddress.getHostName()` of the RPC address): the machine's name for the
/// wildcard address, else the address's reverse lookup (the address itself without one).
pub fn server_host_name(ip: std::net::IpAddr) -> String {
    let name = match ip {
        ip if ip.is_unspecified() => machine_host_name(),
        std::net::IpAddr::V4(v4) => name_of(v4).unwrap_or_else(|| v4.to_string()),
        std::net::IpAddr::V6(v6) => v6.to_string(),
    };
    name.to_lowercase()
}
