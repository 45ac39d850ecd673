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
pub const LANGUAGES: [&str; 3] = ["sk", "cs", "en"];

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
    /// Link text of the skip link.
    pub skip: &'static str,
    /// Home page: what the holder is.
    pub home_intro: &'static str,
    /// Home page: where assistants connect.
    pub home_mcp: &'static str,
    /// Home page: how a person gets involved.
    pub home_people: &'static str,
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
    skip: "Preskočiť na obsah",
    home_intro: "Tento server je držiteľ dopytov Isto Intents: uchováva dopyty kupujúcich a posiela im zodpovedajúce ponuky.",
    home_mcp: "AI asistenti sa k nemu pripájajú cez MCP na adrese:",
    home_people: "Ak vám asistent poslal odkaz na túto stránku, otvorte ho: tam dopyt potvrdíte svojím e-mailom.",
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
    throttled_body: "Na túto adresu sme nedávno poslali priveľa potvrdzovacích e-mailov. Skúste to znova o hodinu.",
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
    skip: "Přeskočit na obsah",
    home_intro: "Tento server je držitel poptávek Isto Intents: uchovává poptávky kupujících a posílá jim odpovídající nabídky.",
    home_mcp: "AI asistenti se k němu připojují přes MCP na adrese:",
    home_people: "Pokud vám asistent poslal odkaz na tuto stránku, otevřete jej: tam poptávku potvrdíte svým e-mailem.",
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
    throttled_body: "Na tuto adresu jsme nedávno poslali příliš mnoho potvrzovacích e-mailů. Zkuste to znovu za hodinu.",
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
    skip: "Skip to content",
    home_intro: "This server is an Isto Intents intent holder: it keeps buyers' requests and sends them matching offers.",
    home_mcp: "AI assistants connect to it over MCP at:",
    home_people: "If an assistant gave you a link to this site, open it: that is where you confirm the request with your e-mail.",
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
    throttled_body: "We recently sent too many confirmation e-mails to this address. Try again in an hour.",
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

/// The texts of the sign-in, sign-up and password pages (where a string of [`Ui`]
/// reads differently on them, it is here again as they show it).
#[derive(Debug)]
pub struct AccountText {
    /// `lang` attribute value (the key of the [`Ui`] this belongs to).
    pub lang: &'static str,
    /// Signin title.
    pub signin_title: &'static str,
    /// Signin intro.
    pub signin_intro: &'static str,
    /// Email label.
    pub email_label: &'static str,
    /// Password label.
    pub password_label: &'static str,
    /// Signin button.
    pub signin_button: &'static str,
    /// Link heading.
    pub link_heading: &'static str,
    /// Link intro.
    pub link_intro: &'static str,
    /// Link button.
    pub link_button: &'static str,
    /// No account.
    pub no_account: &'static str,
    /// Signup link.
    pub signup_link: &'static str,
    /// Have account.
    pub have_account: &'static str,
    /// Signin link.
    pub signin_link: &'static str,
    /// Signin failed.
    pub signin_failed: &'static str,
    /// Email invalid.
    pub email_invalid: &'static str,
    /// Sent title.
    pub sent_title: &'static str,
    /// Link sent body.
    pub link_sent_body: &'static str,
    /// Sent spam.
    pub sent_spam: &'static str,
    /// Link title.
    pub link_title: &'static str,
    /// Link body.
    pub link_body: &'static str,
    /// Gone title.
    pub gone_title: &'static str,
    /// Link gone body.
    pub link_gone_body: &'static str,
    /// Login throttled.
    pub login_throttled: &'static str,
    /// Busy.
    pub busy: &'static str,
    /// Mail throttled.
    pub mail_throttled: &'static str,
    /// Mail busy.
    pub mail_busy: &'static str,
    /// Signup title.
    pub signup_title: &'static str,
    /// Signup intro.
    pub signup_intro: &'static str,
    /// Signup email hint.
    pub signup_email_hint: &'static str,
    /// Password optional label.
    pub password_optional_label: &'static str,
    /// Password optional hint.
    pub password_optional_hint: &'static str,
    /// Consent text.
    pub consent_text: &'static str,
    /// Accept label.
    pub accept_label: &'static str,
    /// Accept required.
    pub accept_required: &'static str,
    /// Password invalid.
    pub password_invalid: &'static str,
    /// Signup button.
    pub signup_button: &'static str,
    /// Signup sent body.
    pub signup_sent_body: &'static str,
    /// Confirm title.
    pub confirm_title: &'static str,
    /// Confirm body.
    pub confirm_body: &'static str,
    /// Confirm button.
    pub confirm_button: &'static str,
    /// Signup gone body.
    pub signup_gone_body: &'static str,
    /// Signed in.
    pub signed_in: &'static str,
    /// Continue link.
    pub continue_link: &'static str,
    /// Signout button.
    pub signout_button: &'static str,
    /// Password title.
    pub password_title: &'static str,
    /// Password intro.
    pub password_intro: &'static str,
    /// Password current label.
    pub password_current_label: &'static str,
    /// Password new label.
    pub password_new_label: &'static str,
    /// Password new hint.
    pub password_new_hint: &'static str,
    /// Password repeat label.
    pub password_repeat_label: &'static str,
    /// Password mismatch.
    pub password_mismatch: &'static str,
    /// Password wrong current.
    pub password_wrong_current: &'static str,
    /// Password save.
    pub password_save: &'static str,
    /// Password saved.
    pub password_saved: &'static str,
    /// Csrf title.
    pub csrf_title: &'static str,
    /// Csrf body.
    pub csrf_body: &'static str,
    /// Error title.
    pub error_title: &'static str,
    /// Error body.
    pub error_body: &'static str,
    /// Mail info title.
    pub mail_info_title: &'static str,
    /// Mail info body.
    pub mail_info_body: &'static str,
}

