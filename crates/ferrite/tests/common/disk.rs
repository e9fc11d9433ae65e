//! Small disks for tests that need a volume's size to matter: a tmpfs of a few MiB
//! mounted by the test (which runs as root) and unmounted when dropped.

use std::path::{Path, PathBuf};

/// A tmpfs of some MiB mounted at a directory for a test's life: a disk that can be
/// filled without touching the machine's own.
pub struct SmallDisk(PathBuf);

impl SmallDisk {
    pub fn mount(dir: &Path, mib: u64) -> SmallDisk {
        SmallDisk::mount_size(dir, &format!("{mib}m"))
    }

    /// A tmpfs of `size` as `mount -o size=` takes it (`256k`, `8m`).
    pub fn mount_size(dir: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "mounting a tmpfs at {} (the tests run as root)",
            dir.display()
        );
        SmallDisk(dir.to_path_buf())
    }

    /// Fills the disk to the last byte.
    pub fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("ballast")).unwrap();
        let chunk = vec![0u8; 1 << 16];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }

    pub fn free(&self) {
        std::fs::remove_file(self.0.join("ballast")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}
