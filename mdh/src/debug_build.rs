//! The note a kernel logs when it runs in a debug build: compiled in the
//! user's crate, an unoptimized kernel is two to three orders of magnitude
//! slower (matmul 512³: 750×, see the README's first example), and nothing
//! else would tell the user why.

use std::sync::atomic::{AtomicBool, Ordering};

static NOTED: AtomicBool = AtomicBool::new(false);

/// The profile settings that optimize the kernels of crate `package` in
/// debug builds: its own code (where `mdh!` expands) and its dependencies.
pub fn hint(package: &str) -> String {
    format!(
        "[profile.dev.package.\"*\"] opt-level = 3 and [profile.dev.package.{package}] opt-level = 3"
    )
}

/// Logs, once per process, that kernel `name` of crate `package` runs in
/// a debug build and how to optimize it. Generated code calls it when
/// `cfg!(debug_assertions)` holds in the crate that compiles the kernel.
#[cold]
pub fn note_debug_build(name: &str, package: &str) {
    if !NOTED.load(Ordering::Relaxed) && !NOTED.swap(true, Ordering::Relaxed) {
        log::warn!(
            "mdh: kernel `{name}` was compiled in a debug build; unoptimized, a kernel \
             runs 100-1000x slower. Optimize it in debug builds with {} in the \
             workspace's Cargo.toml (or build with --release); ignore this if the \
             build is optimized and only has debug assertions.",
            hint(package)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps every record logged by this process.
    struct Recorder(Mutex<Vec<String>>);

    impl log::Log for Recorder {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", record.level(), record.args()));
        }
        fn flush(&self) {}
    }

    static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));

    #[test]
    fn the_note_is_logged_once_with_the_hint() {
        log::set_logger(&RECORDER).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
        note_debug_build("matmul", "my-app");
        note_debug_build("matmul", "my-app");
        note_debug_build("dot", "other");
        let records = RECORDER.0.lock().unwrap();
        assert_eq!(records.len(), 1, "{records:?}");
        assert!(
            records[0].starts_with("WARN mdh: kernel `matmul`"),
            "{records:?}"
        );
        assert!(records[0].contains(&hint("my-app")), "{records:?}");
        assert!(
            records[0].contains("[profile.dev.package.my-app] opt-level = 3"),
            "{records:?}"
        );
    }
}
