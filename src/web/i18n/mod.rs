//! Every UI string of the holder's pages, per language (Slovak, Czech, English): one
//! [`Ui`] table per language ([`ui`]), with the texts of the account pages
//! ([`AccountText`]), the OAuth authorization page ([`AuthorizeText`]), the signed-in
//! buyer's pages ([`MineText`]) and the sellers' pages ([`DemandText`],
//! [`SellerText`]) as parts of it; and the one language negotiation of the pages.
//!
//! A page about an intent is in the intent's language ([`page_lang`]); any other page
//! is in the browser's preferred language ([`request_lang`], RFC 9110 §12.5.4
//! `Accept-Language` with q-values); either falls back to the holder's default language
//! when that is `sk`, `cs` or `en`, else to English.

use axum::http::{header, HeaderMap};

/// The languages the pages are written in.
mod account;
mod links;
mod pages;

pub use account::AccountText;
use account::{ACCOUNT_CS, ACCOUNT_EN, ACCOUNT_SK};
pub use links::LinkText;
use links::{LINKS_CS, LINKS_EN, LINKS_SK};
use pages::*;
pub use pages::{AuthorizeText, CadenceText, DemandText, MineText, SellerText};

pub use crate::protocol::consent::LANGUAGES;

/// One of [`LANGUAGES`] equal to `s`, if any (a form's `lang` field).
pub fn language(s: &str) -> Option<&'static str> {
    LANGUAGES.into_iter().find(|l| *l == s)
}

/// The one of [`LANGUAGES`] that is the primary subtag of a BCP 47 tag or language
/// range (`cs-CZ` → `cs`; RFC 4647 §3.4 lookup), if any.
fn known(tag: &str) -> Option<&'static str> {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default().trim().to_ascii_lowercase();
    LANGUAGES.into_iter().find(|l| *l == primary)
}

/// The holder's fallback language: `default` when it is one of [`LANGUAGES`], else `en`.
fn fallback(default: &str) -> &'static str {
    known(default).unwrap_or("en")
}

/// The page language for an intent language (a BCP 47 tag) and the holder's default:
/// the tag's primary subtag when it is `sk`, `cs` or `en`, else the default when that
/// is one of them, else `en`.
pub fn page_lang(intent_lang: Option<&str>, default: &str) -> &'static str {
    intent_lang.and_then(known).unwrap_or_else(|| fallback(default))
}

/// Content negotiation of the page language (RFC 9110 §12.5.4): of the
/// `Accept-Language` ranges that name one of [`LANGUAGES`] (by primary subtag), the one
/// with the highest `q` (default 1; the first one on a tie); `*` stands for the
/// holder's default; `q=0` refuses a range, and an item with a malformed `q` is ignored.
/// Without an acceptable range: the holder's default when it is one of [`LANGUAGES`],
/// else `en`.
pub fn negotiate(accept_language: Option<&str>, default: &str) -> &'static str {
    let fallback = fallback(default);
    let mut best: Option<(f32, &'static str)> = None;
    for item in accept_language.unwrap_or_default().split(',') {
        let mut parts = item.split(';');
        let range = parts.next().unwrap_or_default().trim();
        let mut q = Some(1.0_f32);
        for p in parts {
            let p = p.trim();
            if let Some(v) = p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                q = v.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q));
            }
        }
        let Some(q) = q.filter(|q| *q > 0.0) else { continue };
        let lang = if range == "*" { Some(fallback) } else { known(range) };
        if let Some(lang) = lang {
            if best.is_none_or(|(b, _)| q > b) {
                best = Some((q, lang));
            }
        }
    }
    best.map_or(fallback, |(_, l)| l)
}

/// The page language of a request: [`negotiate`] over its `Accept-Language` header.
pub fn request_lang(headers: &HeaderMap, default: &str) -> &'static str {
    negotiate(headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()), default)
}

/// The language a page's query chooses (`?lang=sk|cs|en`, the home page's language
/// switcher; issue 13 point 4): the first `lang` parameter when it is one of
/// [`LANGUAGES`], else none (an unknown value leaves the choice to `Accept-Language`).
pub fn query_lang(query: Option<&str>) -> Option<&'static str> {
    query?.split('&').find_map(|p| p.strip_prefix("lang=")).and_then(language)
}

/// The name of each of [`LANGUAGES`] in that language (the language switcher's links).
pub const LANGUAGE_NAMES: [(&str, &str); 3] = [("sk", "Slovenčina"), ("cs", "Čeština"), ("en", "English")];

