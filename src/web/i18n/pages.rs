//! The texts of the OAuth authorization page, the signed-in buyer's pages, the demand
//! heat map and the sellers' pages, in sk, cs and en.

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
    /// The Allow form was already answered (it is single-use).
    pub answered: &'static str,
    /// Lead of a refused request shown before anyone signed in (the reason follows).
    pub cannot_answer: &'static str,
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

pub(super) static AUTHORIZE_EN: AuthorizeText = AuthorizeText {
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
    answered: "This request was already answered. Start again from the application.",
    cannot_answer: "The application's request cannot be answered:",
    wrong_role_title: "Wrong account",
    wrong_role_buyer: "This application asks for buyer access, but you are signed in with a seller account.",
    wrong_role_seller: "This application asks for seller access, but you are signed in with a buyer account.",
    back: "Return to the application",
    intents: "publish, read, change and withdraw your purchase intents and see their matching offers",
    offers: "see open pseudonymous intents and send offers in reply",
    demand: "read aggregated demand summaries",
};

pub(super) static AUTHORIZE_SK: AuthorizeText = AuthorizeText {
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
    answered: "Na túto žiadosť ste už odpovedali. Začnite znova v aplikácii.",
    cannot_answer: "Na žiadosť aplikácie sa nedá odpovedať:",
    wrong_role_title: "Nesprávny účet",
    wrong_role_buyer: "Aplikácia žiada prístup kupujúceho, ale ste prihlásený účtom predajcu.",
    wrong_role_seller: "Aplikácia žiada prístup predajcu, ale ste prihlásený účtom kupujúceho.",
    back: "Späť do aplikácie",
    intents: "zverejňovať, čítať, meniť a sťahovať vaše nákupné zámery a vidieť k nim ponuky",
    offers: "vidieť otvorené pseudonymné zámery a posielať na ne ponuky",
    demand: "čítať súhrny dopytu",
};

