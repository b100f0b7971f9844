//! The release, from `Cargo.toml`: pure, uses nothing of the crate.

/// The release as `MODULE LIST` shows it: major*10000 + minor*100 + patch
/// (as RedisBloom and RedisJSON encode theirs), from `Cargo.toml`.
pub const MODULE_VERSION: i32 = 10_000 * decimal(env!("CARGO_PKG_VERSION_MAJOR"))
    + 100 * decimal(env!("CARGO_PKG_VERSION_MINOR"))
    + decimal(env!("CARGO_PKG_VERSION_PATCH"));

/// The release as `INFO recipes` shows it (`recipes_version`).
pub const RELEASE: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(release) => release,
    Err(_) => panic!("the package version holds a NUL"),
};

/// A version number's decimal digits, at compile time.
const fn decimal(digits: &str) -> i32 {
    let bytes = digits.as_bytes();
    let mut value = 0;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version part is not a number");
        value = value * 10 + (bytes[i] - b'0') as i32;
        i += 1;
    }
    value
}

#[cfg(test)]
mod tests {
    #[test]
    fn module_version_encodes_the_package_version() {
        let version = env!("CARGO_PKG_VERSION");
        let parts: Vec<i32> = version.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(
            super::MODULE_VERSION,
            parts[0] * 10_000 + parts[1] * 100 + parts[2]
        );
        assert_eq!(super::RELEASE.to_str().unwrap(), version);
    }
}