static ACCOUNT_SK: AccountText = AccountText {
    lang: "sk",
    signin_title: "Prihlásenie",
    signin_intro: "Prihláste sa e-mailom a heslom, alebo si nechajte poslať prihlasovací odkaz.",
    email_label: "E-mailová adresa",
    password_label: "Heslo",
    signin_button: "Prihlásiť sa",
    link_heading: "Prihlásenie odkazom z e-mailu",
    link_intro: "Nemáte heslo alebo ste ho zabudli? Pošleme vám odkaz, ktorým sa prihlásite bez hesla.",
    link_button: "Poslať prihlasovací odkaz",
    no_account: "Ešte nemáte účet?",
    signup_link: "Vytvoriť účet",
    have_account: "Už máte účet?",
    signin_link: "Prihlásiť sa",
    signin_failed: "Nesprávny e-mail alebo heslo.",
    email_invalid: "Zadajte e-mailovú adresu v tvare meno@example.com.",
    sent_title: "Skontrolujte si e-mail",
    link_sent_body: "Ak k tejto adrese existuje účet, poslali sme na ňu prihlasovací odkaz. Platí 15 minút a dá sa použiť raz.",
    sent_spam: "Ak e-mail do niekoľkých minút nepríde, pozrite sa do priečinka s nevyžiadanou poštou.",
    link_title: "Prihlásenie",
    link_body: "Prihlásenie dokončíte tlačidlom Prihlásiť sa.",
    gone_title: "Odkaz už neplatí",
    link_gone_body: "Prihlasovací odkaz platí 15 minút a dá sa použiť iba raz. Na stránke prihlásenia si vyžiadajte nový.",
    login_throttled: "Príliš veľa neúspešných pokusov. Skúste to znova o 15 minút alebo sa prihláste odkazom z e-mailu.",
    busy: "Práve je tu príliš veľa pokusov o prihlásenie. Skúste to o minútu alebo sa prihláste odkazom z e-mailu.",
    mail_throttled: "Na túto adresu sme nedávno poslali príliš veľa e-mailov. Skúste to znova o hodinu.",
    mail_busy: "Práve posielame príliš veľa e-mailov. Skúste to o minútu.",
    signup_title: "Vytvorenie účtu",
    signup_intro: "S účtom môžete spravovať svoje dopyty a pripájať asistentov. Vytvorí sa, keď potvrdíte odkaz, ktorý vám pošleme e-mailom.",
    signup_email_hint: "Pošleme na ňu potvrdzovací odkaz. Predajcovia ju neuvidia.",
    password_optional_label: "Heslo (nepovinné)",
    password_optional_hint: "Aspoň 10 znakov. Bez hesla sa budete prihlasovať odkazom z e-mailu.",
    consent_text: "Súhlas",
    accept_label: "Súhlasím s textom vyššie",
    accept_required: "Ak chcete vytvoriť účet, začiarknite políčko „Súhlasím s textom vyššie“.",
    password_invalid: "Heslo musí mať 10 až 200 znakov.",
    signup_button: "Vytvoriť účet",
    signup_sent_body: "Na zadanú adresu sme poslali e-mail. Otvorte odkaz v ňom: účet vytvoríte tlačidlom Potvrdiť (odkaz platí 72 hodín). Ak už účet máte, e-mail obsahuje odkaz na prihlásenie.",
    confirm_title: "Potvrďte vytvorenie účtu",
    confirm_body: "Tlačidlom Potvrdiť vytvoríte účet a prihlásite sa.",
    confirm_button: "Potvrdiť",
    signup_gone_body: "Potvrdzovací odkaz platí 72 hodín a dá sa použiť iba raz. Zaregistrujte sa znova.",
    signed_in: "Ste prihlásení.",
    continue_link: "Pokračovať",
    signout_button: "Odhlásiť sa",
    password_title: "Heslo",
    password_intro: "Nastavte si heslo, ktorým sa budete prihlasovať. Ostatné prihlásenia k vášmu účtu sa ukončia.",
    password_current_label: "Súčasné heslo",
    password_new_label: "Nové heslo",
    password_new_hint: "10 až 200 znakov.",
    password_repeat_label: "Nové heslo znova",
    password_mismatch: "Heslá sa nezhodujú.",
    password_wrong_current: "Súčasné heslo nie je správne.",
    password_save: "Uložiť heslo",
    password_saved: "Heslo je uložené.",
    csrf_title: "Platnosť formulára vypršala",
    csrf_body: "Formulár vypršal, načítajte stránku znova a skúste to ešte raz.",
    error_title: "Niečo sa pokazilo",
    error_body: "Požiadavku sa nepodarilo dokončiť. Skúste to o chvíľu znova.",
    mail_info_title: "E-maily k účtu",
    mail_info_body: "E-maily k účtu posielame iba vtedy, keď o ne niekto na tejto stránke požiada (prihlasovací alebo potvrdzovací odkaz). Nie ste prihlásení na žiadny odber.",
};

