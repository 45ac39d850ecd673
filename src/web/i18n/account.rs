//! The account pages' texts (sign-up, sign-in, password, account) in sk, cs and en.

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

pub(super) static ACCOUNT_SK: AccountText = AccountText {
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

pub(super) static ACCOUNT_CS: AccountText = AccountText {
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

pub(super) static ACCOUNT_EN: AccountText = AccountText {
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
