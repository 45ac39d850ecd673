//! Demand summaries (PROTOCOL.md §5, the seed's "spec §6"): how many active intents
//! fall in one cell of the holder's band grid, withheld below the threshold k.
//!
//! **The band grid** of a category ([`grid`]) has three axes:
//!
//! * `area`: every ISO 3166-2 region the holder serves ([`gazetteer::all_regions`]:
//!   the 8 Slovak and 14 Czech kraje), e.g. `"SK-BL"`.
//! * `budgetBand`: `"LOW-HIGH"` (LOW inclusive, HIGH exclusive) and `"LOW+"` for the
//!   top band, in the holder's default currency, from
//!   [`Settings::demand_budget_bands`] (defaults in
//!   [`crate::config::DEFAULT_BUDGET_BANDS`]), plus `"none"`.
//! * `buyByBand`: `"1m"`, `"3m"`, `"12m"`, `"later"` and `"none"` ([`BUY_BY_BANDS`]).
//!
//! **Where an intent counts.** Only intents whose effective status at now is `active`
//! (expired ones not, even before the sweep persists it).
//!
//! * Area: in every region cell its area covers; a whole-country intent counts in
//!   *every* region of that country (a seller in any of them can serve it), so the sum
//!   over regions exceeds the number of intents.
//! * Budget: by its visible `budget.max` in the default currency
//!   ([`Settings::to_default_currency`]). The hidden limit is never opened here. No
//!   max, or a currency without a rate → `"none"`.
//! * Buy-by: [`buy_by_band`], by calendar months from today (UTC).
//!
//! **The threshold counts people** (PROTOCOL.md §5): a cell whose intents come from
//! fewer than k distinct people (`[demand] k`) is `{"withheld": true, "reason":
//! "below_threshold"}` with no numbers, whatever its intent count — so one person's many
//! intents (one address, its `+tag` variants, one account) never lift a cell over k. A
//! person is the intent's stored person key ([`IntentRecord::person`], compared as its
//! 64-bit hash [`Times::person`]: a collision can only withhold); demand never opens a
//! contact, and an intent without a key adds no person. Every output that
//! applies k ([`summary`], [`heat_map`]) applies it this way, and the sub-counts too
//! ([`sub_count`]).
//!
//! **Cost.** Counts come from the active set in memory ([`crate::base::active`], no
//! store read) and are kept while the set is unchanged, for at most [`MAX_AGE`]: calls
//! by anyone cost at most one count per cell and change of the active set.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

use crate::base::active::{self, Times};
use crate::base::{Base, ServiceError};
use crate::clock;
use crate::config::Settings;
use crate::gazetteer;
use crate::protocol::input::{Fields, InputError};
use crate::protocol::CATEGORIES;
use crate::records::IntentRecord;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use time::{Date, Month, OffsetDateTime};

pub use crate::protocol::{BUY_BY_BANDS, NONE};

/// "New" means became active within this many days.
pub const NEW_DAYS: i64 = 7;

/// One band of visible budgets: `[low, high)` in the category currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetBand {
    /// `"LOW-HIGH"` or `"LOW+"`.
    pub label: String,
    /// Inclusive lower bound.
    pub low: u64,
    /// Exclusive upper bound; `None` for the top band.
    pub high: Option<u64>,
}

/// The band grid of one category (PROTOCOL.md §5).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Category key.
    pub category: String,
    /// ISO 4217 code of the budget bands (the holder's default currency).
    pub currency: String,
    /// Area cells: ISO 3166-2 region codes, in gazetteer order (SK, then CZ).
    pub area: Vec<String>,
    /// Budget bands of visible budgets, ascending (the `"none"` band is not in here;
    /// see [`Grid::budget_labels`]).
    pub budget_bands: Vec<BudgetBand>,
}

impl Grid {
    /// Every budgetBand label, `"none"` last.
    pub fn budget_labels(&self) -> Vec<String> {
        self.budget_bands.iter().map(|b| b.label.clone()).chain(std::iter::once(NONE.to_owned())).collect()
    }

    /// The grid as published in the holder metadata (PROTOCOL.md §8):
    /// `{"area": [...], "budgetBand": [...], "buyByBand": [...]}`.
    pub fn to_json(&self) -> Value {
        json!({"area": self.area, "budgetBand": self.budget_labels(), "buyByBand": BUY_BY_BANDS})
    }