static ACCOUNT_CS: AccountText = AccountText {
    lang: "cs",
    signin_title: "Přihlášení",
    signin_intro: "Přihlaste se e-mailem a heslem, nebo si nechte poslat přihlašovací odkaz.",
    email_label: "E-mailová adresa",
    password_label: "Heslo",
    signin_button: "Přihlásit se",
    link_heading: "Přihlášení odkazem z e-mailu",
    link_intro: "Nemáte heslo nebo jste ho zapomněli? Pošleme vám odkaz, kterým se přihlásíte bez hesla.",
    link_button: "Poslat přihlašovací odkaz",
    no_account: "Ještě nemáte účet?",
    signup_link: "Vytvořit účet",
    have_account: "Už máte účet?",
    signin_link: "Přihlásit se",
    signin_failed: "Nesprávný e-mail nebo heslo.",
    email_invalid: "Zadejte e-mailovou adresu ve tvaru jmeno@example.com.",
    sent_title: "Zkontrolujte si e-mail",
    link_sent_body: "Pokud k této adrese existuje účet, poslali jsme na ni přihlašovací odkaz. Platí 15 minut a lze jej použít jednou.",
    sent_spam: "Pokud e-mail do několika minut nepřijde, podívejte se do složky s nevyžádanou poštou.",
    link_title: "Přihlášení",
    link_body: "Přihlášení dokončíte tlačítkem Přihlásit se.",
    gone_title: "Odkaz již neplatí",
    link_gone_body: "Přihlašovací odkaz platí 15 minut a lze jej použít jen jednou. Na stránce přihlášení si vyžádejte nový.",
    login_throttled: "Příliš mnoho neúspěšných pokusů. Zkuste to znovu za 15 minut nebo se přihlaste odkazem z e-mailu.",
    busy: "Právě je zde příliš mnoho pokusů o přihlášení. Zkuste to za minutu nebo se přihlaste odkazem z e-mailu.",
    mail_throttled: "Na tuto adresu jsme nedávno poslali příliš mnoho e-mailů. Zkuste to znovu za hodinu.",
    mail_busy: "Právě posíláme příliš mnoho e-mailů. Zkuste to za minutu.",
    signup_title: "Vytvoření účtu",
    signup_intro: "S účtem můžete spravovat své poptávky a připojovat asistenty. Vytvoří se, až potvrdíte odkaz, který vám pošleme e-mailem.",
    signup_email_hint: "Pošleme na ni potvrzovací odkaz. Prodejci ji neuvidí.",
    password_optional_label: "Heslo (nepovinné)",
    password_optional_hint: "Alespoň 10 znaků. Bez hesla se budete přihlašovat odkazem z e-mailu.",
    consent_text: "Souhlas",
    accept_label: "Souhlasím s textem výše",
    accept_required: "Chcete-li vytvořit účet, zaškrtněte políčko „Souhlasím s textem výše“.",
    password_invalid: "Heslo musí mít 10 až 200 znaků.",
    signup_button: "Vytvořit účet",
    signup_sent_body: "Na zadanou adresu jsme poslali e-mail. Otevřete odkaz v něm: účet vytvoříte tlačítkem Potvrdit (odkaz platí 72 hodin). Pokud již účet máte, e-mail obsahuje odkaz k přihlášení.",
    confirm_title: "Potvrďte vytvoření účtu",
    confirm_body: "Tlačítkem Potvrdit vytvoříte účet a přihlásíte se.",
    confirm_button: "Potvrdit",
    signup_gone_body: "Potvrzovací odkaz platí 72 hodin a lze jej použít jen jednou. Zaregistrujte se znovu.",
    signed_in: "Jste přihlášeni.",
    continue_link: "Pokračovat",
    signout_button: "Odhlásit se",
    password_title: "Heslo",
    password_intro: "Nastavte si heslo, kterým se budete přihlašovat. Ostatní přihlášení k vašemu účtu se ukončí.",
    password_current_label: "Současné heslo",
    password_new_label: "Nové heslo",
    password_new_hint: "10 až 200 znaků.",
    password_repeat_label: "Nové heslo znovu",
    password_mismatch: "Hesla se neshodují.",
    password_wrong_current: "Současné heslo není správné.",
    password_save: "Uložit heslo",
    password_saved: "Heslo je uloženo.",
    csrf_title: "Platnost formuláře vypršela",
    csrf_body: "Formulář vypršel, načtěte stránku znovu a zkuste to ještě jednou.",
    error_title: "Něco se pokazilo",
    error_body: "Požadavek se nepodařilo dokončit. Zkuste to za chvíli znovu.",
    mail_info_title: "E-maily k účtu",
    mail_info_body: "E-maily k účtu posíláme jen tehdy, když o ně někdo na této stránce požádá (přihlašovací nebo potvrzovací odkaz). Nejste přihlášeni k žádnému odběru.",
};

