//! `[store]`'s backend keys, each overridden by its `ISTO_STORE_*` variable. The URL's
//! password never appears in an error or in `check-config` output.

use super::{ConfigError, FileStore, Overrides};
use crate::store::{PgSettings, DEFAULT_POOL_SIZE};

/// The PostgreSQL settings of `[store]` and the overrides; `None` for redb.
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key: an unknown backend, a PostgreSQL backend
/// without a URL or with a URL that does not parse, `url` or `pool_size` with redb, a
/// `pool_size` outside 1..=64.
pub(super) fn load(file: &FileStore, o: &Overrides) -> Result<Option<PgSettings>, ConfigError> {
    let backend = o.store_backend.clone().or_else(|| file.backend.clone()).unwrap_or_else(|| "redb".to_owned());
    let url = o.store_url.clone().or_else(|| file.url.clone()).filter(|u| !u.trim().is_empty());
    let pool_size = o.store_pool_size.or(file.pool_size);
    match backend.as_str() {
        "redb" => {
            if url.is_some() || pool_size.is_some() {
                return Err(ConfigError::invalid(
                    if url.is_some() { "store.url" } else { "store.pool_size" },
                    "is for store.backend = \"postgres\"; the redb store lives in the data directory",
                ));
            }
            Ok(None)
        }
        "postgres" => {
            let Some(url) = url else {
                return Err(ConfigError::invalid(
                    "store.url",
                    "is required with store.backend = \"postgres\": a postgres:// URL or key=value settings \
                              such as \"host=/run/postgresql dbname=isto\"",
                ));
            };
            crate::store::check_url(&url).map_err(|m| ConfigError::Invalid { key: "store.url", message: m })?;
            let pool_size = super::within(pool_size, DEFAULT_POOL_SIZE, 1..=64, "store.pool_size")?;
            Ok(Some(PgSettings { url, pool_size }))
        }
        other => Err(ConfigError::invalid("store.backend", format!("{other:?} must be \"redb\" or \"postgres\""))),
    }
}
