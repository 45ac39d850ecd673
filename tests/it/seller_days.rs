//! `validUntil` as sellers see it (PROTOCOL.md §2 "Seller pseudonyms and handles"): only
//! its day (00:00 UTC), not the publish minute + 90 days, which two sellers comparing
//! notes could match to tell that their listings are one intent. Checked on the tool
//! (`intent_list_open_intents`), the seller page and the demand summary.

use super::*;

/// The intent's exact validUntil, from the store.
fn exact_until(h: &AppState, id: &str) -> time::OffsetDateTime {
    let rec: isto::records::IntentRecord = h.base.store().read(|rx| rx.intent(id)).unwrap().unwrap();
    rec.valid_until.at()
}

#[test]
fn sellers_see_valid_until_as_its_day_so_two_listings_do_not_join_on_it() {
    let f = fixture();
    let h = &f.holder;
    let a = f.seller("Dealer A", "a@dealer.example", &["vehicles"], &["SK-BL"]);
    f.clock.advance(time::Duration::minutes(3) + time::Duration::seconds(41));
    let (first, _) = f.consent_intent(octavia(json!({})), "anna@example.com");
    f.clock.advance(time::Duration::minutes(7) + time::Duration::seconds(13));
    let (second, _) = f.consent_intent(octavia(json!({})), "bob@example.com");
    let (u1, u2) = (exact_until(h, &first), exact_until(h, &second));
    assert_ne!(u1, u2, "the default validUntil follows the publish time");
    assert_eq!(u1.date(), u2.date(), "the fixture publishes both on one day");

    let list = open_list(h, &a, json!({}));
    assert_eq!(list.len(), 2);
    let day = isto::clock::rfc3339(u1.replace_time(time::Time::MIDNIGHT));
    for item in &list {
        assert_eq!(item["validUntil"], day.as_str(), "only the day: {item}");
    }
    // Neither the tool, the seller page nor the demand summary shows a finer time.
    let (_, _, tool) = call(h, Some(&grant(&a)), "intent_list_open_intents", json!({}));
    let cookie = f.seller_signs_in("a@dealer.example");
    let page = f.get("/seller/intents", Some(&cookie));
    assert_eq!(page.status, StatusCode::OK);
    let cell = json!({"area": "SK-BL", "budgetBand": "10000-20000", "buyByBand": "3m"});
    let (err, _, demand) =
        call(h, Some(&grant(&a)), "intent_demand_summary", json!({"category": "vehicles", "cell": cell}));
    assert!(!err, "{demand}");
    for exact in [u1, u2] {
        let minute = isto::clock::rfc3339(exact);
        let shown = &minute[..16]; // YYYY-MM-DDTHH:MM
        for (what, text) in [("tool", &tool), ("page", &page.body), ("demand", &demand)] {
            assert!(!text.contains(shown), "the {what} shows validUntil {shown}");
        }
    }
}