static ACCOUNT_EN: AccountText = AccountText {
    lang: "en",
    signin_title: "Sign in",
    signin_intro: "Sign in with your e-mail address and password, or have a sign-in link sent to you.",
    email_label: "E-mail address",
    password_label: "Password",
    signin_button: "Sign in",
    link_heading: "Sign in with a link by e-mail",
    link_intro: "No password, or forgot it? We will send you a link that signs you in without one.",
    link_button: "Send me a sign-in link",
    no_account: "No account yet?",
    signup_link: "Create one",
    have_account: "Already have an account?",
    signin_link: "Sign in",
    signin_failed: "Wrong e-mail address or password.",
    email_invalid: "Enter an e-mail address such as name@example.com.",
    sent_title: "Check your e-mail",
    link_sent_body: "If an account exists for this address, we have sent it a sign-in link. It works once, within 15 minutes.",
    sent_spam: "If the e-mail does not arrive within a few minutes, look in your spam folder.",
    link_title: "Sign in",
    link_body: "Press Sign in to finish signing in.",
    gone_title: "This link no longer works",
    link_gone_body: "A sign-in link works once, within 15 minutes. Ask for a new one on the sign-in page.",
    login_throttled: "Too many failed attempts. Try again in 15 minutes, or sign in with a link sent by e-mail.",
    busy: "There are too many sign-in attempts here right now. Try again in a minute, or sign in with a link sent by e-mail.",
    mail_throttled: "We sent too many e-mails to this address lately. Try again in an hour.",
    mail_busy: "We are sending too many e-mails right now. Try again in a minute.",
    signup_title: "Create an account",
    signup_intro: "With an account you can manage your requests and connect assistants. It is created once you confirm the link we send you by e-mail.",
    signup_email_hint: "We send a confirmation link to it. Sellers never see it.",
    password_optional_label: "Password (optional)",
    password_optional_hint: "At least 10 characters. Without a password you sign in with a link sent by e-mail.",
    consent_text: "Consent",
    accept_label: "I agree to the text above",
    accept_required: "To create an account, tick “I agree to the text above”.",
    password_invalid: "The password must have 10 to 200 characters.",
    signup_button: "Create account",
    signup_sent_body: "We have sent an e-mail to this address. Open the link in it and press Confirm to create your account (the link works for 72 hours). If you already have an account, the e-mail holds a sign-in link instead.",
    confirm_title: "Confirm your new account",
    confirm_body: "Press Confirm to create your account and sign in.",
    confirm_button: "Confirm",
    signup_gone_body: "A confirmation link works once, within 72 hours. Please sign up again.",
    signed_in: "You are signed in.",
    continue_link: "Continue",
    signout_button: "Sign out",
    password_title: "Password",
    password_intro: "Set the password you will sign in with. Your account's other sign-ins are ended.",
    password_current_label: "Current password",
    password_new_label: "New password",
    password_new_hint: "10 to 200 characters.",
    password_repeat_label: "New password again",
    password_mismatch: "The passwords do not match.",
    password_wrong_current: "The current password is not right.",
    password_save: "Save password",
    password_saved: "Your password is saved.",
    csrf_title: "This form has expired",
    csrf_body: "The form expired; reload the page and try again.",
    error_title: "Something went wrong",
    error_body: "The request could not be completed. Please try again in a moment.",
    mail_info_title: "Account e-mails",
    mail_info_body: "Account e-mails are sent only when someone asks for one on this site (a sign-in or confirmation link). You are not subscribed to anything.",
};

