//! Per-chunk checksums as HDFS stores and sends them: one 4-byte big-endian CRC for every
//! `bytes_per_checksum` bytes of data, the last chunk possibly short.

use ferrite_proto::hdfs::ChecksumTypeProto;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Crc32,
    Crc32c,
}

impl Kind {
    pub fn from_proto(v: i32) -> Option<Kind> {
        match ChecksumTypeProto::try_from(v).ok()? {
            ChecksumTypeProto::ChecksumNull => Some(Kind::Null),
            ChecksumTypeProto::ChecksumCrc32 => Some(Kind::Crc32),
            ChecksumTypeProto::ChecksumCrc32c => Some(Kind::Crc32c),
        }
    }

    pub fn to_proto(self) -> i32 {
        (match self {
            Kind::Null => ChecksumTypeProto::ChecksumNull,
            Kind::Crc32 => ChecksumTypeProto::ChecksumCrc32,
            Kind::Crc32c => ChecksumTypeProto::ChecksumCrc32c,
        }) as i32
    }

    /// The type byte of a meta file header (`DataChecksum.Type.id`).
    pub fn id(self) -> u8 {
        match self {
            Kind::Null => 0,
            Kind::Crc32 => 1,
            Kind::Crc32c => 2,
        }
    }

    pub fn from_id(id: u8) -> Option<Kind> {
        match id {
            0 => Some(Kind::Null),
            1 => Some(Kind::Crc32),
            2 => Some(Kind::Crc32c),
            _ => None,
        }
    }

    /// Bytes of checksum per chunk.
    pub fn size(self) -> usize {
        match self {
            Kind::Null => 0,
            _ => 4,
        }
    }

    pub fn crc(self, data: &[u8]) -> u32 {
        match self {
            Kind::Null => 0,
            Kind::Crc32 => crc32fast::hash(data),
            Kind::Crc32c => crc32c::crc32c(data),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksum {
    pub kind: Kind,
    pub bytes_per_checksum: u32,
}

impl Checksum {
    pub const CRC32C_512: Checksum = Checksum {
        kind: Kind::Crc32c,
        bytes_per_checksum: 512,
    };

    pub fn chunks(&self, data_len: usize) -> usize {
        if self.kind == Kind::Null {
            return 0;
        }
        data_len.div_ceil(self.bytes_per_checksum as usize)
    }

    /// Appends the checksums of `data` (chunked from its start) to `out`.
    pub fn compute_into(&self, data: &[u8], out: &mut Vec<u8>) {
        if self.kind == Kind::Null {
            return;
        }
        for chunk in data.chunks(self.bytes_per_checksum as usize) {
            out.extend_from_slice(&self.kind.crc(chunk).to_be_bytes());
        }
    }

    /// Checks `data` against `sums`; returns the index of the first bad chunk.
    pub fn verify(&self, data: &[u8], sums: &[u8]) -> Result<(), usize> {
        if self.kind == Kind::Null {
            return Ok(());
        }
        let chunks = data.chunks(self.bytes_per_checksum as usize);
        if sums.len() != chunks.len() * 4 {
            return Err(0);
        }
        for (i, (chunk, sum)) in chunks.zip(sums.chunks_exact(4)).enumerate() {
            let want = u32::from_be_bytes(sum.try_into().expect("4 bytes"));
            if self.kind.crc(chunk) != want {
                return Err(i);
            }
        }
        Ok(())
    }
}

/// The 7-byte header of a block's meta file: version 1, then the checksum type and size.
pub const META_HEADER_LEN: usize = 7;
pub const META_VERSION: u16 = 1;

pub fn meta_header(c: &Checksum) -> [u8; META_HEADER_LEN] {
    let mut h = [0u8; META_HEADER_LEN];
    h[..2].copy_from_slice(&META_VERSION.to_be_bytes());
    h[2] = c.kind.id();
    h[3..].copy_from_slice(&c.bytes_per_checksum.to_be_bytes());
    h
}

/// Why a meta file's header is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetaHeaderError {
    #[error("meta header of {0} bytes")]
    Short(usize),
    #[error("meta file version {0}")]
    Version(u16),
    #[error("checksum type {0}")]
    Kind(u8),
    #[error("bytes per checksum {0}")]
    ChunkSize(u32),
}

pub fn parse_meta_header(h: &[u8]) -> Result<Checksum, MetaHeaderError> {
    if h.len() < META_HEADER_LEN {
        return Err(MetaHeaderError::Short(h.len()));
    }
    let version = u16::from_be_bytes([h[0], h[1]]);
    if version != META_VERSION {
        return Err(MetaHeaderError::Version(version));
    }
    let kind = Kind::from_id(h[2]).ok_or(MetaHeaderError::Kind(h[2]))?;
    let bpc = u32::from_be_bytes([h[3], h[4], h[5], h[6]]);
    if bpc == 0 || bpc > 1 << 20 {
        return Err(MetaHeaderError::ChunkSize(bpc));
    }
    Ok(Checksum {
        kind,
        bytes_per_checksum: bpc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_and_verification() {
        let c = Checksum::CRC32C_512;
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut sums = Vec::new();
        c.compute_into(&data, &mut sums);
        assert_eq!(sums.len(), 8);
        assert_eq!(c.chunks(1000), 2);
        assert_eq!(c.chunks(1024), 2);
        assert_eq!(c.chunks(1025), 3);
        assert_eq!(c.verify(&data, &sums), Ok(()));
        let mut bad = data.clone();
        bad[600] ^= 1;
        assert_eq!(c.verify(&bad, &sums), Err(1));
        assert_eq!(
            &sums[..4],
            &crc32c::crc32c(&data[..512]).to_be_bytes(),
            "big-endian CRC32C of the first chunk"
        );
    }

    #[test]
    fn meta_header_round_trip_and_damage() {
        let h = meta_header(&Checksum::CRC32C_512);
        assert_eq!(h, [0, 1, 2, 0, 0, 2, 0]);
        assert_eq!(parse_meta_header(&h).unwrap(), Checksum::CRC32C_512);
        assert!(parse_meta_header(&[0, 2, 2, 0, 0, 2, 0]).is_err());
        assert!(parse_meta_header(&[0, 1, 9, 0, 0, 2, 0]).is_err());
        assert!(parse_meta_header(&[0, 1]).is_err());
    }
}