    #[cfg(test)]
    /// The budgetBand label for a visible budget: by `budget.max` converted into the
    /// grid's currency with `settings`' rates; `"none"` without a max (or a rate) (tests).
    pub fn budget_band(&self, settings: &Settings, budget: Option<&crate::protocol::Budget>) -> &str {
        let v = budget.and_then(|b| settings.to_default_currency(b.max?, &b.currency));
        self.budget_index(v).map_or(NONE, |i| self.budget_bands[i].label.as_str())
    }

    /// Index into [`Grid::budget_bands`] of a visible max in the default currency;
    /// `None` for the `"none"` band (no max, no rate, not finite).
    fn budget_index(&self, max: Option<f64>) -> Option<usize> {
        let v = max.filter(|v| v.is_finite())?;
        // The last band whose lower bound is ≤ v (bands start at 0; v > 0).
        self.budget_bands.iter().rposition(|band| v >= band.low as f64).or(Some(0))
    }

    /// Index of an area cell.
    fn area_index(&self, code: &str) -> Option<usize> {
        self.area.iter().position(|a| a == code)
    }
}

/// The band grid of `category` from the settings (unknown categories get one band `0+`).
pub fn grid(settings: &Settings, category: &str) -> Grid {
    let bounds: &[u64] = settings.demand_budget_bands.get(category).map_or(&[0], Vec::as_slice);
    let budget_bands = bounds
        .iter()
        .enumerate()
        .map(|(i, &low)| {
            let high = bounds.get(i + 1).copied();
            let label = match high {
                Some(h) => format!("{low}-{h}"),
                None => format!("{low}+"),
            };
            BudgetBand { label, low, high }
        })
        .collect();
    Grid {
        category: category.to_owned(),
        currency: settings.default_currency.clone(),
        area: gazetteer::all_regions().map(|(code, _)| code.to_owned()).collect(),
        budget_bands,
    }
}

/// `date` plus `months` calendar months, the day clamped to the month's length
/// (31 January + 1 month = 28/29 February).
fn add_months(date: Date, months: u32) -> Date {
    let total = date.year() * 12 + i32::from(u8::from(date.month())) - 1 + months as i32;
    let (year, month) = (total.div_euclid(12), total.rem_euclid(12) as u8 + 1);
    let month = Month::try_from(month).unwrap_or(Month::December);
    let day = date.day().min(time::util::days_in_month(month, year));
    Date::from_calendar_date(year, month, day).unwrap_or(date)
}

/// The buyByBand of a `buyBy` date (`YYYY-MM-DD`) seen from `today`: on or before
/// today + 1 calendar month → `"1m"` (a past date too), + 3 months → `"3m"`, + 12 months
/// → `"12m"`, later → `"later"`; none → `"none"`.
pub fn buy_by_band(buy_by: Option<&str>, today: Date) -> &'static str {
    let band = buy_by_index(&buy_by_lasts(today), buy_by.and_then(|s| clock::parse_date(s).ok()));
    BUY_BY_BANDS.get(band).copied().unwrap_or(NONE)
}

/// The last days of the buy-by bands `"1m"`, `"3m"` and `"12m"` seen from `today`: today
/// + 1, 3 and 12 calendar months.
fn buy_by_lasts(today: Date) -> [Date; 3] {
    [add_months(today, 1), add_months(today, 3), add_months(today, 12)]
}

/// The index in [`BUY_BY_BANDS`] of the band of a `buyBy` date against the bands' last
/// days ([`buy_by_lasts`]); no date is `"none"`.
fn buy_by_index(lasts: &[Date; 3], buy_by: Option<Date>) -> usize {
    let Some(d) = buy_by else { return BUY_BY_BANDS.len() - 1 };
    lasts.iter().position(|last| d <= *last).unwrap_or(lasts.len())
}

/// One scan's instant and what each intent is compared with at it, computed once: now in
/// unix nanoseconds, the start of "new" ([`NEW_DAYS`] before), and the last days of the
/// buy-by bands (today + 1, 3 and 12 calendar months).
struct At {
    ns: i128,
    new_after: i128,
    buy_by: [Date; 3],
}

impl At {
    fn new(now: OffsetDateTime) -> Self {
        Self {
            ns: active::nanos(now),
            new_after: now.checked_sub(time::Duration::days(NEW_DAYS)).map_or(i128::MIN, active::nanos),
            buy_by: buy_by_lasts(now.date()),
        }
    }