// ---------------------------------------------------------------------------
// the OAuth authorization page

/// The texts of the OAuth authorization (consent) page.
#[derive(Debug)]
pub struct AuthorizeText {
    /// Title.
    pub title: &'static str,
    /// Asks.
    pub asks: &'static str,
    /// Identified by.
    pub identified_by: &'static str,
    /// Self named.
    pub self_named: &'static str,
    /// Can.
    pub can: &'static str,
    /// Returns to.
    pub returns_to: &'static str,
    /// Allow.
    pub allow: &'static str,
    /// Deny.
    pub deny: &'static str,
    /// Error title.
    pub error_title: &'static str,
    /// Internal.
    pub internal: &'static str,
    /// Expired.
    pub expired: &'static str,
    /// Wrong role title.
    pub wrong_role_title: &'static str,
    /// Wrong role buyer.
    pub wrong_role_buyer: &'static str,
    /// Wrong role seller.
    pub wrong_role_seller: &'static str,
    /// Back.
    pub back: &'static str,
    /// Intents.
    pub intents: &'static str,
    /// Offers.
    pub offers: &'static str,
    /// Demand.
    pub demand: &'static str,
}

impl AuthorizeText {
    /// What a scope lets the client do, as a person reads it (empty for an unknown one).
    pub fn scope(&self, s: &str) -> &'static str {
        match s {
            crate::oauth::SCOPE_INTENTS => self.intents,
            crate::oauth::SCOPE_OFFERS => self.offers,
            crate::oauth::SCOPE_DEMAND => self.demand,
            _ => "",
        }
    }
}

static AUTHORIZE_EN: AuthorizeText = AuthorizeText {
    title: "Allow access?",
    asks: "asks to act for you at",
    identified_by: "The application identifies itself by",
    self_named: "The application chose this name itself; the holder has not checked who runs it.",
    can: "It will be able to:",
    returns_to: "Your answer goes back to",
    allow: "Allow",
    deny: "Deny",
    error_title: "Authorization request refused",
    internal: "Something went wrong on our side. Please try again later.",
    expired: "This form has expired or did not come from this page. Start again from the application.",
    wrong_role_title: "Wrong account",
    wrong_role_buyer: "This application asks for buyer access, but you are signed in with a seller account.",
    wrong_role_seller: "This application asks for seller access, but you are signed in with a buyer account.",
    back: "Return to the application",
    intents: "publish, read, change and withdraw your purchase intents and see their matching offers",
    offers: "see open pseudonymous intents and send offers in reply",
    demand: "read aggregated demand summaries",
};

static AUTHORIZE_SK: AuthorizeText = AuthorizeText {
    title: "Povoliť prístup?",
    asks: "žiada o oprávnenie konať vo vašom mene na stránke",
    identified_by: "Aplikácia sa identifikuje adresou",
    self_named: "Tento názov si aplikácia zvolila sama; prevádzkovateľ neoveril, kto ju prevádzkuje.",
    can: "Bude môcť:",
    returns_to: "Vaša odpoveď sa vráti na",
    allow: "Povoliť",
    deny: "Zamietnuť",
    error_title: "Žiadosť o prístup bola odmietnutá",
    internal: "Na našej strane sa niečo pokazilo. Skúste to prosím neskôr.",
    expired: "Platnosť formulára vypršala alebo nepochádza z tejto stránky. Začnite znova v aplikácii.",
    wrong_role_title: "Nesprávny účet",
    wrong_role_buyer: "Aplikácia žiada prístup kupujúceho, ale ste prihlásený účtom predajcu.",
    wrong_role_seller: "Aplikácia žiada prístup predajcu, ale ste prihlásený účtom kupujúceho.",
    back: "Späť do aplikácie",
    intents: "zverejňovať, čítať, meniť a sťahovať vaše nákupné zámery a vidieť k nim ponuky",
    offers: "vidieť otvorené pseudonymné zámery a posielať na ne ponuky",
    demand: "čítať súhrny dopytu",
};

