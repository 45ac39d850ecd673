//! [`IntentContent`]: what the person asked for (PROTOCOL.md §2 Intent, the fields a
//! publish gives and an update changes), held once. The stored record
//! ([`super::IntentRecord`], which keeps it flattened: its fields are the record's), the
//! public view ([`IntentContent::to_intent`]: every tool result and page), the sellers'
//! pseudonymous view and the matching engine's entry are all built from it.

use super::Stamp;
use crate::protocol::{AreaObject, Budget, Intent, Status, Visibility};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the person asked for (see the module docs). Validated when made (the publish
/// rules, `intents`), so every value here is one a publish accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentContent {
    /// The buyer's words.
    pub statement: String,
    /// Category key (`vehicles`, `property`).
    pub category: String,
    /// Criteria without `category`.
    pub criteria: Map<String, Value>,
    /// Normalised area.
    pub area: AreaObject,
    /// Visible budget.
    pub budget: Option<Budget>,
    /// The date to buy by, `YYYY-MM-DD` (a calendar date, not an instant).
    pub buy_by: Option<String>,
    /// Until when the intent stands.
    pub valid_until: Stamp,
    /// Visibility.
    pub visibility: Visibility,
    /// BCP 47 tag, detected from the statement.
    pub language: String,
}

impl IntentContent {
    /// The criteria as PROTOCOL.md §2 shows them: with `category`.
    pub fn criteria_with_category(&self) -> Map<String, Value> {
        with_category(self.criteria.clone(), &self.category)
    }

    /// The public view (PROTOCOL.md §2 Intent) of this content as intent `id` with
    /// `status`, whether it has a hidden limit (never its value), its `(createdAt,
    /// updatedAt)` and `extensions`: [`IntentContent::into_intent`] of a copy.
    pub fn to_intent(
        &self,
        id: &str,
        status: Status,
        has_hidden_limit: bool,
        times: (Stamp, Stamp),
        extensions: Value,
    ) -> Intent {
        self.clone().into_intent(id.to_owned(), status, has_hidden_limit, times, extensions)
    }

    /// [`IntentContent::to_intent`], the content moved into the view (no copy of its
    /// texts and criteria).
    pub fn into_intent(
        self,
        id: String,
        status: Status,
        has_hidden_limit: bool,
        (created_at, updated_at): (Stamp, Stamp),
        extensions: Value,
    ) -> Intent {
        let criteria = with_category(self.criteria, &self.category);
        Intent {
            id,
            status,
            statement: self.statement,
            category: self.category,
            criteria,
            area: self.area,
            budget: self.budget,
            has_hidden_limit,
            buy_by: self.buy_by,
            valid_until: self.valid_until.rfc3339(),
            visibility: self.visibility,
            language: self.language,
            created_at: created_at.rfc3339(),
            updated_at: updated_at.rfc3339(),
            extensions,
        }
    }
}

/// `criteria` with `category` added, as PROTOCOL.md §2 shows an intent's criteria.
fn with_category(mut criteria: Map<String, Value>, category: &str) -> Map<String, Value> {
    criteria.insert("category".into(), Value::String(category.to_owned()));
    criteria
}