    /// The index in [`BUY_BY_BANDS`] of the band of a `buyBy` date (see [`buy_by_band`]).
    fn buy_by_band(&self, buy_by: Option<Date>) -> usize {
        buy_by_index(&self.buy_by, buy_by)
    }

    /// Whether the intent became active within the last [`NEW_DAYS`] days (an
    /// unreadable time is the epoch here: never new, as it was never new before).
    fn is_new(&self, times: &Times) -> bool {
        times.became_active > self.new_after
    }
}

/// One cell of the band grid: `{"area": "SK-BL", "budgetBand": "10000-20000",
/// "buyByBand": "3m"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// ISO 3166-2 region code.
    pub area: String,
    /// A budgetBand label of the category's grid.
    pub budget_band: String,
    /// A buyByBand label.
    pub buy_by_band: String,
}

/// The counts of one shown cell; a sub-count is `None` (`null`) as [`sub_count`] says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Active intents in the cell.
    pub active_intents: u64,
    /// Of those, the ones that became active within the last 7 days.
    #[serde(rename = "newLast7Days")]
    pub new_last_7_days: Option<u64>,
    /// Of those, the ones with visibility pseudonymous.
    pub pseudonymous: Option<u64>,
}

/// A sub-count of a cell (`newLast7Days`, `pseudonymous`) as shown: `count` when the
/// intents it counts come from at least k distinct people (`inside`) and so do the
/// cell's other intents (`outside`), else `None`: either side below k would let k − 1
/// people who know their own intents read a victim's visibility, or when its intent
/// became active, from the difference.
pub fn sub_count(count: u64, inside: usize, outside: usize, k: u32) -> Option<u64> {
    (shown(inside, k) && shown(outside, k)).then_some(count)
}

/// DemandSummary (PROTOCOL.md §5): `{"category", "cell", "activeIntents",
/// "newLast7Days", "pseudonymous", "asOf"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DemandSummary {
    /// Category key.
    pub category: String,
    /// The cell, normalised (area as a region code).
    pub cell: Cell,
    /// `activeIntents` (of at least k distinct people, so ≥ k), `newLast7Days`,
    /// `pseudonymous`.
    #[serde(flatten)]
    pub counts: Counts,
    /// When counted, RFC 3339.
    pub as_of: String,
}

/// Whether a cell whose intents come from `people` distinct people is shown under the
/// threshold `k` (PROTOCOL.md §5: at least k people).
pub fn shown(people: usize, k: u32) -> bool {
    people >= k as usize
}

/// `{"withheld": true, "reason": "below_threshold"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Withheld {
    /// Always true.
    pub withheld: bool,
    /// Always `"below_threshold"`.
    pub reason: &'static str,
}

impl Withheld {
    /// The only withheld answer: fewer than k distinct people.
    pub const BELOW_THRESHOLD: Self = Self { withheld: true, reason: "below_threshold" };
}

/// The answer of `intent_demand_summary`: the summary, or withheld.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DemandAnswer {
    /// Intents of at least k distinct people.
    Summary(DemandSummary),
    /// Fewer than k people.
    Withheld(Withheld),
}

/// Where one active intent counts: area cell indices, budget index (`None` = `"none"`),
/// buy-by band (index in [`BUY_BY_BANDS`]), and its flags.
struct Placement {
    areas: Vec<usize>,
    budget: Option<usize>,
    buy_by: usize,
    new: bool,
    pseudonymous: bool,
}

/// The exchange rates of one scan, the last currency's kept (the intents of a holder
/// mostly share one): [`Settings::to_default_currency`] without a map lookup, and
/// without reading the record, for each intent.
struct Rates<'a> {
    settings: &'a Settings,
    last: Option<(u64, Option<f64>)>,
}

impl<'a> Rates<'a> {
    fn new(settings: &'a Settings) -> Self {
        Self { settings, last: None }
    }

    /// The visible max of `rec`'s budget in the default currency (`None`: no max, no
    /// rate), from its facets `t`; the record is read only for a currency not seen last.
    fn max(&mut self, rec: &IntentRecord, t: &Times) -> Option<f64> {
        let max = t.budget_max?;
        let rate = match (&self.last, t.currency) {
            (Some((last, rate)), Some(key)) if *last == key => *rate,
            (_, key) => {
                let rate = self.settings.to_default_currency(1.0, &rec.budget.as_ref()?.currency);
                if let Some(key) = key {
                    self.last = Some((key, rate));
                }
                rate
            }
        };
        rate.map(|r| max * r)
    }
}