static AUTHORIZE_CS: AuthorizeText = AuthorizeText {
    title: "Povolit přístup?",
    asks: "žádá o oprávnění jednat vaším jménem na stránce",
    identified_by: "Aplikace se identifikuje adresou",
    self_named: "Tento název si aplikace zvolila sama; provozovatel neověřil, kdo ji provozuje.",
    can: "Bude moci:",
    returns_to: "Vaše odpověď se vrátí na",
    allow: "Povolit",
    deny: "Zamítnout",
    error_title: "Žádost o přístup byla odmítnuta",
    internal: "Na naší straně se něco pokazilo. Zkuste to prosím později.",
    expired: "Platnost formuláře vypršela nebo nepochází z této stránky. Začněte znovu v aplikaci.",
    wrong_role_title: "Nesprávný účet",
    wrong_role_buyer: "Aplikace žádá přístup kupujícího, ale jste přihlášeni účtem prodejce.",
    wrong_role_seller: "Aplikace žádá přístup prodejce, ale jste přihlášeni účtem kupujícího.",
    back: "Zpět do aplikace",
    intents: "zveřejňovat, číst, měnit a stahovat vaše nákupní záměry a vidět k nim nabídky",
    offers: "vidět otevřené pseudonymní záměry a posílat na ně nabídky",
    demand: "číst souhrny poptávky",
};

// ---------------------------------------------------------------------------
// the signed-in buyer's pages (`/me`, `/renew`)

/// The signed-in buyer's pages' texts (`/me`, renewals).
#[derive(Debug)]
pub struct MineText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// None.
    pub none: &'static str,
    /// Offers.
    pub offers: &'static str,
    /// Actions.
    pub actions: &'static str,
    /// Show offers.
    pub show_offers: &'static str,
    /// Renew button.
    pub renew_button: &'static str,
    /// Back.
    pub back: &'static str,
    /// Renew title.
    pub renew_title: &'static str,
    /// Renew intro.
    pub renew_intro: &'static str,
    /// New valid until.
    pub new_valid_until: &'static str,
    /// Renew closed.
    pub renew_closed: &'static str,
    /// Renew refused.
    pub renew_refused: &'static str,
    /// Signout.
    pub signout: &'static str,
}

static MINE_SK: MineText = MineText {
    title: "Moje dopyty",
    intro: "Dopyty, ktoré za vás zverejnili vaši asistenti. Ponuky k nim vám chodia e-mailom.",
    none: "Zatiaľ nemáte žiadny dopyt. Požiadajte asistenta, aby ho za vás zverejnil.",
    offers: "Ponuky",
    actions: "Akcie",
    show_offers: "Zobraziť ponuky",
    renew_button: "Predĺžiť",
    back: "Späť na moje dopyty",
    renew_title: "Predĺženie dopytu",
    renew_intro: "Tlačidlom Potvrdiť predĺžite platnosť tohto dopytu do dátumu nižšie. Ponuky vám budú chodiť ďalej.",
    new_valid_until: "Nová platnosť do",
    renew_closed: "Toto predĺženie sa už nedá potvrdiť (dopyt bol zrušený alebo dátum už uplynul). Vráťte sa na svoje dopyty a predĺžte ho znova.",
    renew_refused: "Tento dopyt sa teraz nedá predĺžiť: je zrušený, nikdy nebol aktívny, alebo už platí najdlhšie, ako je možné.",
    signout: "Odhlásiť sa",
};

static MINE_CS: MineText = MineText {
    title: "Moje poptávky",
    intro: "Poptávky, které za vás zveřejnili vaši asistenti. Nabídky k nim vám chodí e-mailem.",
    none: "Zatím nemáte žádnou poptávku. Požádejte asistenta, aby ji za vás zveřejnil.",
    offers: "Nabídky",
    actions: "Akce",
    show_offers: "Zobrazit nabídky",
    renew_button: "Prodloužit",
    back: "Zpět na moje poptávky",
    renew_title: "Prodloužení poptávky",
    renew_intro: "Tlačítkem Potvrdit prodloužíte platnost této poptávky do data níže. Nabídky vám budou chodit dál.",
    new_valid_until: "Nová platnost do",
    renew_closed: "Toto prodloužení již nelze potvrdit (poptávka byla zrušena nebo datum již uplynulo). Vraťte se na své poptávky a prodlužte ji znovu.",
    renew_refused: "Tuto poptávku nyní nelze prodloužit: je zrušena, nikdy nebyla aktivní, nebo již platí nejdéle, jak je možné.",
    signout: "Odhlásit se",
};