pub(super) static AUTHORIZE_CS: AuthorizeText = AuthorizeText {
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
    answered: "Na tuto žádost jste již odpověděli. Začněte znovu v aplikaci.",
    cannot_answer: "Na žádost aplikace nelze odpovědět:",
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

pub(super) static MINE_SK: MineText = MineText {
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

pub(super) static MINE_CS: MineText = MineText {
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

pub(super) static MINE_EN: MineText = MineText {
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

pub(super) static DEMAND_SK: DemandText = DemandText {
    title: "Mapa dopytu",
    intro: "Aktívne dopyty kupujúcich podľa kraja a rozpočtu, pre každý termín nákupu. Počítajú sa len potvrdené \
            aktívne dopyty, podľa viditeľného rozpočtu. Dopyt na celú krajinu sa počíta v každom jej kraji.",
    rule_before_k: "Bunky s menej ako",
    rule_after_k:
        "rôznymi ľuďmi s aktívnymi dopytmi sú skryté (šrafované sivou): veľa dopytov jedného človeka bunku neodkryje.",
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

pub(super) static DEMAND_CS: DemandText = DemandText {
    title: "Mapa poptávky",
    intro: "Aktivní poptávky kupujících podle kraje a rozpočtu, pro každý termín nákupu. Počítají se jen potvrzené \
            aktivní poptávky, podle viditelného rozpočtu. Poptávka na celou zemi se počítá v každém jejím kraji.",
    rule_before_k: "Buňky s méně než",
    rule_after_k: "různými lidmi s aktivními poptávkami jsou skryté (šrafované šedě): mnoho poptávek jednoho člověka buňku neodkryje.",
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

pub(super) static DEMAND_EN: DemandText = DemandText {
    title: "Demand heat map",
    intro: "Active buying requests by region and budget band, for each buy-by band. Only confirmed, active \
            requests count, by their visible budget. A request for a whole country counts in every region of it.",
    rule_before_k: "Cells with fewer than",
    rule_after_k: "different people with active requests are withheld (hatched grey): many requests from one person do not reveal a cell.",
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
    /// The column of the seller's handle for each request (its `inReplyTo`).
    pub handle: &'static str,
}

pub(super) static SELLER_SK: SellerText = SellerText {
    title: "Otvorené dopyty",
    intro: "Dopyty kupujúcich, ktorí prijímajú odpovede predajcov, vo vašich kategóriách a regiónoch. Kupujúci tu vystupujú pod pseudonymom, ktorý vidíte len vy; kontakt na nich nedostanete.",
    reply: "Ponuku k dopytu pošlete cez svojho asistenta (MCP nástroj intent_submit_offer na adrese nižšie), najviac 3 ponuky na dopyt:",
    none: "Vo vašich kategóriách a regiónoch teraz nie je žiadny otvorený dopyt.",
    buyer: "Kupujúci",
    no_profile: "Váš predajcovský účet ešte nemá profil (kategórie a regióny). Požiadajte prevádzkovateľa, aby vás zaregistroval.",
    sellers_only_title: "Len pre predajcov",
    sellers_only: "Táto stránka je určená registrovaným predajcom.",
    more: "Zobrazených je prvých 200 dopytov; ďalšie získate cez nástroj intent_list_open_intents.",
    handle: "Označenie dopytu (inReplyTo)",
};

pub(super) static SELLER_CS: SellerText = SellerText {
    title: "Otevřené poptávky",
    intro: "Poptávky kupujících, kteří přijímají odpovědi prodejců, ve vašich kategoriích a regionech. Kupující zde vystupují pod pseudonymem, který vidíte jen vy; kontakt na ně nedostanete.",
    reply: "Nabídku k poptávce pošlete přes svého asistenta (MCP nástroj intent_submit_offer na adrese níže), nejvýše 3 nabídky na poptávku:",
    none: "Ve vašich kategoriích a regionech teď není žádná otevřená poptávka.",
    buyer: "Kupující",
    no_profile: "Váš prodejcovský účet ještě nemá profil (kategorie a regiony). Požádejte provozovatele, aby vás zaregistroval.",
    sellers_only_title: "Jen pro prodejce",
    sellers_only: "Tato stránka je určena registrovaným prodejcům.",
    more: "Zobrazeno je prvních 200 poptávek; další získáte přes nástroj intent_list_open_intents.",
    handle: "Označení poptávky (inReplyTo)",
};

pub(super) static SELLER_EN: SellerText = SellerText {
    title: "Open requests",
    intro: "Buying requests whose buyers accept replies from sellers, in your categories and regions. Buyers appear under a pseudonym that only you see; their contact details are never given out.",
    reply: "Reply with an offer through your assistant (the MCP tool intent_submit_offer at the address below), at most 3 offers per request:",
    none: "There are no open requests in your categories and regions right now.",
    buyer: "Buyer",
    no_profile: "Your seller account has no seller profile yet (categories and regions). Ask the holder's operator to register you.",
    sellers_only_title: "For sellers only",
    sellers_only: "This page is for the holder's registered sellers.",
    more: "The first 200 requests are shown; get the others with the intent_list_open_intents tool.",
    handle: "Request reference (inReplyTo)",
};

/// The delivery cadence form's texts (issue 13 point 2: the results page and the page
/// after confirming). The cadences' own names are [`crate::records::Cadence::label`],
/// shared with the e-mails.
#[derive(Debug)]
pub struct CadenceText {
    /// The form's legend (a question).
    pub legend: &'static str,
    /// The sentence before the current cadence ("E-mails come: …").
    pub current: &'static str,
    /// What pause means for the matches found meanwhile.
    pub pause_hint: &'static str,
    /// The Save button.
    pub save: &'static str,
    /// The notice after saving (before the cadence chosen).
    pub saved: &'static str,
    /// 400: the `cadence` field is missing or not one of the four values; names the field.
    pub invalid: &'static str,
    /// Link back to the page with the form.
    pub back: &'static str,
}

pub(super) static CADENCE_SK: CadenceText = CadenceText {
    legend: "Ako často vám majú chodiť e-maily s ponukami?",
    current: "Teraz chodia:",
    pause_hint: "Počas pozastavenia sa nové ponuky ďalej zbierajú na tejto stránke; keď e-maily znova zapnete, prídu v najbližšom e-maile.",
    save: "Uložiť",
    saved: "Uložené. E-maily budú chodiť:",
    invalid: "Pole „cadence“ (ako často chodia e-maily) musí byť jedna zo štyroch možností: priebežne, denne, týždenne alebo pozastaviť.",
    back: "Späť na stránku výsledkov",
};

pub(super) static CADENCE_CS: CadenceText = CadenceText {
    legend: "Jak často vám mají chodit e-maily s nabídkami?",
    current: "Teď chodí:",
    pause_hint: "Během pozastavení se nové nabídky dál sbírají na této stránce; až e-maily znovu zapnete, přijdou v nejbližším e-mailu.",
    save: "Uložit",
    saved: "Uloženo. E-maily budou chodit:",
    invalid: "Pole „cadence“ (jak často chodí e-maily) musí být jedna ze čtyř možností: průběžně, denně, týdně nebo pozastavit.",
    back: "Zpět na stránku výsledků",
};

pub(super) static CADENCE_EN: CadenceText = CadenceText {
    legend: "How often should e-mails with offers come?",
    current: "They come now:",
    pause_hint: "While paused, new offers keep collecting on this page; when you switch e-mails back on, they come in the next e-mail.",
    save: "Save",
    saved: "Saved. E-mails will come:",
    invalid: "The field “cadence” (how often e-mails come) must be one of the four choices: as they come, daily, weekly, or pause.",
    back: "Back to the results page",
};