/// UI strings of one language.
#[derive(Debug)]
pub struct Ui {
    /// `lang` attribute value.
    pub lang: &'static str,
    /// The account pages' texts (sign-in, sign-up, password).
    pub account: &'static AccountText,
    /// The OAuth authorization page's texts.
    pub authorize: &'static AuthorizeText,
    /// The sellers' open-intents page's texts.
    pub sellers: &'static SellerText,
    /// The sellers' demand heat map's texts.
    pub demand: &'static DemandText,
    /// The signed-in buyer's pages' texts (`/me`, renewals).
    pub mine: &'static MineText,
    /// The delivery cadence form's texts (results page, the page after confirming).
    pub cadence: &'static CadenceText,
    /// The texts of used, ended and leaked links (the way forward, the cadence change
    /// confirmed by e-mail).
    pub links: &'static LinkText,
    /// Link text of the skip link.
    pub skip: &'static str,
    /// Home page: what the holder is, in 2–3 sentences (issue 13 point 4).
    pub home_intro: &'static str,
    /// Home page: where assistants connect (followed by the MCP endpoint URL).
    pub home_mcp: &'static str,
    /// Home page: how a person gets involved (before the sign-in, sign-up and
    /// "my intents" links).
    pub home_people: &'static str,
    /// Home page: heading of the part for people.
    pub home_people_heading: &'static str,
    /// Home page: heading of the part for assistants.
    pub home_assistants_heading: &'static str,
    /// Accessible name of the language switcher.
    pub language_nav: &'static str,
    /// 404 page of an unknown address: what happened.
    pub no_such_page: &'static str,
    /// Link text of the link home on the 404 pages.
    pub home_link: &'static str,
    /// Label of the statement.
    pub statement: &'static str,
    /// Label of the category.
    pub category: &'static str,
    /// Label of the criteria table.
    pub criteria: &'static str,
    /// Criteria table header: attribute.
    pub criterion: &'static str,
    /// Criteria table header: value.
    pub value: &'static str,
    /// Label of the area.
    pub area: &'static str,
    /// Label of the budget.
    pub budget: &'static str,
    /// "up to" before a budget maximum.
    pub up_to: &'static str,
    /// "from" before a budget minimum.
    pub from: &'static str,
    /// Label of buyBy.
    pub buy_by: &'static str,
    /// Label of validUntil.
    pub valid_until: &'static str,
    /// Label of the status.
    pub status: &'static str,
    /// The sentence shown when a hidden limit is set (never its value).
    pub hidden_limit: &'static str,
    /// Consent page title.
    pub consent_title: &'static str,
    /// Consent page introduction.
    pub consent_intro: &'static str,
    /// Heading of the consent text.
    pub consent_text: &'static str,
    /// Label of the e-mail field.
    pub email_label: &'static str,
    /// Hint under the e-mail field.
    pub email_hint: &'static str,
    /// Label of the consent checkbox.
    pub accept_label: &'static str,
    /// The consent submit button.
    pub consent_button: &'static str,
    /// Closing note on the consent page.
    pub consent_ignore: &'static str,
    /// Error: the checkbox was not ticked.
    pub accept_required: &'static str,
    /// Error: the e-mail address is malformed.
    pub email_invalid: &'static str,
    /// "Check your e-mail" page title.
    pub sent_title: &'static str,
    /// "Check your e-mail" page body.
    pub sent_body: &'static str,
    /// "Check your e-mail" page: spam folder hint.
    pub sent_spam: &'static str,
    /// Page title: someone already used the consent link.
    pub taken_title: &'static str,
    /// Body: someone already used the consent link.
    pub taken_body: &'static str,
    /// Title of the page shown when an address got too many consent e-mails.
    pub throttled_title: &'static str,
    /// Body of that page.
    pub throttled_body: &'static str,
    /// Body: too many consent submissions from the visitor's network (issue 9 point 3).
    pub throttled_client_body: &'static str,
    /// Body: the holder sent too many confirmation e-mails in the last hour.
    pub throttled_global_body: &'static str,
    /// When to try again: `{minutes}` and `{time}` (HH:MM UTC) are filled in.
    pub throttled_retry: &'static str,
    /// Page title: the person holds the most active intents one may (PROTOCOL.md §3
    /// "Limits").
    pub person_cap_title: &'static str,
    /// Body of that page; `{n}` is the limit. Names no address and no intent.
    pub person_cap_body: &'static str,
    /// Page title: the link expired or the request was withdrawn.
    pub closed_title: &'static str,
    /// Body: the link expired or the request was withdrawn.
    pub closed_body: &'static str,
    /// Confirmation page title.
    pub confirm_title: &'static str,
    /// Confirmation page introduction.
    pub confirm_intro: &'static str,
    /// The Confirm button.
    pub confirm_button: &'static str,
    /// The request is already active.
    pub already_active: &'static str,
    /// Title after confirming.
    pub active_title: &'static str,
    /// Body after confirming.
    pub active_body: &'static str,
    /// Results page title.
    pub results_title: &'static str,
    /// Results page: heading of the delivered offers.
    pub delivered_offers: &'static str,
    /// Results page: nothing delivered yet.
    pub no_offers: &'static str,
    /// Results table header: price.
    pub price: &'static str,
    /// Results table header: place.
    pub place: &'static str,
    /// Results table header: seller.
    pub seller: &'static str,
    /// Results table header: delivered at.
    pub delivered: &'static str,
    /// Seed rule 2: offers come from an aggregator.
    pub aggregator: &'static str,
    /// Link to the withdraw page.
    pub withdraw_link: &'static str,
    /// Withdraw page title.
    pub withdraw_title: &'static str,
    /// Withdraw page introduction.
    pub withdraw_intro: &'static str,
    /// The Withdraw button.
    pub withdraw_button: &'static str,
    /// Title after withdrawing.
    pub withdrawn_title: &'static str,
    /// Body after withdrawing.
    pub withdrawn_body: &'static str,
    /// The request has ended already.
    pub ended: &'static str,
    /// 404 title.
    pub not_found_title: &'static str,
    /// 404 body.
    pub not_found_body: &'static str,
    /// 403 (CSRF) title.
    pub csrf_title: &'static str,
    /// 403 (CSRF) body.
    pub csrf_body: &'static str,
    /// 500 title.
    pub error_title: &'static str,
    /// 500 body.
    pub error_body: &'static str,
    /// Status names, in the order of [`crate::protocol::Status`].
    pub statuses: [&'static str; 5],
    /// Category names: vehicles, property.
    pub categories: [&'static str; 2],
    /// Country names: SK, CZ.
    pub countries: [&'static str; 2],
    /// Attribute labels (PROTOCOL.md §2 criteria keys).
    pub attributes: &'static [(&'static str, &'static str)],
    /// Plain-text answer of the RFC 8058 one-click unsubscribe.
    pub unsubscribed: &'static str,
}

static SK: Ui = Ui {
    lang: "sk",
    account: &ACCOUNT_SK,
    authorize: &AUTHORIZE_SK,
    sellers: &SELLER_SK,
    demand: &DEMAND_SK,
    mine: &MINE_SK,
    cadence: &CADENCE_SK,
    links: &LINKS_SK,
    skip: "Preskočiť na obsah",
    home_intro: "Tento server je držiteľ dopytov Isto Intents. AI asistenti sem zverejňujú dopyty svojich ľudí, človek každý dopyt potvrdí e-mailom a zodpovedajúce ponuky mu potom prichádzajú e-mailom. Kontakt ani skrytý cenový limit nikdy neopustia tento server.",
    home_mcp: "AI asistenti sa k nemu pripájajú cez MCP na tejto adrese (skopírujte ju do nastavení asistenta):",
    home_people: "Ak vám asistent poslal odkaz na tento server, otvorte ho: tam dopyt potvrdíte svojím e-mailom. S účtom vidíte všetky svoje dopyty na jednom mieste.",
    home_people_heading: "Pre ľudí",
    home_assistants_heading: "Pre asistentov",
    language_nav: "Jazyk",
    no_such_page: "Na tejto adrese nie je žiadna stránka. Skontrolujte adresu alebo pokračujte na úvodnú stránku.",
    home_link: "Na úvodnú stránku",
    statement: "Dopyt",
    category: "Kategória",
    criteria: "Kritériá",
    criterion: "Vlastnosť",
    value: "Hodnota",
    area: "Oblasť",
    budget: "Rozpočet",
    up_to: "do",
    from: "od",
    buy_by: "Kúpiť do",
    valid_until: "Platí do",
    status: "Stav",
    hidden_limit: "Je nastavený skrytý cenový limit. Predajcovia ho nevidia; posielame vám len ponuky, ktoré ho neprekračujú.",
    consent_title: "Zverejnenie dopytu",
    consent_intro: "Asistent pre vás pripravil tento dopyt. Aktívny bude až potom, čo tu udelíte súhlas a potvrdíte svoju e-mailovú adresu.",
    consent_text: "Súhlas",
    email_label: "Vaša e-mailová adresa",
    email_hint: "Pošleme na ňu potvrdzovací odkaz a potom ponuky. Predajcovia ju neuvidia.",
    accept_label: "Súhlasím s textom vyššie",
    consent_button: "Udeliť súhlas",
    consent_ignore: "Ak ste o nič nežiadali, stránku zatvorte; bez vášho súhlasu sa nič nestane.",
    accept_required: "Ak chcete udeliť súhlas, zaškrtnite políčko „Súhlasím s textom vyššie“.",
    email_invalid: "Zadajte e-mailovú adresu v tvare meno@example.com.",
    sent_title: "Skontrolujte si e-mail",
    sent_body: "Poslali sme vám e-mail s potvrdzovacím odkazom. Dopyt bude aktívny, keď odkaz otvoríte a stlačíte Potvrdiť.",
    sent_spam: "Ak e-mail do niekoľkých minút nepríde, pozrite sa do priečinka s nevyžiadanou poštou.",
    throttled_title: "Priveľa žiadostí",
    throttled_body: "Na túto adresu sme za poslednú hodinu poslali priveľa potvrdzovacích e-mailov.",
    throttled_client_body: "Z vašej siete prišlo za poslednú hodinu priveľa súhlasov.",
    throttled_global_body: "Za poslednú hodinu sme poslali priveľa potvrdzovacích e-mailov (všetkým adresám spolu).",
    throttled_retry: "Skúste to znova o {minutes} min (o {time}).",
    person_cap_title: "Priveľa aktívnych dopytov",
    person_cap_body: "Táto e-mailová adresa (alebo účet) už má najviac aktívnych dopytov, koľko tu môže mať jedna osoba: {n}. Zrušte niektorý z nich (každý e-mail o dopyte obsahuje odkaz na zrušenie; prihlásení ich nájdu v časti Moje dopyty) a skúste to znova.",
    taken_title: "Tento odkaz už bol použitý",
    taken_body: "Na tomto odkaze už niekto udelil súhlas. Ak ste to boli vy, hľadajte potvrdzovací e-mail. Odkaz sa dá použiť len raz.",
    closed_title: "Platnosť odkazu vypršala alebo bol dopyt zrušený",
    closed_body: "S týmto odkazom sa už nedá nič urobiť. Ak dopyt stále chcete, požiadajte asistenta, aby ho zverejnil znova.",
    confirm_title: "Potvrďte svoj dopyt",
    confirm_intro: "Tlačidlom Potvrdiť dopyt aktivujete. Ponuky, ktoré mu zodpovedajú, vám budú chodiť e-mailom.",
    confirm_button: "Potvrdiť",
    already_active: "Tento dopyt je už aktívny.",
    active_title: "Váš dopyt je aktívny",
    active_body: "Ponuky vám budú chodiť e-mailom. Každý e-mail obsahuje odkaz, ktorým dopyt zrušíte.",
    results_title: "Ponuky pre váš dopyt",
    delivered_offers: "Doručené ponuky",
    no_offers: "Zatiaľ žiadne ponuky. Nové vám prídu e-mailom.",
    price: "Cena",
    place: "Miesto",
    seller: "Predajca",
    delivered: "Doručené",
    aggregator: "Ponuky pochádzajú od trhového agregátora a nemusia byť úplné.",
    withdraw_link: "Zrušiť tento dopyt",
    withdraw_title: "Zrušenie dopytu",
    withdraw_intro: "Tlačidlom Zrušiť dopyt okamžite ukončíte. Ďalšie ponuky vám už neprídu.",
    withdraw_button: "Zrušiť",
    withdrawn_title: "Dopyt je zrušený",
    withdrawn_body: "Ďalšie ponuky vám už neprídu.",
    ended: "Tento dopyt sa už skončil (vypršal alebo bol zrušený).",
    not_found_title: "Stránka sa nenašla",
    not_found_body: "Odkaz je nesprávny alebo už neplatí. Skontrolujte, či ste ho skopírovali celý.",
    csrf_title: "Platnosť formulára vypršala",
    csrf_body: "Formulár vypršal, načítajte stránku znova a skúste to ešte raz.",
    error_title: "Niečo sa pokazilo",
    error_body: "Požiadavku sa nepodarilo dokončiť. Skúste to o chvíľu znova.",
    statuses: ["čaká na súhlas", "čaká na potvrdenie e-mailu", "aktívny", "platnosť vypršala", "zrušený"],
    categories: ["Vozidlá", "Nehnuteľnosti"],
    countries: ["Slovensko", "Česko"],
    attributes: &[
        ("make", "Značka"),
        ("model", "Model"),
        ("body", "Karoséria"),
        ("fuel", "Palivo"),
        ("transmission", "Prevodovka"),
        ("year", "Rok výroby"),
        ("mileageKm", "Najazdené (km)"),
        ("powerKw", "Výkon (kW)"),
        ("color", "Farba"),
        ("type", "Typ"),
        ("transaction", "Transakcia"),
        ("disposition", "Dispozícia"),
        ("rooms", "Počet izieb"),
        ("floorAreaM2", "Úžitková plocha (m²)"),
        ("landAreaM2", "Plocha pozemku (m²)"),
        ("floor", "Poschodie"),
    ],
    unsubscribed: "Dopyt je zrušený. Ďalšie e-maily k nemu už neprídu.",
};

static CS: Ui = Ui {
    lang: "cs",
    account: &ACCOUNT_CS,
    authorize: &AUTHORIZE_CS,
    sellers: &SELLER_CS,
    demand: &DEMAND_CS,
    mine: &MINE_CS,
    cadence: &CADENCE_CS,
    links: &LINKS_CS,
    skip: "Přeskočit na obsah",
    home_intro: "Tento server je držitel poptávek Isto Intents. AI asistenti sem zveřejňují poptávky svých lidí, člověk každou poptávku potvrdí e-mailem a odpovídající nabídky mu pak chodí e-mailem. Kontakt ani skrytý cenový limit nikdy neopustí tento server.",
    home_mcp: "AI asistenti se k němu připojují přes MCP na této adrese (zkopírujte ji do nastavení asistenta):",
    home_people: "Pokud vám asistent poslal odkaz na tento server, otevřete jej: tam poptávku potvrdíte svým e-mailem. S účtem vidíte všechny své poptávky na jednom místě.",
    home_people_heading: "Pro lidi",
    home_assistants_heading: "Pro asistenty",
    language_nav: "Jazyk",
    no_such_page: "Na této adrese není žádná stránka. Zkontrolujte adresu nebo pokračujte na úvodní stránku.",
    home_link: "Na úvodní stránku",
    statement: "Poptávka",
    category: "Kategorie",
    criteria: "Kritéria",
    criterion: "Vlastnost",
    value: "Hodnota",
    area: "Oblast",
    budget: "Rozpočet",
    up_to: "do",
    from: "od",
    buy_by: "Koupit do",
    valid_until: "Platí do",
    status: "Stav",
    hidden_limit: "Je nastaven skrytý cenový limit. Prodejci ho nevidí; posíláme vám jen nabídky, které ho nepřekračují.",
    consent_title: "Zveřejnění poptávky",
    consent_intro: "Asistent pro vás připravil tuto poptávku. Aktivní bude teprve poté, co zde udělíte souhlas a potvrdíte svou e-mailovou adresu.",
    consent_text: "Souhlas",
    email_label: "Vaše e-mailová adresa",
    email_hint: "Pošleme na ni potvrzovací odkaz a potom nabídky. Prodejci ji neuvidí.",
    accept_label: "Souhlasím s textem výše",
    consent_button: "Udělit souhlas",
    consent_ignore: "Pokud jste o nic nežádali, stránku zavřete; bez vašeho souhlasu se nic nestane.",
    accept_required: "Chcete-li udělit souhlas, zaškrtněte políčko „Souhlasím s textem výše“.",
    email_invalid: "Zadejte e-mailovou adresu ve tvaru jmeno@example.com.",
    sent_title: "Zkontrolujte si e-mail",
    sent_body: "Poslali jsme vám e-mail s potvrzovacím odkazem. Poptávka bude aktivní, až odkaz otevřete a stisknete Potvrdit.",
    sent_spam: "Pokud e-mail do několika minut nepřijde, podívejte se do složky s nevyžádanou poštou.",
    throttled_title: "Příliš mnoho žádostí",
    throttled_body: "Na tuto adresu jsme za poslední hodinu poslali příliš mnoho potvrzovacích e-mailů.",
    throttled_client_body: "Z vaší sítě přišlo za poslední hodinu příliš mnoho souhlasů.",
    throttled_global_body: "Za poslední hodinu jsme poslali příliš mnoho potvrzovacích e-mailů (všem adresám dohromady).",
    throttled_retry: "Zkuste to znovu za {minutes} min (v {time}).",
    person_cap_title: "Příliš mnoho aktivních poptávek",
    person_cap_body: "Tato e-mailová adresa (nebo účet) už má nejvíc aktivních poptávek, kolik zde může mít jedna osoba: {n}. Zrušte některou z nich (každý e-mail o poptávce obsahuje odkaz na zrušení; přihlášení je najdou v části Moje poptávky) a zkuste to znovu.",
    taken_title: "Tento odkaz již byl použit",
    taken_body: "Na tomto odkazu již někdo udělil souhlas. Pokud jste to byli vy, hledejte potvrzovací e-mail. Odkaz lze použít jen jednou.",
    closed_title: "Platnost odkazu vypršela nebo byla poptávka zrušena",
    closed_body: "S tímto odkazem již nelze nic udělat. Pokud poptávku stále chcete, požádejte asistenta, aby ji zveřejnil znovu.",
    confirm_title: "Potvrďte svou poptávku",
    confirm_intro: "Tlačítkem Potvrdit poptávku aktivujete. Nabídky, které jí odpovídají, vám budou chodit e-mailem.",
    confirm_button: "Potvrdit",
    already_active: "Tato poptávka je již aktivní.",
    active_title: "Vaše poptávka je aktivní",
    active_body: "Nabídky vám budou chodit e-mailem. Každý e-mail obsahuje odkaz, kterým poptávku zrušíte.",
    results_title: "Nabídky pro vaši poptávku",
    delivered_offers: "Doručené nabídky",
    no_offers: "Zatím žádné nabídky. Nové vám přijdou e-mailem.",
    price: "Cena",
    place: "Místo",
    seller: "Prodejce",
    delivered: "Doručeno",
    aggregator: "Nabídky pocházejí od tržního agregátoru a nemusí být úplné.",
    withdraw_link: "Zrušit tuto poptávku",
    withdraw_title: "Zrušení poptávky",
    withdraw_intro: "Tlačítkem Zrušit poptávku okamžitě ukončíte. Další nabídky vám již nepřijdou.",
    withdraw_button: "Zrušit",
    withdrawn_title: "Poptávka je zrušena",
    withdrawn_body: "Další nabídky vám již nepřijdou.",
    ended: "Tato poptávka již skončila (vypršela nebo byla zrušena).",
    not_found_title: "Stránka nenalezena",
    not_found_body: "Odkaz je chybný nebo již neplatí. Zkontrolujte, zda jste jej zkopírovali celý.",
    csrf_title: "Platnost formuláře vypršela",
    csrf_body: "Formulář vypršel, načtěte stránku znovu a zkuste to ještě jednou.",
    error_title: "Něco se pokazilo",
    error_body: "Požadavek se nepodařilo dokončit. Zkuste to za chvíli znovu.",
    statuses: ["čeká na souhlas", "čeká na potvrzení e-mailu", "aktivní", "platnost vypršela", "zrušena"],
    categories: ["Vozidla", "Nemovitosti"],
    countries: ["Slovensko", "Česko"],
    attributes: &[
        ("make", "Značka"),
        ("model", "Model"),
        ("body", "Karoserie"),
        ("fuel", "Palivo"),
        ("transmission", "Převodovka"),
        ("year", "Rok výroby"),
        ("mileageKm", "Najeto (km)"),
        ("powerKw", "Výkon (kW)"),
        ("color", "Barva"),
        ("type", "Typ"),
        ("transaction", "Transakce"),
        ("disposition", "Dispozice"),
        ("rooms", "Počet pokojů"),
        ("floorAreaM2", "Užitná plocha (m²)"),
        ("landAreaM2", "Plocha pozemku (m²)"),
        ("floor", "Podlaží"),
    ],
    unsubscribed: "Poptávka je zrušena. Další e-maily k ní již nepřijdou.",
};

static EN: Ui = Ui {
    lang: "en",
    account: &ACCOUNT_EN,
    authorize: &AUTHORIZE_EN,
    sellers: &SELLER_EN,
    demand: &DEMAND_EN,
    mine: &MINE_EN,
    cadence: &CADENCE_EN,
    links: &LINKS_EN,
    skip: "Skip to content",
    home_intro: "This server is an Isto Intents intent holder. AI assistants publish their people's requests here, the person confirms each request by e-mail, and matching offers then arrive by e-mail. The person's contact and hidden price limit never leave this server.",
    home_mcp: "AI assistants connect to it over MCP at this address (copy it into the assistant's settings):",
    home_people: "If an assistant gave you a link to this server, open it: that is where you confirm the request with your e-mail. With an account you see all your requests in one place.",
    home_people_heading: "For people",
    home_assistants_heading: "For assistants",
    language_nav: "Language",
    no_such_page: "There is no page at this address. Check the address or go on to the home page.",
    home_link: "Go to the home page",
    statement: "Request",
    category: "Category",
    criteria: "Criteria",
    criterion: "Attribute",
    value: "Value",
    area: "Area",
    budget: "Budget",
    up_to: "up to",
    from: "from",
    buy_by: "Buy by",
    valid_until: "Valid until",
    status: "Status",
    hidden_limit: "A hidden price limit is set. Sellers never see it; only offers within it are sent to you.",
    consent_title: "Publish your request",
    consent_intro: "An assistant prepared this request for you. It becomes active only after you give your consent here and confirm your e-mail address.",
    consent_text: "Consent",
    email_label: "Your e-mail address",
    email_hint: "We send a confirmation link to it, then the offers. Sellers never see it.",
    accept_label: "I agree to the text above",
    consent_button: "Give consent",
    consent_ignore: "If you did not ask for anything, close this page; nothing happens without your consent.",
    accept_required: "To give your consent, tick the box “I agree to the text above”.",
    email_invalid: "Enter an e-mail address such as name@example.com.",
    sent_title: "Check your e-mail",
    sent_body: "We sent you an e-mail with a confirmation link. Your request becomes active when you open the link and press Confirm.",
    sent_spam: "If it does not arrive within a few minutes, look in your spam folder.",
    throttled_title: "Too many requests",
    throttled_body: "We sent too many confirmation e-mails to this address in the last hour.",
    throttled_client_body: "Too many consent submissions came from your network in the last hour.",
    throttled_global_body: "We sent too many confirmation e-mails in the last hour (to all addresses together).",
    throttled_retry: "Try again in {minutes} min (at {time}).",
    person_cap_title: "Too many active requests",
    person_cap_body: "This e-mail address (or account) already has {n} active requests, the most one person can have here. Withdraw one of them (every e-mail about a request has a withdraw link; signed-in buyers find theirs under My requests) and try again.",
    taken_title: "This link was already used",
    taken_body: "Someone has already given consent on this link. If that was you, look for the confirmation e-mail. A link can be used only once.",
    closed_title: "This link has expired or the request was withdrawn",
    closed_body: "Nothing more can be done with this link. If you still want the request, ask your assistant to publish it again.",
    confirm_title: "Confirm your request",
    confirm_intro: "Press Confirm to activate this request. Offers that match it will come to you by e-mail.",
    confirm_button: "Confirm",
    already_active: "This request is already active.",
    active_title: "Your request is active",
    active_body: "Offers will come by e-mail. Every e-mail has a link that withdraws the request.",
    results_title: "Offers for your request",
    delivered_offers: "Delivered offers",
    no_offers: "No offers yet. New ones will come by e-mail.",
    price: "Price",
    place: "Place",
    seller: "Seller",
    delivered: "Delivered",
    aggregator: "Offers come from a market aggregator and may be incomplete.",
    withdraw_link: "Withdraw this request",
    withdraw_title: "Withdraw your request",
    withdraw_intro: "Press Withdraw to end this request at once. No more offers will be sent.",
    withdraw_button: "Withdraw",
    withdrawn_title: "Your request is withdrawn",
    withdrawn_body: "No more offers will be sent for it.",
    ended: "This request has already ended (expired or withdrawn).",
    not_found_title: "Page not found",
    not_found_body: "The link is wrong or no longer valid. Check that you copied all of it.",
    csrf_title: "The form expired",
    csrf_body: "The form expired, reload the page and try again.",
    error_title: "Something went wrong",
    error_body: "The holder could not complete the request. Try again in a moment.",
    statuses: ["waiting for consent", "waiting for e-mail confirmation", "active", "expired", "withdrawn"],
    categories: ["Vehicles", "Property"],
    countries: ["Slovakia", "Czechia"],
    attributes: &[
        ("make", "Make"),
        ("model", "Model"),
        ("body", "Body"),
        ("fuel", "Fuel"),
        ("transmission", "Transmission"),
        ("year", "Year"),
        ("mileageKm", "Mileage (km)"),
        ("powerKw", "Power (kW)"),
        ("color", "Colour"),
        ("type", "Type"),
        ("transaction", "Transaction"),
        ("disposition", "Layout"),
        ("rooms", "Rooms"),
        ("floorAreaM2", "Floor area (m²)"),
        ("landAreaM2", "Land area (m²)"),
        ("floor", "Floor"),
    ],
    unsubscribed: "The request is withdrawn. No more e-mails will be sent for it.",
};

// ---------------------------------------------------------------------------
// the account pages

/// The strings of `lang` (`sk`, `cs`; anything else is English).
pub fn ui(lang: &str) -> &'static Ui {
    match lang {
        "sk" => &SK,
        "cs" => &CS,
        _ => &EN,
    }
}

impl Ui {
    /// The name of a status.
    pub fn status_name(&self, s: crate::protocol::Status) -> &'static str {
        use crate::protocol::Status;
        let i = match s {
            Status::AwaitingConsent => 0,
            Status::AwaitingEmailConfirmation => 1,
            Status::Active => 2,
            Status::Expired => 3,
            Status::Withdrawn => 4,
        };
        self.statuses[i]
    }

    /// The name of a category key (the key itself when unknown).
    pub fn category_name<'a>(&self, key: &'a str) -> &'a str {
        match key {
            "vehicles" => self.categories[0],
            "property" => self.categories[1],
            k => k,
        }
    }

    /// The name of a country code (the code itself when unknown).
    pub fn country_name<'a>(&self, code: &'a str) -> &'a str {
        match code.to_ascii_uppercase().as_str() {
            "SK" => self.countries[0],
            "CZ" => self.countries[1],
            _ => code,
        }
    }

    /// The label of a criteria key (the key itself when unknown).
    pub fn attribute_label<'a>(&self, key: &'a str) -> &'a str {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).unwrap_or(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_query_chooses_a_known_language_only() {
        assert_eq!(query_lang(Some("lang=cs")), Some("cs"));
        assert_eq!(query_lang(Some("x=1&lang=en")), Some("en"));
        assert_eq!(query_lang(Some("lang=de")), None);
        assert_eq!(query_lang(Some("lang=")), None);
        assert_eq!(query_lang(Some("language=sk")), None);
        assert_eq!(query_lang(None), None);
    }

    #[test]
    fn language_from_accept_language_then_default() {
        let mut h = HeaderMap::new();
        assert_eq!(request_lang(&h, "sk"), "sk");
        assert_eq!(request_lang(&h, "de"), "en");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("de-DE, cs;q=0.8, en;q=0.5"));
        assert_eq!(request_lang(&h, "sk"), "cs");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("en-GB"));
        assert_eq!(request_lang(&h, "sk"), "en");
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("cs;q=0, en;q=0.1"));
        assert_eq!(request_lang(&h, "sk"), "en");
    }

    #[test]
    fn negotiation_follows_q_values() {
        // The highest q wins, whatever the order; the first one on a tie.
        assert_eq!(negotiate(Some("en;q=0.5, cs;q=0.8"), "sk"), "cs");
        assert_eq!(negotiate(Some("cs, en"), "sk"), "cs");
        assert_eq!(negotiate(Some("en-US;q=0.9, sk-SK"), "cs"), "sk");
        // `*` is the holder's default; q=0 refuses; a malformed q is ignored.
        assert_eq!(negotiate(Some("*, en;q=0.5"), "sk"), "sk");
        assert_eq!(negotiate(Some("sk;q=0, de"), "cs"), "cs");
        assert_eq!(negotiate(Some("sk;q=abc, en;q=0.2"), "cs"), "en");
        assert_eq!(negotiate(Some("sk;q=1.5"), "cs"), "cs");
        // Nothing known or nothing sent: the default, else English.
        assert_eq!(negotiate(Some("de, fr;q=0.5"), "cs"), "cs");
        assert_eq!(negotiate(None, "de"), "en");
        assert_eq!(negotiate(Some(""), "en"), "en");
    }

    #[test]
    fn page_language_falls_back_to_the_default() {
        assert_eq!(page_lang(Some("cs"), "sk"), "cs");
        assert_eq!(page_lang(Some("cs-CZ"), "sk"), "cs");
        assert_eq!(page_lang(Some("de"), "sk"), "sk");
        assert_eq!(page_lang(None, "en"), "en");
        assert_eq!(page_lang(Some("de"), "fr"), "en");
    }

    #[test]
    fn every_language_names_every_attribute() {
        for c in crate::protocol::CATEGORIES {
            for (key, _, _) in c.attributes {
                for l in LANGUAGES {
                    assert_ne!(ui(l).attribute_label(key), *key, "{l} has no label for {key}");
                }
            }
        }
    }
}