static MINE_EN: MineText = MineText {
    title: "My requests",
    intro: "The requests your assistants published for you. Offers for them come to you by e-mail.",
    none: "You have no requests yet. Ask your assistant to publish one for you.",
    offers: "Offers",
    actions: "Actions",
    show_offers: "Show offers",
    renew_button: "Renew",
    back: "Back to my requests",
    renew_title: "Renew your request",
    renew_intro: "Press Confirm to keep this request valid until the date below. Offers will keep coming.",
    new_valid_until: "New end of validity",
    renew_closed: "This renewal can no longer be confirmed (the request was withdrawn or the date has passed). Go back to your requests and renew it again.",
    renew_refused: "This request cannot be renewed now: it is withdrawn, it never became active, or it is already valid for as long as possible.",
    signout: "Sign out",
};

// ---------------------------------------------------------------------------
// the sellers' demand heat map (`/seller/demand`)

/// The sellers' demand heat map's texts.
#[derive(Debug)]
pub struct DemandText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// Rule before k.
    pub rule_before_k: &'static str,
    /// Rule after k.
    pub rule_after_k: &'static str,
    /// As of.
    pub as_of: &'static str,
    /// Sellers only title.
    pub sellers_only_title: &'static str,
    /// Sellers only.
    pub sellers_only: &'static str,
    /// Unknown category.
    pub unknown_category: &'static str,
    /// Category.
    pub category: &'static str,
    /// Buy by.
    pub buy_by: &'static str,
    /// All.
    pub all: &'static str,
    /// Region.
    pub region: &'static str,
    /// Budget.
    pub budget: &'static str,
    /// No budget.
    pub no_budget: &'static str,
    /// Withheld.
    pub withheld: &'static str,
    /// Brackets.
    pub brackets: &'static str,
    /// Svg title.
    pub svg_title: &'static str,
    /// Bands.
    pub bands: [&'static str; 5],
    /// Vehicles.
    pub vehicles: &'static str,
    /// Property.
    pub property: &'static str,
}

static DEMAND_SK: DemandText = DemandText {
    title: "Mapa dopytu",
    intro: "Aktívne dopyty kupujúcich podľa kraja a rozpočtu, pre každý termín nákupu. Počítajú sa len potvrdené \
            aktívne dopyty, podľa viditeľného rozpočtu. Dopyt na celú krajinu sa počíta v každom jej kraji.",
    rule_before_k: "Bunky s menej ako",
    rule_after_k: "aktívnymi dopytmi sú skryté (šrafované sivou).",
    as_of: "Stav k",
    sellers_only_title: "Len pre predajcov",
    sellers_only: "Táto stránka je pre predajcov. Prihláste sa účtom predajcu.",
    unknown_category: "Neznáma kategória. Vyberte si:",
    category: "Kategória",
    buy_by: "Termín nákupu",
    all: "Všetky",
    region: "Kraj",
    budget: "Rozpočet",
    no_budget: "bez rozpočtu",
    withheld: "skryté",
    brackets: "v zátvorke nové za posledných 7 dní",
    svg_title: "Mapa: aktívne dopyty podľa kraja (riadky) a rozpočtu (stĺpce); tabuľka nižšie má rovnaké čísla.",
    bands: ["do 1 mesiaca", "do 3 mesiacov", "do 12 mesiacov", "neskôr", "bez termínu"],
    vehicles: "Vozidlá",
    property: "Nehnuteľnosti",
};

static DEMAND_CS: DemandText = DemandText {
    title: "Mapa poptávky",
    intro: "Aktivní poptávky kupujících podle kraje a rozpočtu, pro každý termín nákupu. Počítají se jen potvrzené \
            aktivní poptávky, podle viditelného rozpočtu. Poptávka na celou zemi se počítá v každém jejím kraji.",
    rule_before_k: "Buňky s méně než",
    rule_after_k: "aktivními poptávkami jsou skryté (šrafované šedě).",
    as_of: "Stav k",
    sellers_only_title: "Jen pro prodejce",
    sellers_only: "Tato stránka je pro prodejce. Přihlaste se účtem prodejce.",
    unknown_category: "Neznámá kategorie. Vyberte si:",
    category: "Kategorie",
    buy_by: "Termín nákupu",
    all: "Všechny",
    region: "Kraj",
    budget: "Rozpočet",
    no_budget: "bez rozpočtu",
    withheld: "skryto",
    brackets: "v závorce nové za posledních 7 dní",
    svg_title: "Mapa: aktivní poptávky podle kraje (řádky) a rozpočtu (sloupce); tabulka níže má stejná čísla.",
    bands: ["do 1 měsíce", "do 3 měsíců", "do 12 měsíců", "později", "bez termínu"],
    vehicles: "Vozidla",
    property: "Nemovitosti",
};

