//! Safe handles over the GSSAPI calls: credentials from a keytab or the ticket cache, an
//! acceptor's and an initiator's security context, and wrap/unwrap once one is made.
//! Every handle frees what the library allocated for it when dropped.

use std::ffi::{c_void, CString};
use std::ptr;

use crate::ffi::{self, GssBufferDesc, GssOidDesc, OmUint32};

/// A failed GSSAPI call, with the library's own words for both status codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {message}")]
pub struct GssError {
    pub call: &'static str,
    pub major: u32,
    pub minor: u32,
    pub message: String,
}

impl GssError {
    fn unavailable(message: String) -> GssError {
        GssError {
            call: "dlopen",
            major: 0,
            minor: 0,
            message,
        }
    }
}

type Result<T> = std::result::Result<T, GssError>;

fn lib() -> Result<&'static ffi::Gss> {
    ffi::gss().map_err(GssError::unavailable)
}

/// Whether the system's GSSAPI library can be loaded here.
pub fn available() -> std::result::Result<(), String> {
    ffi::gss().map(|_| ())
}

fn oid(bytes: &'static [u8]) -> GssOidDesc {
    GssOidDesc {
        length: bytes.len() as OmUint32,
        elements: bytes.as_ptr() as *mut c_void,
    }
}

fn borrowed(bytes: &[u8]) -> GssBufferDesc {
    GssBufferDesc {
        length: bytes.len(),
        value: bytes.as_ptr() as *mut c_void,
    }
}

fn empty() -> GssBufferDesc {
    GssBufferDesc {
        length: 0,
        value: ptr::null_mut(),
    }
}

/// Copies a buffer the library allocated and frees it.
fn take(g: &ffi::Gss, mut buf: GssBufferDesc) -> Vec<u8> {
    let out = if buf.value.is_null() || buf.length == 0 {
        Vec::new()
    } else {
        // SAFETY: the library handed us `length` readable bytes at `value`.
        unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length).to_vec() }
    };
    let mut minor = 0;
    // SAFETY: `buf` was allocated by the library (or is empty, which it accepts).
    unsafe { (g.release_buffer)(&mut minor, &mut buf) };
    out
}

/// The library's text for one kind of status code (all of its messages, joined).
fn status_text(g: &ffi::Gss, code: u32, kind: std::ffi::c_int) -> String {
    let mut parts = Vec::new();
    let mut context: OmUint32 = 0;
    let mut mech = oid(ffi::MECH_KRB5);
    loop {
        let mut minor = 0;
        let mut text = empty();
        // SAFETY: out-parameters are ours; `text` is freed by `take`.
        let major = unsafe {
            (g.display_status)(&mut minor, code, kind, &mut mech, &mut context, &mut text)
        };
        if major & ffi::GSS_ERROR_MASK != 0 {
            break;
        }
        parts.push(String::from_utf8_lossy(&take(g, text)).into_owned());
        if context == 0 || parts.len() > 8 {
            break;
        }
    }
    parts.join("; ")
}

/// What a supplementary status says about a token's place in the sequence, if anything.
fn out_of_sequence(major: u32) -> Option<&'static str> {
    [
        (ffi::GSS_S_DUPLICATE_TOKEN, "Duplicate token"),
        (ffi::GSS_S_OLD_TOKEN, "Old token"),
        (ffi::GSS_S_UNSEQ_TOKEN, "Token not in sequence"),
        (ffi::GSS_S_GAP_TOKEN, "Gap token"),
    ]
    .into_iter()
    .find(|(bit, _)| major & bit != 0)
    .map(|(_, what)| what)
}

fn check(g: &ffi::Gss, call: &'static str, major: u32, minor: u32) -> Result<()> {
    if major & ffi::GSS_ERROR_MASK == 0 {
        return Ok(());
    }
    let mut message = status_text(g, major, ffi::GSS_C_GSS_CODE);
    if minor != 0 {
        let mech = status_text(g, minor, ffi::GSS_C_MECH_CODE);
        if !mech.is_empty() {
            message = format!("{message} ({mech})");
        }
    }
    Err(GssError {
        call,
        major,
        minor,
        message,
    })
}

/// A name: a service principal to accept as, or a target to reach.
struct Name {
    raw: ffi::GssName,
}

impl Name {
    fn import(text: &str, kind: &'static [u8]) -> Result<Name> {
        let g = lib()?;
        let mut minor = 0;
        let mut raw = ptr::null_mut();
        let mut buf = borrowed(text.as_bytes());
        let mut kind = oid(kind);
        // SAFETY: the buffer and OID outlive the call; `raw` is released on drop.
        let major = unsafe { (g.import_name)(&mut minor, &mut buf, &mut kind, &mut raw) };
        check(g, "gss_import_name", major, minor)?;
        Ok(Name { raw })
    }

