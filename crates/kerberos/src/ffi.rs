//! The few GSSAPI calls Ferrite makes, found in the system's MIT library at run time.
//!
//! Loaded with `dlopen` rather than linked: a build then needs neither the krb5 headers
//! nor libclang (which a bindgen-made binding needs), so `cargo run` works on a machine
//! without them, and only a server or client that is asked to use Kerberos needs
//! `libgssapi_krb5.so.2` (Debian's `libgssapi-krb5-2`, installed almost everywhere). The
//! declarations follow RFC 2744's C binding as MIT's `gssapi.h` spells it.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

pub(crate) type OmUint32 = u32;
pub(crate) type GssName = *mut c_void;
pub(crate) type GssCtx = *mut c_void;
pub(crate) type GssCred = *mut c_void;

#[repr(C)]
pub(crate) struct GssBufferDesc {
    pub length: usize,
    pub value: *mut c_void,
}

#[repr(C)]
pub(crate) struct GssOidDesc {
    pub length: OmUint32,
    pub elements: *mut c_void,
}

#[repr(C)]
pub(crate) struct KeyValueElement {
    pub key: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
pub(crate) struct KeyValueSet {
    pub count: OmUint32,
    pub elements: *const KeyValueElement,
}

pub(crate) const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;
pub(crate) const GSS_S_DUPLICATE_TOKEN: OmUint32 = 1 << 1;
pub(crate) const GSS_S_OLD_TOKEN: OmUint32 = 1 << 2;
pub(crate) const GSS_S_UNSEQ_TOKEN: OmUint32 = 1 << 3;
pub(crate) const GSS_S_GAP_TOKEN: OmUint32 = 1 << 4;
/// The calling and routine error fields of a major status; the rest are informational.
pub(crate) const GSS_ERROR_MASK: OmUint32 = 0xffff_0000;
pub(crate) const GSS_C_GSS_CODE: c_int = 1;
pub(crate) const GSS_C_MECH_CODE: c_int = 2;
pub(crate) const GSS_C_INITIATE: c_int = 1;
pub(crate) const GSS_C_ACCEPT: c_int = 2;
pub(crate) const GSS_C_MUTUAL_FLAG: OmUint32 = 2;
pub(crate) const GSS_C_REPLAY_FLAG: OmUint32 = 4;
pub(crate) const GSS_C_SEQUENCE_FLAG: OmUint32 = 8;
pub(crate) const GSS_C_CONF_FLAG: OmUint32 = 16;
pub(crate) const GSS_C_INTEG_FLAG: OmUint32 = 32;

/// `GSS_C_NT_HOSTBASED_SERVICE`, 1.2.840.113554.1.2.1.4 ("service@host").
pub(crate) const NT_HOSTBASED_SERVICE: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04";
/// `GSS_KRB5_NT_PRINCIPAL_NAME`, 1.2.840.113554.1.2.2.1 ("service/host@REALM").
pub(crate) const NT_KRB5_PRINCIPAL: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01";
/// The Kerberos 5 mechanism, 1.2.840.113554.1.2.2.
pub(crate) const MECH_KRB5: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";

type ImportName = unsafe extern "C" fn(
    *mut OmUint32,
    *mut GssBufferDesc,
    *mut GssOidDesc,
    *mut GssName,
) -> OmUint32;
type AcquireCredFrom = unsafe extern "C" fn(
    *mut OmUint32,
    GssName,
    OmUint32,
    *mut c_void,
    c_int,
    *const KeyValueSet,
    *mut GssCred,
    *mut c_void,
    *mut OmUint32,
) -> OmUint32;
type AcceptSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    *mut GssCtx,
    GssCred,
    *mut GssBufferDesc,
    *mut c_void,
    *mut GssName,
    *mut *mut GssOidDesc,
    *mut GssBufferDesc,
    *mut OmUint32,
    *mut OmUint32,
    *mut GssCred,
) -> OmUint32;
type InitSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    GssCred,
    *mut GssCtx,
    GssName,
    *mut GssOidDesc,
    OmUint32,
    OmUint32,
    *mut c_void,
    *mut GssBufferDesc,
    *mut *mut GssOidDesc,
    *mut GssBufferDesc,
    *mut OmUint32,
    *mut OmUint32,
) -> OmUint32;
type Wrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    c_int,
    OmUint32,
    *mut GssBufferDesc,
    *mut c_int,
    *mut GssBufferDesc,
) -> OmUint32;
type Unwrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut GssBufferDesc,
    *mut GssBufferDesc,
    *mut c_int,
    *mut OmUint32,
) -> OmUint32;
type DisplayName = unsafe extern "C" fn(
    *mut OmUint32,
    GssName,
    *mut GssBufferDesc,
    *mut *mut GssOidDesc,
) -> OmUint32;
type DisplayStatus = unsafe extern "C" fn(
    *mut OmUint32,
    OmUint32,
    c_int,
    *mut GssOidDesc,
    *mut OmUint32,
    *mut GssBufferDesc,
) -> OmUint32;
type InquireContext = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut GssName,
    *mut GssName,
    *mut OmUint32,
    *mut *mut GssOidDesc,
    *mut OmUint32,
    *mut c_int,
    *mut c_int,
) -> OmUint32;
type ReleaseBuffer = unsafe extern "C" fn(*mut OmUint32, *mut GssBufferDesc) -> OmUint32;
type ReleaseName = unsafe extern "C" fn(*mut OmUint32, *mut GssName) -> OmUint32;
type ReleaseCred = unsafe extern "C" fn(*mut OmUint32, *mut GssCred) -> OmUint32;
type DeleteSecContext =
    unsafe extern "C" fn(*mut OmUint32, *mut GssCtx, *mut GssBufferDesc) -> OmUint32;