static DEMAND_EN: DemandText = DemandText {
    title: "Demand heat map",
    intro: "Active buying requests by region and budget band, for each buy-by band. Only confirmed, active \
            requests count, by their visible budget. A request for a whole country counts in every region of it.",
    rule_before_k: "Cells with fewer than",
    rule_after_k: "active requests are withheld (hatched grey).",
    as_of: "Counted at",
    sellers_only_title: "Sellers only",
    sellers_only: "This page is for sellers. Sign in with a seller account.",
    unknown_category: "Unknown category. Choose one of:",
    category: "Category",
    buy_by: "Buy by",
    all: "All",
    region: "Region",
    budget: "Budget",
    no_budget: "no budget",
    withheld: "withheld",
    brackets: "in brackets: new in the last 7 days",
    svg_title:
        "Heat map: active requests by region (rows) and budget band (columns); the table below has the same numbers.",
    bands: ["within 1 month", "within 3 months", "within 12 months", "later", "no date"],
    vehicles: "Vehicles",
    property: "Property",
};

// ---------------------------------------------------------------------------
// the sellers' open-intents page (`/seller/intents`)

/// The sellers' open-intents page's texts.
#[derive(Debug)]
pub struct SellerText {
    /// Title.
    pub title: &'static str,
    /// Intro.
    pub intro: &'static str,
    /// Reply.
    pub reply: &'static str,
    /// None.
    pub none: &'static str,
    /// Buyer.
    pub buyer: &'static str,
    /// No profile.
    pub no_profile: &'static str,
    /// Sellers only title.
    pub sellers_only_title: &'static str,
    /// Sellers only.
    pub sellers_only: &'static str,
    /// More.
    pub more: &'static str,
}

static SELLER_SK: SellerText = SellerText {
    title: "Otvorené dopyty",
    intro: "Dopyty kupujúcich, ktorí prijímajú odpovede predajcov, vo vašich kategóriách a regiónoch. Kupujúci tu vystupujú pod pseudonymom, ktorý vidíte len vy; kontakt na nich nedostanete.",
    reply: "Ponuku k dopytu pošlete cez svojho asistenta (MCP nástroj intent_submit_offer na adrese nižšie), najviac 3 ponuky na dopyt:",
    none: "Vo vašich kategóriách a regiónoch teraz nie je žiadny otvorený dopyt.",
    buyer: "Kupujúci",
    no_profile: "Váš predajcovský účet ešte nemá profil (kategórie a regióny). Požiadajte prevádzkovateľa, aby vás zaregistroval.",
    sellers_only_title: "Len pre predajcov",
    sellers_only: "Táto stránka je určená registrovaným predajcom.",
    more: "Zobrazených je prvých 200 dopytov; ďalšie získate cez nástroj intent_list_open_intents.",
};

static SELLER_CS: SellerText = SellerText {
    title: "Otevřené poptávky",
    intro: "Poptávky kupujících, kteří přijímají odpovědi prodejců, ve vašich kategoriích a regionech. Kupující zde vystupují pod pseudonymem, který vidíte jen vy; kontakt na ně nedostanete.",
    reply: "Nabídku k poptávce pošlete přes svého asistenta (MCP nástroj intent_submit_offer na adrese níže), nejvýše 3 nabídky na poptávku:",
    none: "Ve vašich kategoriích a regionech teď není žádná otevřená poptávka.",
    buyer: "Kupující",
    no_profile: "Váš prodejcovský účet ještě nemá profil (kategorie a regiony). Požádejte provozovatele, aby vás zaregistroval.",
    sellers_only_title: "Jen pro prodejce",
    sellers_only: "Tato stránka je určena registrovaným prodejcům.",
    more: "Zobrazeno je prvních 200 poptávek; další získáte přes nástroj intent_list_open_intents.",
};

static SELLER_EN: SellerText = SellerText {
    title: "Open requests",
    intro: "Buying requests whose buyers accept replies from sellers, in your categories and regions. Buyers appear under a pseudonym that only you see; their contact details are never given out.",
    reply: "Reply with an offer through your assistant (the MCP tool intent_submit_offer at the address below), at most 3 offers per request:",
    none: "There are no open requests in your categories and regions right now.",
    buyer: "Buyer",
    no_profile: "Your seller account has no seller profile yet (categories and regions). Ask the holder's operator to register you.",
    sellers_only_title: "For sellers only",
    sellers_only: "This page is for the holder's registered sellers.",
    more: "The first 200 requests are shown; get the others with the intent_list_open_intents tool.",
};

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
