//! The account pages' texts (sign-up, sign-in, password, account) for sk, cs and en (the texts:
//! `assets/i18n/<lang>.toml`, section `[account]`).

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
