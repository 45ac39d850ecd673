//! The texts of the pages behind links that may have leaked or ended (consent,
//! confirmation and results links): the way forward from an expired or used link, and
//! the cadence change confirmed by e-mail; in sk, cs and en.

/// Texts of used, expired and leaked links.
#[derive(Debug)]
pub struct LinkText {
    /// Heading of the way forward from an ended or used link.
    pub forward_heading: &'static str,
    /// How to start again (a new consent link comes from the assistant).
    pub start_again: &'static str,
    /// Link text to the home page, which says how to start.
    pub start_again_link: &'static str,
    /// A used confirmation link: where the person manages the request now.
    pub confirm_used: &'static str,
    /// Results page notice: the change waits for the person's confirmation by e-mail.
    pub cadence_mailed: &'static str,
    /// The cadence e-mail link's page: title.
    pub cadence_confirm_title: &'static str,
    /// The cadence e-mail link's page: before the cadence asked for.
    pub cadence_confirm_intro: &'static str,
    /// The cadence e-mail link's page: the button.
    pub cadence_confirm_button: &'static str,
    /// The cadence e-mail link is forged or older than two hours.
    pub cadence_link_expired: &'static str,
}

pub(super) static LINKS_SK: LinkText = LinkText {
    forward_heading: "Čo ďalej",
    start_again: "Ak dopyt stále chcete, začnite znova: požiadajte asistenta, aby ho zverejnil ešte raz, a dostanete nový odkaz. S účtom vidíte všetky svoje dopyty na jednom mieste.",
    start_again_link: "Začať znova",
    confirm_used: "Tento potvrdzovací odkaz už splnil svoju úlohu. E-maily o dopyte obsahujú odkaz na stránku výsledkov (tam zmeníte, ako často e-maily chodia) a odkaz, ktorým dopyt zrušíte.",
    cadence_mailed: "Poslali sme vám e-mail na potvrdenie tejto zmeny. Kým ju odkazom v e-maile nepotvrdíte, nič sa nezmení. Ak ste prihlásení, zmena platí hneď.",
    cadence_confirm_title: "Potvrďte zmenu e-mailov",
    cadence_confirm_intro: "E-maily o tomto dopyte budú chodiť:",
    cadence_confirm_button: "Potvrdiť zmenu",
    cadence_link_expired: "Tento odkaz je nesprávny alebo vypršal (platí 2 hodiny). Zmenu vyberte znova na stránke výsledkov; pošleme vám nový odkaz.",
};

pub(super) static LINKS_CS: LinkText = LinkText {
    forward_heading: "Co dál",
    start_again: "Pokud poptávku stále chcete, začněte znovu: požádejte asistenta, aby ji zveřejnil ještě jednou, a dostanete nový odkaz. S účtem vidíte všechny své poptávky na jednom místě.",
    start_again_link: "Začít znovu",
    confirm_used: "Tento potvrzovací odkaz již splnil svůj účel. E-maily o poptávce obsahují odkaz na stránku výsledků (tam změníte, jak často e-maily chodí) a odkaz, kterým poptávku zrušíte.",
    cadence_mailed: "Poslali jsme vám e-mail k potvrzení této změny. Dokud ji odkazem v e-mailu nepotvrdíte, nic se nezmění. Pokud jste přihlášeni, změna platí hned.",
    cadence_confirm_title: "Potvrďte změnu e-mailů",
    cadence_confirm_intro: "E-maily o této poptávce budou chodit:",
    cadence_confirm_button: "Potvrdit změnu",
    cadence_link_expired: "Tento odkaz je chybný nebo vypršel (platí 2 hodiny). Změnu vyberte znovu na stránce výsledků; pošleme vám nový odkaz.",
};

pub(super) static LINKS_EN: LinkText = LinkText {
    forward_heading: "What now",
    start_again: "If you still want the request, start again: ask your assistant to publish it once more and you get a new link. With an account you see all your requests in one place.",
    start_again_link: "Start again",
    confirm_used: "This confirmation link has done its job. The e-mails about the request hold the link to its results page (where you change how often e-mails come) and the link that withdraws it.",
    cadence_mailed: "We sent you an e-mail to confirm this change. Nothing changes until you confirm it with the link in that e-mail. When you are signed in, a change applies at once.",
    cadence_confirm_title: "Confirm the change to your e-mails",
    cadence_confirm_intro: "E-mails about this request will come:",
    cadence_confirm_button: "Confirm the change",
    cadence_link_expired: "This link is wrong or has expired (it works for 2 hours). Choose again on the results page and we send you a new link.",
};
