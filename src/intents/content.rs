//! The publish rules (PROTOCOL.md §3 `intent_publish_intent`) as typed fields: each
//! field has one parser, shared by a publish ([`Intents::parse_publish`]) and an update
//! ([`Intents::parse_changes`]); the rules that relate fields to each other
//! ([`Intents::check_content`]) run on the typed [`IntentContent`] either makes. An
//! update never turns the stored intent back into input: its changes are parsed alone
//! and laid over the stored content ([`IntentChanges::apply`]), so a stored value is
//! never re-read, and nothing is removed but what the call removes (`null`).

use super::Intents;
use crate::base::Result;
use crate::clock;
use crate::protocol::input::{self, Fields, InputError, UpdateArgs};
use crate::protocol::{AreaObject, Budget, Visibility};
use crate::records::{IntentContent, Stamp};
use serde_json::{Map, Value};
use time::OffsetDateTime;

/// A validated `intent_publish_intent` input (PROTOCOL.md §3): the content and the hidden
/// limit (sealed when stored).
#[derive(Debug, Clone)]
pub struct PublishInput {
    pub(super) content: IntentContent,
    pub(super) hidden_limit: Option<f64>,
}

/// One field of an update: left as it is, set, or removed (`null`, for the fields
/// PROTOCOL.md §3 lets an update remove).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Change<T> {
    /// Not in the call.
    #[default]
    Keep,
    /// A new value.
    Set(T),
    /// `null`: removed.
    Remove,
}

impl<T> Change<T> {
    /// Whether the call gives this field (a value or `null`).
    pub fn given(&self) -> bool {
        !matches!(self, Change::Keep)
    }

    /// The field after the change, from its value `old`.
    fn over(self, old: Option<T>) -> Option<T> {
        match self {
            Change::Keep => old,
            Change::Set(v) => Some(v),
            Change::Remove => None,
        }
    }
}

/// The changes of an `intent_update_intent` call (PROTOCOL.md §3), each field parsed by
/// the publish rules for that field.
#[derive(Debug, Clone, Default)]
pub struct IntentChanges {
    /// A new statement (the language is detected again from it).
    pub statement: Option<String>,
    /// New criteria: the category they name (else classified from the statement) and
    /// the other keys; `Remove` keeps only the category.
    pub criteria: Change<(Option<String>, Map<String, Value>)>,
    /// A new area.
    pub area: Option<AreaObject>,
    /// A new budget, or none.
    pub budget: Change<Budget>,
    /// A new hidden limit, or none.
    pub hidden_limit: Change<f64>,
    /// A new buy-by date, or none.
    pub buy_by: Change<String>,
    /// A new validUntil (the caller decides whether it applies at once).
    pub valid_until: Option<OffsetDateTime>,
    /// A new visibility.
    pub visibility: Option<Visibility>,
}

impl IntentChanges {
    /// Whether anything but `validUntil` changes (content the sellers and matching see,
    /// or the hidden limit).
    pub fn content(&self) -> bool {
        self.statement.is_some()
            || self.criteria.given()
            || self.area.is_some()
            || self.budget.given()
            || self.hidden_limit.given()
            || self.buy_by.given()
            || self.visibility.is_some()
    }

    /// Whether the only change is the hidden limit (nothing a seller sees).
    pub fn hidden_limit_only(&self) -> bool {
        self.hidden_limit.given()
            && self.valid_until.is_none()
            && !IntentChanges { hidden_limit: Change::Keep, ..self.clone() }.content()
    }

    /// `old` with these changes laid over it, `validUntil` excepted (the caller applies
    /// it when it moves earlier). The category is the new criteria's, else the old one
    /// when the criteria are kept or removed, else classified from the statement.
    ///
    /// # Errors
    /// [`InputError`] when new criteria name no category and the statement does not say
    /// it.
    pub fn apply(&self, old: &IntentContent, default_language: &str) -> Result<IntentContent, InputError> {
        let statement = self.statement.clone().unwrap_or_else(|| old.statement.clone());
        let (category, criteria) = match &self.criteria {
            Change::Keep => (old.category.clone(), old.criteria.clone()),
            Change::Remove => (old.category.clone(), Map::new()),
            Change::Set((cat, c)) => (category_of(cat.clone(), &statement)?, c.clone()),
        };
        Ok(IntentContent {
            language: input::detect_language(&statement, default_language),
            statement,
            category,
            criteria,
            area: self.area.clone().unwrap_or_else(|| old.area.clone()),
            budget: self.budget.clone().over(old.budget.clone()),
            buy_by: self.buy_by.clone().over(old.buy_by.clone()),
            valid_until: old.valid_until,
            visibility: self.visibility.unwrap_or(old.visibility),
        })
    }
}

/// The category named, else the statement's ([`input::classify`]).
fn category_of(named: Option<String>, statement: &str) -> Result<String, InputError> {
    match named {
        Some(c) => Ok(c),
        None => input::classify(statement).map(str::to_owned).ok_or_else(|| {
            InputError(
                "criteria.category is required: the statement does not say whether it is vehicles or property".into(),
            )
        }),
    }
}