    fn display(raw: ffi::GssName) -> Result<String> {
        let g = lib()?;
        let mut minor = 0;
        let mut out = empty();
        // SAFETY: `raw` is a live name; `out` is freed by `take`.
        let major = unsafe { (g.display_name)(&mut minor, raw, &mut out, ptr::null_mut()) };
        check(g, "gss_display_name", major, minor)?;
        Ok(String::from_utf8_lossy(&take(g, out)).into_owned())
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        if let Ok(g) = lib() {
            let mut minor = 0;
            // SAFETY: a name the library made, released once.
            unsafe { (g.release_name)(&mut minor, &mut self.raw) };
        }
    }
}

/// Credentials: a service's keys from a keytab (to accept), or a user's tickets from a
/// ticket cache or a keytab (to initiate).
pub struct Credential {
    raw: ffi::GssCred,
}

// SAFETY: MIT's credential handles may be used from any thread; each context that
// borrows one is used by one thread at a time.
unsafe impl Send for Credential {}
unsafe impl Sync for Credential {}

impl Credential {
    /// A service's credential, `principal` (as `nn/host@REALM`) from `keytab`.
    pub fn acceptor(principal: &str, keytab: &str) -> Result<Credential> {
        Self::acquire(
            Some(principal),
            &[("keytab", keytab)],
            ffi::GSS_C_ACCEPT,
            "gss_acquire_cred_from (acceptor)",
        )
    }

    /// A user's credential: `principal`'s keys in `keytab` (tickets are got as needed).
    pub fn initiator_keytab(principal: &str, keytab: &str) -> Result<Credential> {
        // Tickets go to a cache in memory, never to the user's default cache file.
        let cache = format!("MEMORY:ferrite-{principal}");
        Self::acquire(
            Some(principal),
            &[("client_keytab", keytab), ("ccache", &cache)],
            ffi::GSS_C_INITIATE,
            "gss_acquire_cred_from (keytab)",
        )
    }

    /// The default ticket cache's principal (`kinit`, `KRB5CCNAME`).
    pub fn initiator_cache() -> Result<Credential> {
        Self::acquire(
            None,
            &[],
            ffi::GSS_C_INITIATE,
            "gss_acquire_cred (ticket cache)",
        )
    }