fn place(grid: &Grid, rates: &mut Rates, rec: &IntentRecord, times: &Times, at: &At) -> Placement {
    let areas = if rec.area.regions.is_empty() {
        // Whole country: every region of it.
        gazetteer::all_regions()
            .filter(|(_, country)| country.eq_ignore_ascii_case(&rec.area.country))
            .filter_map(|(code, _)| grid.area_index(code))
            .collect()
    } else {
        rec.area.regions.iter().filter_map(|r| grid.area_index(&r.to_ascii_uppercase())).collect()
    };
    Placement {
        areas,
        budget: grid.budget_index(rates.max(rec, times)),
        buy_by: at.buy_by_band(times.buy_by),
        new: at.is_new(times),
        pseudonymous: times.pseudonymous,
    }
}

/// Calls `each` with every intent of `category` that is active at `at`: a scan of the
/// active set in memory ([`crate::base::active`]), no store read.
fn scan_active(base: &Base, category: &str, at: &At, mut each: impl FnMut(&IntentRecord, &Times)) {
    base.active().scan(|rec, times| {
        if times.active_at(at.ns) && times.is_of(rec, category) {
            each(rec, times);
        }
    });
}

/// How long counts are reused while the active set is unchanged: what changes with the
/// clock alone (expiry, "new within 7 days", buy-by bands) shows at most this late.
pub const MAX_AGE: time::Duration = time::Duration::seconds(10);

/// The DemandSummary of one cell, or withheld when its active intents come from fewer
/// than k distinct people (PROTOCOL.md §5). `cell` must be a cell of the category's
/// grid (see [`parse_request`]); a cell outside it is withheld. Counted for this cell
/// alone ([`count_cell`]), kept while the active set is unchanged for at most
/// [`MAX_AGE`] — `asOf` is when.
pub fn summary(base: &Base, category: &str, cell: &Cell) -> Result<DemandAnswer, ServiceError> {
    let now = base.clock().now();
    let key = format!("demand:{category}:{}:{}:{}", cell.area, cell.budget_band, cell.buy_by_band);
    let (counts, at) =
        base.active().derived(&key, now, MAX_AGE, || Ok::<_, ServiceError>(count_cell(base, category, cell, now)))?;
    let Some(counts) = *counts else { return Ok(DemandAnswer::Withheld(Withheld::BELOW_THRESHOLD)) };
    Ok(DemandAnswer::Summary(DemandSummary {
        category: category.to_owned(),
        cell: cell.clone(),
        counts,
        as_of: clock::rfc3339(at),
    }))
}

/// The counts of one cell at `now` as shown under k (`None` when withheld, or when the
/// cell is not in the category's grid): the same tally as [`count_heat_map`] keeps for
/// that cell, placing only the intents of the cell's category and area.
fn count_cell(base: &Base, category: &str, cell: &Cell, now: OffsetDateTime) -> Option<Counts> {
    let settings = &base.settings();
    let grid = grid(settings, category);
    grid.area_index(&cell.area)?;
    let budget = grid.budget_labels().iter().position(|l| *l == cell.budget_band)?;
    let budget = (budget < grid.budget_bands.len()).then_some(budget);
    let buy_by = BUY_BY_BANDS.iter().position(|b| *b == cell.buy_by_band)?;
    let country = gazetteer::all_regions().find(|(code, _)| *code == cell.area).map(|(_, c)| c)?;
    let mut tally = Tally::default();
    let cell_key = crate::base::active::code_key(&cell.area);
    let mut rates = Rates::new(settings);
    let at = At::new(now);
    scan_active(base, category, &at, |rec, times| {
        let in_area = if let Some(region) = times.region {
            Some(region) == cell_key
        } else if rec.area.regions.is_empty() {
            rec.area.country.eq_ignore_ascii_case(country)
        } else {
            rec.area.regions.iter().any(|r| r.eq_ignore_ascii_case(&cell.area))
        };
        // `in_area` holds exactly when `place` would put the intent in the cell's area;
        // budget and buy-by band as `place` finds them.
        if in_area && grid.budget_index(rates.max(rec, times)) == budget && at.buy_by_band(times.buy_by) == buy_by {
            tally.add(at.is_new(times), times.pseudonymous, times.person);
        }
    });
    tally.shown(settings.demand_k)
}