impl Intents {
    /// Validates `intent_publish_intent` arguments (PROTOCOL.md §3). There is no
    /// contact field; any unknown property is refused.
    ///
    /// # Errors
    /// [`crate::base::ServiceError::Input`] naming the field and rule.
    pub fn parse_publish(&self, args: &Value) -> Result<PublishInput> {
        let now = self.now();
        let mut f = Fields::new(args, "")?;
        let statement = f.req_text("statement", input::STATEMENT_MAX)?;
        let (cat, criteria) = match f.get("criteria") {
            Some(c) => input::parse_criteria(c)?,
            None => (None, Map::new()),
        };
        let area = match f.get("area") {
            Some(a) => input::parse_area(a, "area")?,
            None => {
                return Err(InputError(
                    "area is required (a country, region or place name, e.g. \"SK-BL\" or \"Brno\")".into(),
                )
                .into())
            }
        };
        let budget = f.get("budget").map(|b| self.parse_budget(b)).transpose()?;
        let hidden_limit = f.opt_positive("hiddenLimit")?;
        let buy_by = f.get("buyBy").map(|v| parse_buy_by(v, now)).transpose()?;
        let valid_until = match f.get("validUntil") {
            None => now + time::Duration::days(i64::from(self.base.settings().default_validity_days)),
            Some(v) => self.parse_valid_until(v, now)?,
        };
        let visibility = f.get("visibility").map(input::parse_visibility).transpose()?.unwrap_or_default();
        f.finish(". Contact data is never accepted here: the person enters it on the holder's consent page.")?;
        let category = category_of(cat, &statement)?;
        let content = IntentContent {
            language: input::detect_language(&statement, &self.base.settings().default_language),
            statement,
            category,
            criteria,
            area,
            budget,
            buy_by,
            valid_until: Stamp::of(valid_until),
            visibility,
        };
        check_content(&content, hidden_limit)?;
        Ok(PublishInput { content, hidden_limit })
    }

    /// Parses the changes of an update (see the module docs): each field by the publish
    /// rules for it; `null` only where [`UpdateArgs::parse`] allowed it.
    ///
    /// # Errors
    /// [`crate::base::ServiceError::Input`] naming the field and rule.
    pub fn parse_changes(&self, args: &UpdateArgs) -> Result<IntentChanges> {
        let now = self.now();
        let mut c = IntentChanges::default();
        let all = Value::Object(args.changes.clone());
        let mut f = Fields::new(&all, "")?;
        for (key, v) in &args.changes {
            let null = v.is_null();
            match key.as_str() {
                "statement" => c.statement = Some(f.req_text("statement", input::STATEMENT_MAX)?),
                "criteria" if null => c.criteria = Change::Remove,
                "criteria" => c.criteria = Change::Set(input::parse_criteria(v)?),
                "area" => c.area = Some(input::parse_area(v, "area")?),
                "budget" if null => c.budget = Change::Remove,
                "budget" => c.budget = Change::Set(self.parse_budget(v)?),
                "hiddenLimit" => c.hidden_limit = f.opt_positive("hiddenLimit")?.map_or(Change::Remove, Change::Set),
                "buyBy" if null => c.buy_by = Change::Remove,
                "buyBy" => c.buy_by = Change::Set(parse_buy_by(v, now)?),
                "validUntil" => c.valid_until = Some(self.parse_valid_until(v, now)?),
                "visibility" => c.visibility = Some(input::parse_visibility(v)?),
                other => {
                    return Err(InputError(format!("{} is not a property an update changes", input::echo(other))).into())
                }
            }
        }
        Ok(c)
    }

    fn parse_budget(&self, v: &Value) -> Result<Budget, InputError> {
        input::parse_budget(v, &self.base.settings().default_currency, &self.base.currencies())
    }

    /// `validUntil`: RFC 3339, in the future, at most `max_validity_days` from `now`.
    fn parse_valid_until(&self, v: &Value, now: OffsetDateTime) -> Result<OffsetDateTime, InputError> {
        let Value::String(s) = v else { return Err(InputError("validUntil must be an RFC 3339 string".into())) };
        let t = clock::parse_rfc3339(s).map_err(|m| InputError(format!("validUntil {m}")))?;
        if t <= now {
            return Err(InputError("validUntil must be in the future".into()));
        }
        let max_days = self.base.settings().max_validity_days;
        if t > now + time::Duration::days(i64::from(max_days)) {
            return Err(InputError(format!("validUntil must be at most {max_days} days from now")));
        }
        Ok(t)
    }
}

/// The rules between fields (PROTOCOL.md §3): the criteria keys of the category, finite
/// budget bounds, and a hidden limit given in this call (positive, at most 10^12) not
/// below `budget.min`. The parsers check each field too; this holds for changes made
/// by code as well.
///
/// # Errors
/// [`InputError`] naming the field and rule.
pub(super) fn check_content(c: &IntentContent, hidden_limit: Option<f64>) -> Result<(), InputError> {
    input::check_criteria_keys(&c.category, &c.criteria)?;
    if let Some(b) = &c.budget {
        for (field, v) in [("budget.max", b.max), ("budget.min", b.min)] {
            if v.is_some_and(|n| !n.is_finite()) {
                return Err(InputError(format!("{field} must be a finite number")));
            }
        }
    }
    if hidden_limit.is_some_and(|h| !(h.is_finite() && h > 0.0 && h <= 1e12)) {
        return Err(InputError("hiddenLimit must be a positive number up to 10^12".into()));
    }
    if let (Some(h), Some(min)) = (hidden_limit, c.budget.as_ref().and_then(|b| b.min)) {
        if h < min {
            return Err(InputError("hiddenLimit must not be below budget.min".into()));
        }
    }
    Ok(())
}

/// `buyBy`: a `YYYY-MM-DD` date, not before `now`'s date.
fn parse_buy_by(v: &Value, now: OffsetDateTime) -> Result<String, InputError> {
    let Value::String(s) = v else { return Err(InputError("buyBy must be a string such as 2027-01-31".into())) };
    let d = clock::parse_date(s).map_err(|m| InputError(format!("buyBy {m}")))?;
    if d < now.date() {
        return Err(InputError("buyBy must not be in the past".into()));
    }
    Ok(clock::date_string(d))
}
