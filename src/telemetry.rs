//! Prometheus metrics: the one module that uses `prometheus-client`. The other modules
//! count through the typed functions here; [`render`] answers the whole exposition. Every
//! series is under the `isto_` prefix, with its unit in its name; the book's metrics
//! reference (`isto generate reference`) lists them from it.
//!
//! No label value comes from a client as it is: every label is an enum of this module,
//! a status code, or a string that [`Bounded`] admits, and the callers pass only route
//! patterns (never a URL: it may carry a token) and the names of their own tools.
//! Nothing here ever holds a statement, an e-mail address, a code, a token or a limit.
//!
//! One registry per process ([`std::sync::LazyLock`]): a counter counts every holder of
//! the process (tests run several; `isto serve` runs one).

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry, Unit};
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError, RwLock};
use std::time::Duration;

/// The `Content-Type` of [`render`]'s text (OpenMetrics 1.0, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Most distinct `endpoint` values; later ones count as `other`.
pub const MAX_ENDPOINTS: usize = 64;
/// Most distinct `tool` values; later ones count as `other`.
pub const MAX_TOOLS: usize = 32;
/// The `endpoint` of a request no route matched.
pub const UNMATCHED: &str = "unmatched";
/// The label value that stands for anything beyond a bound.
pub const OTHER: &str = "other";

/// Upper bounds of the request-duration buckets, seconds.
const DURATION_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Declares a label enum: its variants, each with its label value, [`as_str`](ToolOutcome::as_str)
/// giving that value, `ALL` (every variant in order) and the label encoding.
macro_rules! label_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $v:ident => $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vm])* $v,)* }

        impl $name {
            /// Every value, in declaration order.
            #[allow(dead_code)]
            const ALL: &'static [Self] = &[$(Self::$v,)*];

            /// The label value.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s,)* }
            }
        }

        impl EncodeLabelValue for $name {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
                std::fmt::Write::write_str(encoder, self.as_str())
            }
        }
    };
}

/// The label of an HTTP method: its name (`GET`), or [`OTHER`] for an unusual one (`BREW`).
fn method_label(name: &str) -> &'static str {
    let known = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];
    known.into_iter().find(|m| *m == name).unwrap_or(OTHER)
}

label_enum! {
    /// How a `tools/call` ended.
    pub enum ToolOutcome {
        /// A result without `isError`.
        Ok => "ok",
        /// A result with `isError` (bad input, not found, refused, internal).
        Error => "error",
        /// A name that is not one of the endpoint's tools (a JSON-RPC error).
        UnknownTool => "unknown_tool",
    }
}

label_enum! {
    /// What a rate limit counted (`app::rate`).
    pub enum RateScope {
        /// Per client address, on `/mcp*`.
        Mcp => "mcp",
        /// Per client address, on the OAuth routes.
        OAuth => "oauth",
        /// Per client address, on the pages.
        Pages => "pages",
        /// Per credential (account and OAuth client) on `/mcp/buyer` and `/mcp/seller`.
        Credential => "credential",
        /// Per client address, its connections (`limits.max_connections_per_client`): a
        /// connection or a request through a trusted proxy refused.
        Connections => "connections",
    }
}

label_enum! {
    /// A quota of `base::quota`, as a label.
    pub enum QuotaRule {
        /// `quotas.drafts_per_client_per_hour`.
        DraftsPerClient => "drafts_per_client",
        /// `quotas.consents_per_client_per_hour`.
        ConsentsPerClient => "consents_per_client",
        /// `quotas.consents_per_network_per_hour`.
        ConsentsPerNetwork => "consents_per_network",
        /// `quotas.consents_per_address_per_hour`.
        ConsentsPerAddress => "consents_per_address",
        /// `quotas.confirmation_mails_per_hour`.
        ConfirmationMails => "confirmation_mails",
        /// `quotas.confirmation_mails_per_hour` less its reserved share (addresses that never
        /// confirmed).
        ConfirmationMailsUnconfirmed => "confirmation_mails_unconfirmed",
        /// `quotas.registrations_per_client_per_hour`.
        RegistrationsPerClient => "registrations_per_client",
    }
}

/// What became of imported catalogue rows, in the order [`offers_imported`] takes them.
const IMPORT_RESULTS: [&str; 3] = ["created", "updated", "refused"];

/// A series without labels in a family (so that it has no sample until it is set).
type NoLabels = Vec<(&'static str, &'static str)>;

