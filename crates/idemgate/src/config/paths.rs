//! Paths as idemgate prints and uses them: absolute and lexically normalized, so an error
//! or `idemgate config check` names the file the operator can open, whatever the working
//! directory (`/srv/etc/../data/x` reads `/srv/data/x`; `data/x`, relative to the config
//! file, reads `/srv/etc/data/x`).

use std::path::{Component, Path, PathBuf};

/// `path` resolved against `base` (a path that is already absolute stays itself), then
/// against the working directory if `base` is relative, and normalized.
#[must_use]
pub fn resolve(base: &Path, path: impl AsRef<Path>) -> PathBuf {
    let joined = base.join(path);
    let absolute = if joined.is_absolute() {
        joined
    } else {
        // Without a working directory (deleted), the relative path is the best there is.
        std::env::current_dir().map_or(joined.clone(), |cwd| cwd.join(&joined))
    };
    normalize(&absolute)
}

/// Drops `.` and folds `..` into the folder before it, without asking the file system:
/// the folder a symbolic link points to is not looked up (as a shell's `cd` does).
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`; a relative path keeps a leading `..` it cannot fold.
                if !normal.pop() && !normal.has_root() {
                    normal.push("..");
                }
            }
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_made_absolute_against_its_base_and_normalized() {
        let base = Path::new("/srv/idemgate/etc/../etc/.");
        assert_eq!(resolve(base, "data/x.sqlite3"), Path::new("/srv/idemgate/etc/data/x.sqlite3"));
        assert_eq!(resolve(base, "../data/./x.sqlite3"), Path::new("/srv/idemgate/data/x.sqlite3"));
        assert_eq!(resolve(base, "/var/lib/../lib/x"), Path::new("/var/lib/x"));
        assert_eq!(resolve(Path::new("/"), "../../x"), Path::new("/x"));
        let cwd = std::env::current_dir().unwrap_or_default();
        assert_eq!(resolve(Path::new("etc"), "../x"), normalize(&cwd.join("x")));
    }
}