/// Every cell of a category's grid with its counts, for the sellers' heat map page;
/// withheld cells (fewer than k distinct people) carry `None`.
#[derive(Debug, Clone)]
pub struct HeatMap {
    /// The grid.
    pub grid: Grid,
    /// The threshold k in force.
    pub k: u32,
    /// When counted, RFC 3339.
    pub as_of: String,
    /// Cells in grid order: buyByBand, then area, then budgetBand (`"none"` last).
    pub cells: Vec<(Cell, Option<Counts>)>,
}

impl HeatMap {
    /// The counts of the cell (buy-by band index, area index, budget label index as in
    /// [`Grid::budget_labels`]); `None` when withheld or out of range.
    pub fn at(&self, buy_by: usize, area: usize, budget: usize) -> Option<Counts> {
        let budgets = self.grid.budget_bands.len() + 1;
        if area >= self.grid.area.len() || budget >= budgets {
            return None;
        }
        self.cells.get((buy_by * self.grid.area.len() + area) * budgets + budget).and_then(|(_, c)| *c)
    }

    /// The largest shown activeIntents (0 when every cell is withheld).
    pub fn max_shown(&self) -> u64 {
        self.cells.iter().filter_map(|(_, c)| c.map(|c| c.active_intents)).max().unwrap_or(0)
    }
}

/// The tally of one cell while counting: intents and their people (person key hashes,
/// [`Times::person`]), in the whole cell and in each part a sub-count splits it into.
#[derive(Debug, Clone, Default)]
struct Tally {
    intents: u64,
    new: u64,
    pseudonymous: u64,
    /// The people of each intent counted, with whether it is new and pseudonymous.
    people: Vec<(u64, bool, bool)>,
}

impl Tally {
    /// Counts an intent, new within [`NEW_DAYS`] or not, pseudonymous or not, of
    /// `person` ([`Times::person`]).
    fn add(&mut self, new: bool, pseudonymous: bool, person: Option<u64>) {
        self.intents += 1;
        self.new += u64::from(new);
        self.pseudonymous += u64::from(pseudonymous);
        if let Some(x) = person {
            self.people.push((x, new, pseudonymous));
        }
    }

    /// The distinct people of the cell; of its new and not new intents; of its
    /// pseudonymous and private intents (sorts the tally's people in place).
    fn distinct(&mut self) -> [usize; 5] {
        self.people.sort_unstable();
        let mut out = [0; 5];
        // One person's entries are adjacent: each part counts the person once.
        for group in self.people.chunk_by(|a, b| a.0 == b.0) {
            let has = |f: fn(&(u64, bool, bool)) -> bool| usize::from(group.iter().any(f));
            out[0] += 1;
            out[1] += has(|e| e.1);
            out[2] += has(|e| !e.1);
            out[3] += has(|e| e.2);
            out[4] += has(|e| !e.2);
        }
        out
    }

    /// The counts as shown under `k`, `None` when withheld.
    fn shown(&mut self, k: u32) -> Option<Counts> {
        let people = self.distinct();
        let p = |i: usize| people[i];
        shown(p(0), k).then(|| Counts {
            active_intents: self.intents,
            new_last_7_days: sub_count(self.new, p(1), p(2), k),
            pseudonymous: sub_count(self.pseudonymous, p(3), p(4), k),
        })
    }
}

/// The whole grid of `category` (see [`HeatMap`]): the same numbers as [`summary`]
/// gives cell by cell (the same tally), counted in one pass and kept as [`summary`]
/// keeps its cells (the two may differ by what the clock alone moved; `asOf` tells).
pub fn heat_map(base: &Base, category: &str) -> Result<HeatMap, ServiceError> {
    let now = base.clock().now();
    let key = format!("demand:{category}");
    let (map, _) = base.active().derived(&key, now, MAX_AGE, || count_heat_map(base, category, now))?;
    Ok(map.as_ref().clone())
}