    fn acquire(
        principal: Option<&str>,
        store: &[(&str, &str)],
        usage: std::ffi::c_int,
        call: &'static str,
    ) -> Result<Credential> {
        let g = lib()?;
        let name = principal
            .map(|p| Name::import(p, ffi::NT_KRB5_PRINCIPAL))
            .transpose()?;
        let texts: Vec<(CString, CString)> = store
            .iter()
            .map(|(k, v)| {
                let bad = |_| GssError::unavailable(format!("a NUL byte in {k}"));
                Ok((
                    CString::new(*k).map_err(bad)?,
                    CString::new(*v).map_err(bad)?,
                ))
            })
            .collect::<Result<_>>()?;
        let elements: Vec<ffi::KeyValueElement> = texts
            .iter()
            .map(|(k, v)| ffi::KeyValueElement {
                key: k.as_ptr(),
                value: v.as_ptr(),
            })
            .collect();
        let set = ffi::KeyValueSet {
            count: elements.len() as OmUint32,
            elements: elements.as_ptr(),
        };
        let mut minor = 0;
        let mut raw = ptr::null_mut();
        // SAFETY: every pointer passed lives until the call returns; `raw` is released on
        // drop.
        let major = unsafe {
            (g.acquire_cred_from)(
                &mut minor,
                name.as_ref().map_or(ptr::null_mut(), |n| n.raw),
                0,
                ptr::null_mut(),
                usage,
                if store.is_empty() { ptr::null() } else { &set },
                &mut raw,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check(g, call, major, minor)?;
        Ok(Credential { raw })
    }
}

impl Drop for Credential {
    fn drop(&mut self) {
        if let Ok(g) = lib() {
            let mut minor = 0;
            // SAFETY: a credential the library made, released once.
            unsafe { (g.release_cred)(&mut minor, &mut self.raw) };
        }
    }
}

/// One side's security context, being made or made.
pub struct Context {
    raw: ffi::GssCtx,
    established: bool,
}

// SAFETY: a context is used by one connection's task at a time.
unsafe impl Send for Context {}

/// What one step of context set-up gave: a token for the peer (possibly empty), and
/// whether the context is now made.
pub struct Step {
    pub token: Vec<u8>,
    pub established: bool,
}

impl Context {
    fn new() -> Context {
        Context {
            raw: ptr::null_mut(),
            established: false,
        }
    }

    /// An acceptor's context, to be stepped with the initiator's tokens.
    pub fn acceptor() -> Context {
        Context::new()
    }

    /// An initiator's context, to be stepped with the acceptor's tokens.
    pub fn initiator() -> Context {
        Context::new()
    }

    /// Takes the initiator's `token` as acceptor `cred`.
    pub fn accept(&mut self, cred: &Credential, token: &[u8]) -> Result<Step> {
        let g = lib()?;
        let mut minor = 0;
        let mut input = borrowed(token);
        let mut out = empty();
        // SAFETY: `self.raw` is null or a context the library made for us; the input
        // outlives the call; `out` is freed by `take`.
        let major = unsafe {
            (g.accept_sec_context)(
                &mut minor,
                &mut self.raw,
                cred.raw,
                &mut input,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut out,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let token = take(g, out);
        check(g, "gss_accept_sec_context", major, minor)?;
        self.established = major & ffi::GSS_S_CONTINUE_NEEDED == 0;
        Ok(Step {
            token,
            established: self.established,
        })
    }

    /// Makes (or continues) the initiator's side towards `target` (`service@host`), with
    /// the acceptor's last `token` (none at the start).
    pub fn initiate(
        &mut self,
        cred: &Credential,
        target: &str,
        token: Option<&[u8]>,
    ) -> Result<Step> {
        let g = lib()?;
        let name = Name::import(target, ffi::NT_HOSTBASED_SERVICE)?;
        let mut mech = oid(ffi::MECH_KRB5);
        let mut input = token.map(borrowed);
        let mut out = empty();
        let mut minor = 0;
        let flags = ffi::GSS_C_MUTUAL_FLAG
            | ffi::GSS_C_REPLAY_FLAG
            | ffi::GSS_C_SEQUENCE_FLAG
            | ffi::GSS_C_CONF_FLAG
            | ffi::GSS_C_INTEG_FLAG;
        // SAFETY: as for `accept`.
        let major = unsafe {
            (g.init_sec_context)(
                &mut minor,
                cred.raw,
                &mut self.raw,
                name.raw,
                &mut mech,
                flags,
                0,
                ptr::null_mut(),
                input.as_mut().map_or(ptr::null_mut(), |b| b as *mut _),
                ptr::null_mut(),
                &mut out,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let token = take(g, out);
        check(g, "gss_init_sec_context", major, minor)?;
        self.established = major & ffi::GSS_S_CONTINUE_NEEDED == 0;
        Ok(Step {
            token,
            established: self.established,
        })
    }

    /// The initiator's principal, as `user@REALM` (an acceptor's question, once made).
    pub fn peer(&self) -> Result<String> {
        let g = lib()?;
        let mut minor = 0;
        let mut src = ptr::null_mut();
        // SAFETY: a made context; the name it returns is released by `Name`'s drop.
        let major = unsafe {
            (g.inquire_context)(
                &mut minor,
                self.raw,
                &mut src,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check(g, "gss_inquire_context", major, minor)?;
        let name = Name { raw: src };
        Name::display(name.raw)
    }

    /// Seals `msg` for the peer: signed, and encrypted when `confidential`.
    pub fn wrap(&mut self, confidential: bool, msg: &[u8]) -> Result<Vec<u8>> {
        let g = lib()?;
        let mut minor = 0;
        let mut input = borrowed(msg);
        let mut out = empty();
        // SAFETY: a made context; `out` is freed by `take`.
        let major = unsafe {
            (g.wrap)(
                &mut minor,
                self.raw,
                confidential as std::ffi::c_int,
                0,
                &mut input,
                ptr::null_mut(),
                &mut out,
            )
        };
        let sealed = take(g, out);
        check(g, "gss_wrap", major, minor)?;
        Ok(sealed)
    }

    /// Opens what the peer sealed; a forged, altered or replayed token is an error.
    pub fn unwrap(&mut self, sealed: &[u8]) -> Result<Vec<u8>> {
        let g = lib()?;
        let mut minor = 0;
        let mut input = borrowed(sealed);
        let mut out = empty();
        // SAFETY: a made context; `out` is freed by `take`.
        let major = unsafe {
            (g.unwrap)(
                &mut minor,
                self.raw,
                &mut input,
                &mut out,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let msg = take(g, out);
        check(g, "gss_unwrap", major, minor)?;
        // A token seen before, too old, or out of order is only "supplementary" news to
        // GSSAPI; SASL (as Java's) refuses it, so a captured message cannot be replayed.
        if let Some(what) = out_of_sequence(major) {
            return Err(GssError {
                call: "gss_unwrap",
                major,
                minor,
                message: what.to_string(),
            });
        }
        Ok(msg)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        if let Ok(g) = lib() {
            let mut minor = 0;
            // SAFETY: a context the library made, deleted once.
            unsafe { (g.delete_sec_context)(&mut minor, &mut self.raw, ptr::null_mut()) };
        }
    }
}