/// What a connection of the store's pool is doing, in the order [`pool`] takes them.
const POOL_STATES: [&str; 3] = ["size", "in_use", "idle"];

/// Declares label sets of one or more labels, each a field of its label's type.
macro_rules! label_sets {
    ($($name:ident { $($field:ident: $ty:ty),* })*) => {$(
        #[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
        struct $name { $($field: $ty),* }
    )*};
}

label_sets! {
    PoolStateLabels { state: &'static str }
    RequestLabels { endpoint: String, method: &'static str, status: u16 }
    EndpointLabels { endpoint: String }
    ToolLabels { tool: String, outcome: ToolOutcome }
    ScopeLabels { scope: RateScope }
    RuleLabels { rule: QuotaRule }
    ResultLabels { result: &'static str }
    // `status`: a PROTOCOL.md §2 status name (`protocol::Status::as_str`): static, so bounded.
    StatusLabels { status: &'static str }
    VersionLabels { version: &'static str }
}

/// A set of label values that admits at most `max` distinct values: a value seen before
/// (or one of the first `max`) is itself, any later one is [`OTHER`].
#[derive(Debug)]
pub struct Bounded {
    max: usize,
    seen: RwLock<HashSet<String>>,
}

impl Bounded {
    /// An empty set admitting `max` values.
    pub fn new(max: usize) -> Self {
        Self { max, seen: RwLock::new(HashSet::new()) }
    }

    /// `value` when admitted, else [`OTHER`]. A value seen before takes a read lock only.
    pub fn admit(&self, value: &str) -> String {
        if self.seen.read().unwrap_or_else(PoisonError::into_inner).contains(value) {
            return value.to_owned();
        }
        let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        if seen.contains(value) {
            return value.to_owned();
        }
        if seen.len() < self.max {
            seen.insert(value.to_owned());
            return value.to_owned();
        }
        OTHER.to_owned()
    }
}

type HistogramFamily = Family<EndpointLabels, Histogram, fn() -> Histogram>;

struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: HistogramFamily,
    tools: Family<ToolLabels, Counter>,
    rate_limited: Family<ScopeLabels, Counter>,
    quotas: Family<RuleLabels, Counter>,
    imported: Family<ResultLabels, Counter>,
    deliveries: Counter,
    intents: Family<StatusLabels, Gauge>,
    outbox_depth: Gauge,
    outbox_oldest: Gauge,
    pool: Family<PoolStateLabels, Gauge>,
    /// The pool's waits, wait timeouts and connection errors.
    pool_totals: [Family<NoLabels, Counter>; 3],
    endpoints: Bounded,
    tool_names: Bounded,
    /// One render at a time: the store values are set, then the text is encoded.
    render: Mutex<()>,
}

impl Metrics {
    fn new() -> Self {
        let mut r = Registry::with_prefix("isto");
        let requests =
            add(&mut r, "http_requests", "HTTP requests answered, by route pattern, method and status", None);
        let durations = HistogramFamily::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        let help = "Time to the response head, by route pattern";
        r.register_with_unit("http_request_duration", help, Unit::Seconds, durations.clone());
        let tools = add(&mut r, "mcp_tool_calls", "MCP tools/call requests, by tool and outcome", None);
        let rate_limited: Family<ScopeLabels, Counter> =
            add(&mut r, "rate_limited", "Requests refused with 429 by a rate limit, by scope", None);
        let quotas: Family<RuleLabels, Counter> =
            add(&mut r, "quota_refusals", "Writes refused by an hourly quota, by rule", None);
        let imported: Family<ResultLabels, Counter> = add(
            &mut r,
            "offers_imported",
            "Catalogue rows imported by this server, by result (refused: rows of a batch the server refused)",
            None,
        );
        let deliveries =
            add(&mut r, "deliveries", "Deliveries (offer matched to an intent) recorded in the store", None);
        let intents = add(&mut r, "intents", "Intents in the store, by status", None);
        let outbox_depth = add(&mut r, "outbox_depth", "E-mails queued in the outbox", None);
        let outbox_oldest =
            add(&mut r, "outbox_oldest_age", "Age of the oldest queued e-mail (0 when none)", Some(Unit::Seconds));
        // The pool's series (PostgreSQL only: they have no sample until a pool reports).
        let pool = add(
            &mut r,
            "store_pool_connections",
            "PostgreSQL connections of the store's pool: its size, those in use, those idle",
            None,
        );
        let pool_totals = [
            ("store_pool_waits", "Store calls that found every PostgreSQL connection in use and waited for one"),
            ("store_pool_wait_timeouts", "Store calls that waited for a PostgreSQL connection in vain and failed"),
            ("store_pool_connection_errors", "PostgreSQL connections that could not be opened or were found closed"),
        ]
        .map(|(name, help)| add(&mut r, name, help, None));
        // Every series with a fixed label set starts at zero, so that it is there (and
        // `rate()` works) before the first event.
        for &scope in RateScope::ALL {
            drop(rate_limited.get_or_create(&ScopeLabels { scope }));
        }
        for &rule in QuotaRule::ALL {
            drop(quotas.get_or_create(&RuleLabels { rule }));
        }
        for result in IMPORT_RESULTS {
            drop(imported.get_or_create(&ResultLabels { result }));
        }
        let build = Family::<VersionLabels, Gauge>::default();
        build.get_or_create(&VersionLabels { version: env!("CARGO_PKG_VERSION") }).set(1);
        r.register("build_info", "The running isto's version", build);
        Self {
            registry: r,
            requests,
            durations,
            tools,
            rate_limited,
            quotas,
            imported,
            deliveries,
            intents,
            outbox_depth,
            outbox_oldest,
            pool,
            pool_totals,
            endpoints: Bounded::new(MAX_ENDPOINTS),
            tool_names: Bounded::new(MAX_TOOLS),
            render: Mutex::new(()),
        }
    }
}

/// Registers a new metric of its kind as `name` (under the `isto_` prefix) with its help
/// text and unit; the metric, to keep a handle on it.
fn add<M: Metric + Clone + Default>(r: &mut Registry, name: &str, help: &str, unit: Option<Unit>) -> M {
    let metric = M::default();
    match unit {
        Some(unit) => r.register_with_unit(name, help, unit, metric.clone()),
        None => r.register(name, help, metric.clone()),
    }
    metric
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// HTTP requests answered since start ([`request`]) but for health checks, for
/// [`requests_answered`].
static ANSWERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many HTTP requests were answered since start, not counting `/healthz` and
/// `/readyz` (a monitor's probes): `isto serve` tells a quiet holder by this count
/// standing still (`app::tasks`).
pub fn requests_answered() -> u64 {
    ANSWERED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one answered HTTP request: `endpoint` is its route pattern (`/consent/{token}`,
/// never the path) or [`UNMATCHED`]; `latency` is the time to the response head.
pub fn request(endpoint: &str, method: &str, status: u16, latency: Duration) {
    if !matches!(endpoint, "/healthz" | "/readyz") {
        ANSWERED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let m = &*METRICS;
    let endpoint = m.endpoints.admit(endpoint);
    m.requests.get_or_create(&RequestLabels { endpoint: endpoint.clone(), method: method_label(method), status }).inc();
    m.durations.get_or_create(&EndpointLabels { endpoint }).observe(latency.as_secs_f64());
}

/// Counts one `tools/call`: `tool` is the name of one of the endpoint's tools, or
/// [`OTHER`] for a name that is not (the caller checks; see [`ToolOutcome::UnknownTool`]).
pub fn tool_call(tool: &str, outcome: ToolOutcome) {
    let m = &*METRICS;
    let tool = m.tool_names.admit(tool);
    m.tools.get_or_create(&ToolLabels { tool, outcome }).inc();
}

/// Counts one request refused by a rate limit.
pub fn rate_limited(scope: RateScope) {
    METRICS.rate_limited.get_or_create(&ScopeLabels { scope }).inc();
}

/// Counts one write refused by a quota.
pub fn quota_refused(rule: QuotaRule) {
    METRICS.quotas.get_or_create(&RuleLabels { rule }).inc();
}

/// Counts imported catalogue rows: `created` and `updated` offers of a stored batch,
/// `refused` rows of a batch the server refused.
pub fn offers_imported(created: u64, updated: u64, refused: u64) {
    let m = &*METRICS;
    for (result, n) in IMPORT_RESULTS.into_iter().zip([created, updated, refused]) {
        m.imported.get_or_create(&ResultLabels { result }).inc_by(n);
    }
}

/// The values read from the store at scrape time (see `app::metrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreGauges {
    /// Intents by status name (PROTOCOL.md §2; every status, 0 included).
    pub intents: Vec<(&'static str, u64)>,
    /// E-mails queued.
    pub outbox_depth: u64,
    /// Age of the oldest queued e-mail, seconds (0 when none).
    pub outbox_oldest_age_secs: u64,
    /// Deliveries recorded in the store (they are never deleted).
    pub deliveries: u64,
}

/// Sets the PostgreSQL pool's series (before [`render`]) from `store::PoolStats`:
/// `connections` are its size, in use and idle; `totals` its waits, wait timeouts and
/// connection errors since the store opened (the counters grow by what is new since the
/// last call: one pool per `isto serve`).
pub fn pool(connections: [u32; 3], totals: [u64; 3]) {
    let m = &*METRICS;
    for (state, n) in POOL_STATES.into_iter().zip(connections) {
        m.pool.get_or_create(&PoolStateLabels { state }).set(i64::from(n));
    }
    for (family, total) in m.pool_totals.iter().zip(totals) {
        let c = family.get_or_create(&Vec::new());
        c.inc_by(total.saturating_sub(c.get()));
    }
}

fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The whole exposition, OpenMetrics text ([`CONTENT_TYPE`]) ending in `# EOF`: every
/// series of this process, with the store's values from `store` (`None`: the store could
/// not be read; its series keep their last values).
pub fn render(store: Option<&StoreGauges>) -> String {
    let m = &*METRICS;
    let _one = m.render.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = store {
        for (status, n) in &s.intents {
            m.intents.get_or_create(&StatusLabels { status }).set(gauge_value(*n));
        }
        m.outbox_depth.set(gauge_value(s.outbox_depth));
        m.outbox_oldest.set(gauge_value(s.outbox_oldest_age_secs));
        // A counter only grows: the store's count is the total, this adds what is new
        // (a store restored from an older backup leaves it where it was).
        m.deliveries.inc_by(s.deliveries.saturating_sub(m.deliveries.get()));
    }
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &m.registry).is_err() {
        out = "# EOF\n".to_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_set_admits_its_first_values_and_then_only_other() {
        let b = Bounded::new(2);
        assert_eq!(b.admit("/a"), "/a");
        assert_eq!(b.admit("/b"), "/b");
        assert_eq!(b.admit("/c"), OTHER);
        assert_eq!(b.admit("/a"), "/a", "a value admitted before stays itself");
    }

    #[test]
    fn the_exposition_names_every_series_with_units_and_ends_in_eof() {
        request("/healthz", "GET", 200, Duration::from_millis(2));
        request("/healthz", "BREW", 418, Duration::from_millis(2));
        tool_call("intent_get_intent", ToolOutcome::Ok);
        rate_limited(RateScope::Mcp);
        quota_refused(QuotaRule::DraftsPerClient);
        offers_imported(2, 1, 0);
        let store = StoreGauges {
            intents: vec![("active", 3), ("withdrawn", 1)],
            outbox_depth: 2,
            outbox_oldest_age_secs: 30,
            deliveries: 5,
        };
        let text = render(Some(&store));
        for line in [
            "isto_http_requests_total{endpoint=\"/healthz\",method=\"GET\",status=\"200\"}",
            "isto_http_requests_total{endpoint=\"/healthz\",method=\"other\",status=\"418\"}",
            "isto_http_request_duration_seconds_bucket{le=\"0.0025\",endpoint=\"/healthz\"}",
            "isto_mcp_tool_calls_total{tool=\"intent_get_intent\",outcome=\"ok\"}",
            "isto_rate_limited_total{scope=\"mcp\"}",
            "isto_quota_refusals_total{rule=\"drafts_per_client\"}",
            "isto_offers_imported_total{result=\"created\"}",
            "isto_intents{status=\"active\"} 3",
            "isto_outbox_depth 2",
            "isto_outbox_oldest_age_seconds 30",
            "isto_build_info{version=",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        assert!(text.lines().any(|l| l.starts_with("isto_deliveries_total ")), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        // The deliveries counter never goes down.
        let lower = StoreGauges { deliveries: 1, ..store };
        let again = render(Some(&lower));
        let value =
            |t: &str| t.lines().find_map(|l| l.strip_prefix("isto_deliveries_total ")).unwrap().parse::<u64>().unwrap();
        assert!(value(&again) >= 5, "{again}");
    }
}