/// Counts the heat map of `category` at `now` in one scan of the active set.
fn count_heat_map(base: &Base, category: &str, now: OffsetDateTime) -> Result<HeatMap, ServiceError> {
    let settings = &base.settings();
    let grid = grid(settings, category);
    let budgets = grid.budget_bands.len() + 1;
    let areas = grid.area.len();
    let mut tallies = vec![Tally::default(); BUY_BY_BANDS.len() * areas * budgets];
    let mut rates = Rates::new(settings);
    let at = At::new(now);
    scan_active(base, category, &at, |rec, times| {
        let p = place(&grid, &mut rates, rec, times, &at);
        let b = p.budget.unwrap_or(budgets - 1);
        let y = p.buy_by;
        for &a in &p.areas {
            tallies[(y * areas + a) * budgets + b].add(p.new, p.pseudonymous, times.person);
        }
    });
    let labels = grid.budget_labels();
    let k = settings.demand_k;
    let mut cells = Vec::with_capacity(tallies.len());
    for (y, buy_by) in BUY_BY_BANDS.iter().enumerate() {
        for (a, area) in grid.area.iter().enumerate() {
            for (b, label) in labels.iter().enumerate() {
                let i = (y * areas + a) * budgets + b;
                let cell = Cell { area: area.clone(), budget_band: label.clone(), buy_by_band: (*buy_by).to_owned() };
                cells.push((cell, tallies[i].shown(k)));
            }
        }
    }
    Ok(HeatMap { grid, k, as_of: clock::rfc3339(now), cells })
}