/// The library's entry points. The library itself is kept loaded for the life of the
/// process (the pointers are only valid while it is).
pub(crate) struct Gss {
    _lib: libloading::Library,
    pub import_name: ImportName,
    pub acquire_cred_from: AcquireCredFrom,
    pub accept_sec_context: AcceptSecContext,
    pub init_sec_context: InitSecContext,
    pub wrap: Wrap,
    pub unwrap: Unwrap,
    pub display_name: DisplayName,
    pub display_status: DisplayStatus,
    pub inquire_context: InquireContext,
    pub release_buffer: ReleaseBuffer,
    pub release_name: ReleaseName,
    pub release_cred: ReleaseCred,
    pub delete_sec_context: DeleteSecContext,
}

/// Debian and Red Hat both ship the versioned name; the bare `.so` only comes with the
/// development package.
const LIBRARY: &str = "libgssapi_krb5.so.2";

fn load() -> Result<Gss, libloading::Error> {
    // SAFETY: loading MIT's GSSAPI library runs only its own initialisers, and each symbol
    // is given the type MIT's gssapi.h declares for it.
    unsafe {
        let lib = libloading::Library::new(LIBRARY)?;
        macro_rules! sym {
            ($name:literal) => {
                *lib.get($name)?
            };
        }
        Ok(Gss {
            import_name: sym!(b"gss_import_name\0"),
            acquire_cred_from: sym!(b"gss_acquire_cred_from\0"),
            accept_sec_context: sym!(b"gss_accept_sec_context\0"),
            init_sec_context: sym!(b"gss_init_sec_context\0"),
            wrap: sym!(b"gss_wrap\0"),
            unwrap: sym!(b"gss_unwrap\0"),
            display_name: sym!(b"gss_display_name\0"),
            display_status: sym!(b"gss_display_status\0"),
            inquire_context: sym!(b"gss_inquire_context\0"),
            release_buffer: sym!(b"gss_release_buffer\0"),
            release_name: sym!(b"gss_release_name\0"),
            release_cred: sym!(b"gss_release_cred\0"),
            delete_sec_context: sym!(b"gss_delete_sec_context\0"),
            _lib: lib,
        })
    }
}

/// The library, loaded on first use; the error says what to install when it is missing.
pub(crate) fn gss() -> Result<&'static Gss, String> {
    static GSS: OnceLock<Result<Gss, String>> = OnceLock::new();
    GSS.get_or_init(|| {
        load().map_err(|e| {
            format!(
                "Kerberos needs MIT's GSSAPI library {LIBRARY} ({e}); on Debian or Ubuntu: \
                 apt-get install libgssapi-krb5-2, on Red Hat: yum install krb5-libs"
            )
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}
