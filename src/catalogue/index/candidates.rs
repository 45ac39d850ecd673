//! The candidate offers of an intent that becomes active (PROTOCOL.md §6): a true
//! superset of the offers [`matching::check`] accepts, found with the field `text` and
//! the category and area terms (no ranking, no limit). `text` holds every term of
//! [`matching::text_terms`] of an offer's title, attribute values and description, stop
//! words too ([`analysis`]): each as itself, or as `~` + itself among its stem forms when
//! it has a stem. The inflected forms of each term are read from the term dictionary
//! here (the rule of [`matching::term_hit`], and more), unlike the catalogue search,
//! which looks up one stem form.

use super::analysis::STEM_MARK;
use super::*;

impl OfferIndex {
    /// Clauses that hold exactly when the offer's area lies in `area`
    /// ([`gazetteer::contains`]): the same country, and when `area.regions` is not empty,
    /// at least one region, all of them in `area.regions`.
    fn area_clauses(&self, searcher: &Searcher, area: &AreaObject) -> Result<Vec<Clause>, IndexError> {
        let mut out: Vec<Clause> = vec![(Occur::Must, self.term(self.f.country, &code(&area.country)))];
        if area.regions.is_empty() {
            return Ok(out);
        }
        let wanted: BTreeSet<String> = area.regions.iter().map(|r| code(r)).collect();
        let any: Vec<Clause> = wanted.iter().map(|r| (Occur::Should, self.term(self.f.region, r))).collect();
        out.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        for other in self.region_terms(searcher)?.iter() {
            if !wanted.contains(other) {
                out.push((Occur::MustNot, self.term(self.f.region, other)));
            }
        }
        Ok(out)
    }

    /// Every `region` term of `searcher`'s index state, cached per searcher generation.
    fn region_terms(&self, searcher: &Searcher) -> Result<Arc<BTreeSet<String>>, IndexError> {
        let id = searcher.generation().generation_id();
        if let Some((g, set)) = self.regions.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            if *g == id {
                return Ok(set.clone());
            }
        }
        let set = Arc::new(prefixed_terms(searcher, self.f.region, "", usize::MAX)?);
        *self.regions.lock().unwrap_or_else(PoisonError::into_inner) = Some((id, set.clone()));
        Ok(set)
    }

    fn term(&self, field: Field, text: &str) -> Box<dyn Query> {
        Box::new(TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::Basic))
    }

    #[cfg(any(test, feature = "testkit"))]
    /// [`Self::candidates_for_intent_min`] with at least one of `terms` when there are
    /// any, whatever the ratio (tests and benches).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn candidates_for_intent(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
    ) -> Result<Vec<String>, IndexError> {
        self.candidates(category, area, terms, usize::from(!terms.is_empty()))
    }

    /// A superset of the offers that can match an intent (PROTOCOL.md §6), used when an
    /// intent becomes active: offers of `category` whose area lies in `area` (as
    /// [`gazetteer::contains`]) and that contain as many of `terms` as the ratio
    /// `min_should_match` requires in [`matching::check`] (`hits / terms + 1e-9 >=
    /// min_should_match`), each term `t` counted as [`matching::term_hit`] counts it:
    /// exactly, or (when [`matching::stem`] of `t` is `Some(s)`) a term that starts with
    /// `s` and is at most `len(t) + 3` characters long. `terms` are the intent's
    /// [`matching::StatementTerms::terms`]. Returns offer ids (sorted, no limit).
    ///
    /// # Errors
    /// tantivy errors.
    pub fn candidates_for_intent_min(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
        min_should_match: f64,
    ) -> Result<Vec<String>, IndexError> {
        match matching::engine::min_hits(terms.len(), min_should_match) {
            Some(k) => self.candidates(category, area, terms, k as usize),
            None => Ok(Vec::new()),
        }
    }

    fn candidates(
        &self,
        category: &str,
        area: &AreaObject,
        terms: &[String],
        min_hits: usize,
    ) -> Result<Vec<String>, IndexError> {
        self.settle();
        let searcher = self.reader.searcher();
        let mut clauses = vec![(Occur::Must, self.term(self.f.category, category))];
        clauses.extend(self.area_clauses(&searcher, area)?);
        let forms = |t: &String| -> Result<BTreeSet<String>, IndexError> {
            let mut set = expansions(&searcher, self.f.text, t)?;
            set.insert(t.clone());
            Ok(set)
        };
        let term_set = |set: BTreeSet<String>| -> Box<dyn Query> {
            Box::new(TermSetQuery::new(set.iter().map(|t| Term::from_field_text(self.f.text, t)).collect::<Vec<_>>()))
        };
        if min_hits == 1 {
            let mut all = BTreeSet::new();
            for t in terms {
                all.extend(forms(t)?);
            }
            clauses.push((Occur::Must, term_set(all)));
        } else if min_hits > 1 {
            let mut each: Vec<Clause> = Vec::new();
            for t in terms {
                each.push((Occur::Should, term_set(forms(t)?)));
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(each, min_hits))));
        }
        let mut ids = searcher.search(&BooleanQuery::new(clauses), &AllIds)?;
        ids.sort_unstable();
        Ok(ids)
    }
}

/// The terms of `field` that find the words [`matching::term_hit`] accepts for `term` by
/// its stem `s` ([`matching::stem`]): words that start with `s` and are at most 3
/// characters longer than `term` (`term` itself included). Such a word is indexed as
/// itself when it has no stem forms (a stop word, or a word with a digit), else as its
/// stem forms, among them `~` + the whole word ([`analysis`]): both are read here, the
/// stem forms also of the prefixes of longer words (a superset). Empty for terms without
/// a stem.
fn expansions(searcher: &Searcher, field: Field, term: &str) -> Result<BTreeSet<String>, IndexError> {
    let Some(stem) = matching::stem(term) else { return Ok(BTreeSet::new()) };
    let longest = term.chars().count() + 3;
    let mut out = prefixed_terms(searcher, field, &stem, longest)?;
    out.extend(prefixed_terms(searcher, field, &format!("{STEM_MARK}{stem}"), longest + 1)?);
    Ok(out)
}

/// The terms of `field` in the index that start with `prefix` and have at most
/// `max_chars` characters (every term of the small `region` field: `""`, `usize::MAX`).
fn prefixed_terms(
    searcher: &Searcher,
    field: Field,
    prefix: &str,
    max_chars: usize,
) -> Result<BTreeSet<String>, IndexError> {
    let mut out = BTreeSet::new();
    for seg in searcher.segment_readers() {
        let inv = seg.inverted_index(field)?;
        let mut s = inv.terms().range().ge(prefix.as_bytes()).into_stream()?;
        while s.advance() {
            let key = s.key();
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            if let Ok(t) = std::str::from_utf8(key) {
                if t.chars().count() <= max_chars && !out.contains(t) {
                    out.insert(t.to_owned());
                }
            }
        }
    }
    Ok(out)
}