/// Validates `intent_demand_summary` arguments `{category, cell: {area, budgetBand,
/// buyByBand}}` (PROTOCOL.md §3). `cell.area` is an ISO 3166-2 code or a region or town
/// name that the gazetteer resolves to exactly one region; the bands must be labels of
/// the category's grid.
///
/// # Errors
/// [`InputError`] naming the field (`category`, `cell`, `cell.area`,
/// `cell.budgetBand`, `cell.buyByBand`); the band errors list the valid labels.
pub fn parse_request(settings: &Settings, args: &Value) -> Result<(String, Cell), InputError> {
    let mut f = Fields::new(args, "")?;
    let keys: Vec<&str> = CATEGORIES.iter().map(|c| c.key).collect();
    let category = f.req_str("category", 40)?;
    let category = crate::protocol::category(&category)
        .map(|c| c.key.to_owned())
        .ok_or_else(|| InputError(format!("category must be one of {}", keys.join(", "))))?;
    let cell = f.get("cell");
    f.finish("")?;
    let Some(cell) = cell else {
        return Err(InputError(
            "cell is required: {\"area\": \"SK-BL\", \"budgetBand\": \"10000-20000\", \"buyByBand\": \"3m\"}".into(),
        ));
    };
    let grid = grid(settings, &category);
    let mut c = Fields::new(cell, "cell")?;
    let area = c.req_str("area", 200)?;
    let budget = c.req_str("budgetBand", 40)?;
    let buy_by = c.req_str("buyByBand", 40)?;
    c.finish("")?;

    let resolved = gazetteer::resolve(&area).map_err(|e| InputError(format!("cell.area: {e}")))?;
    let area = match resolved.regions.as_slice() {
        [one] if grid.area.contains(one) => one.clone(),
        [] => {
            return Err(InputError(format!(
                "cell.area must name one region (an ISO 3166-2 code such as SK-BL or CZ-64, or a region or town \
                 name), not the whole country {}",
                resolved.country
            )))
        }
        _ => {
            return Err(InputError(format!(
                "cell.area must name exactly one region of the grid ({}); {area:?} does not",
                grid.area.join(", ")
            )))
        }
    };
    let labels = grid.budget_labels();
    let Some(budget) = labels.iter().find(|l| l.eq_ignore_ascii_case(&budget)) else {
        return Err(InputError(format!(
            "cell.budgetBand must be one of {} (the {} budget bands in {})",
            labels.join(", "),
            grid.category,
            grid.currency
        )));
    };
    let Some(buy_by) = BUY_BY_BANDS.iter().find(|l| l.eq_ignore_ascii_case(&buy_by)) else {
        return Err(InputError(format!("cell.buyByBand must be one of {}", BUY_BY_BANDS.join(", "))));
    };
    Ok((category, Cell { area, budget_band: budget.clone(), buy_by_band: (*buy_by).to_owned() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Budget;

    fn d(s: &str) -> Date {
        clock::parse_date(s).unwrap()
    }

    #[test]
    fn default_grid_labels() {
        let s = Settings::defaults();
        let g = grid(&s, "vehicles");
        assert_eq!(g.budget_labels(), ["0-5000", "5000-10000", "10000-20000", "20000-40000", "40000+", "none"]);
        assert_eq!(g.area.len(), 22);
        assert_eq!(g.currency, "EUR");
        let p = grid(&s, "property");
        assert_eq!(p.budget_labels().first().map(String::as_str), Some("0-50000"));
        assert_eq!(p.budget_labels().get(4).map(String::as_str), Some("400000+"));
    }

    #[test]
    fn bands_by_visible_max_converted() {
        let s = Settings::defaults();
        let g = grid(&s, "vehicles");
        let b = |max: Option<f64>, cur: &str| Budget { max, min: Some(1.0), currency: cur.into() };
        assert_eq!(g.budget_band(&s, None), "none");
        assert_eq!(g.budget_band(&s, Some(&b(None, "EUR"))), "none");
        assert_eq!(g.budget_band(&s, Some(&b(Some(4999.0), "EUR"))), "0-5000");
        assert_eq!(g.budget_band(&s, Some(&b(Some(5000.0), "EUR"))), "5000-10000", "LOW inclusive");
        assert_eq!(g.budget_band(&s, Some(&b(Some(300_000.0), "CZK"))), "10000-20000", "300 000 CZK = 12 000 EUR");
        assert_eq!(g.budget_band(&s, Some(&b(Some(1e9), "EUR"))), "40000+");
        assert_eq!(g.budget_band(&s, Some(&b(Some(10.0), "USD"))), "none", "no rate");
    }

    #[test]
    fn buy_by_bands_by_calendar_months() {
        let today = d("2026-01-31");
        assert_eq!(add_months(today, 1), d("2026-02-28"));
        assert_eq!(add_months(d("2026-11-15"), 3), d("2027-02-15"));
        assert_eq!(buy_by_band(None, today), "none");
        assert_eq!(buy_by_band(Some("2026-01-01"), today), "1m", "past dates are due");
        assert_eq!(buy_by_band(Some("2026-02-28"), today), "1m");
        assert_eq!(buy_by_band(Some("2026-03-01"), today), "3m");
        assert_eq!(buy_by_band(Some("2026-04-30"), today), "3m");
        assert_eq!(buy_by_band(Some("2027-01-31"), today), "12m");
        assert_eq!(buy_by_band(Some("2027-02-01"), today), "later");
    }

    #[test]
    fn request_errors_name_the_field() {
        let s = Settings::defaults();
        let cell = |area: &str, b: &str, y: &str| json!({"area": area, "budgetBand": b, "buyByBand": y});
        let ok = parse_request(&s, &json!({"category": "vehicles", "cell": cell("Brno", "none", "3M")})).unwrap();
        assert_eq!(ok.1, Cell { area: "CZ-64".into(), budget_band: "none".into(), buy_by_band: "3m".into() });
        let cases = [
            (json!({"cell": cell("SK-BL", "none", "1m")}), "category"),
            (json!({"category": "boats", "cell": cell("SK-BL", "none", "1m")}), "category must be one of"),
            (json!({"category": "vehicles"}), "cell is required"),
            (json!({"category": "vehicles", "cell": "SK-BL"}), "cell must be an object"),
            (json!({"category": "vehicles", "cell": cell("Atlantis", "none", "1m")}), "cell.area"),
            (json!({"category": "vehicles", "cell": cell("SK", "none", "1m")}), "cell.area must name one region"),
            (json!({"category": "vehicles", "cell": cell("SK-BL", "1-2", "1m")}), "cell.budgetBand must be one of"),
            (json!({"category": "vehicles", "cell": cell("SK-BL", "none", "2y")}), "cell.buyByBand must be one of"),
            (json!({"category": "vehicles", "cell": {"area": "SK-BL", "budgetBand": "none"}}), "cell.buyByBand"),
            (json!({"category": "vehicles", "cell": cell("SK-BL", "none", "1m"), "x": 1}), "x is not a known"),
        ];
        for (args, want) in cases {
            let e = parse_request(&s, &args).unwrap_err().0;
            assert!(e.contains(want), "{args} → {e}");
        }
        let e = parse_request(&s, &json!({"category": "property", "cell": cell("SK-BL", "0-5000", "1m")})).unwrap_err();
        assert!(e.0.contains("0-50000") && e.0.contains("400000+") && e.0.contains("none"), "{e}");
    }
}
