// isto's MCP Apps view (SEP-1865 "MCP Apps", protocol 2026-01-26): a minimal View-side
// client — ui/initialize, ui/notifications/initialized, the host's tool-input,
// tool-result, tool-cancelled and host-context-changed notifications, ping and
// ui/resource-teardown, and the View's ui/open-link and ui/notifications/size-changed —
// over JSON-RPC 2.0 through postMessage with the parent window only. It draws offer cards
// (intent_search_offers, intent_list_matches) or the intent's status card
// (intent_publish_intent, intent_get_intent) from the result's structuredContent and
// nothing else; it fetches nothing and opens every link through the host.
(function () {
  "use strict";
  var PROTOCOL = "2026-01-26";
  var DATA = JSON.parse(document.getElementById("isto-data").textContent);
  var T = {
    en: {
      offers: "Offers", found: "Offers found: ", none: "No offers found.",
      matches: "Offers for your request", delivered: "Offers delivered: ", noneYet: "No offers have been sent yet.",
      fresh: "New", why: "Why this offer:", seller: "Seller", open: "Open the listing",
      awaiting_consent: "Waiting for your consent",
      awaiting_email_confirmation: "Waiting for your e-mail confirmation",
      active: "Your request is active", expired: "Your request has expired", withdrawn: "Your request was withdrawn",
      consent: "Enter your e-mail address and give your consent on the holder's page. Your assistant does not open it for you.",
      consentBtn: "Open the consent page", consentElsewhere: "Open the consent link your assistant gave you.",
      confirm: "We sent you an e-mail: open its link to confirm the request.",
      count: "Offers delivered", cadence: "E-mails", results: "Results page", resultsBtn: "Open the results page",
      resultsMail: "The link to your results page is in our e-mails.",
      hidden: "A hidden price limit is set. Sellers never see it; only offers within it are sent to you.",
      until: "Valid until", area: "Area", budget: "Budget", upTo: "up to", from: "from",
      error: "The holder could not answer: ", cancelled: "The request was cancelled.", loading: "Loading…",
      cadences: {
        as_they_come: "as they come", daily: "daily (at most one e-mail in 24 hours)",
        weekly: "weekly (at most one e-mail in 7 days)", pause: "paused (no e-mail; offers collect on the results page)"
      }
    },
    sk: {
      offers: "Ponuky", found: "Nájdené ponuky: ", none: "Nenašli sa žiadne ponuky.",
      matches: "Ponuky pre váš dopyt", delivered: "Doručené ponuky: ", noneYet: "Zatiaľ vám neprišli žiadne ponuky.",
      fresh: "Nová", why: "Prečo táto ponuka:", seller: "Predajca", open: "Otvoriť inzerát",
      awaiting_consent: "Čaká na váš súhlas",
      awaiting_email_confirmation: "Čaká na potvrdenie e-mailom",
      active: "Váš dopyt je aktívny", expired: "Platnosť dopytu skončila", withdrawn: "Dopyt bol stiahnutý",
      consent: "Na stránke držiteľa zadajte svoju e-mailovú adresu a udeľte súhlas. Váš asistent ju za vás neotvára.",
      consentBtn: "Otvoriť stránku súhlasu", consentElsewhere: "Otvorte odkaz na súhlas, ktorý vám dal váš asistent.",
      confirm: "Poslali sme vám e-mail: dopyt potvrďte odkazom v ňom.",
      count: "Doručené ponuky", cadence: "E-maily", results: "Stránka výsledkov", resultsBtn: "Otvoriť stránku výsledkov",
      resultsMail: "Odkaz na stránku výsledkov nájdete v našich e-mailoch.",
      hidden: "Je nastavený skrytý cenový limit. Predajcovia ho nevidia; posielame vám len ponuky, ktoré ho neprekračujú.",
      until: "Platí do", area: "Oblasť", budget: "Rozpočet", upTo: "do", from: "od",
      error: "Držiteľ nemohol odpovedať: ", cancelled: "Požiadavka bola zrušená.", loading: "Načítava sa…",
      cadences: {
        as_they_come: "priebežne, hneď ako prídu", daily: "denne (najviac jeden e-mail za 24 hodín)",
        weekly: "týždenne (najviac jeden e-mail za 7 dní)",
        pause: "pozastavené (e-maily nechodia, ponuky sa zbierajú na stránke výsledkov)"
      }
    },
    cs: {
      offers: "Nabídky", found: "Nalezené nabídky: ", none: "Nebyly nalezeny žádné nabídky.",
      matches: "Nabídky pro vaši poptávku", delivered: "Doručené nabídky: ", noneYet: "Zatím vám nepřišly žádné nabídky.",
      fresh: "Nová", why: "Proč tato nabídka:", seller: "Prodejce", open: "Otevřít inzerát",
      awaiting_consent: "Čeká na váš souhlas",
      awaiting_email_confirmation: "Čeká na potvrzení e-mailem",
      active: "Vaše poptávka je aktivní", expired: "Platnost poptávky skončila", withdrawn: "Poptávka byla stažena",
      consent: "Na stránce držitele zadejte svou e-mailovou adresu a udělte souhlas. Váš asistent ji za vás neotevírá.",
      consentBtn: "Otevřít stránku souhlasu", consentElsewhere: "Otevřete odkaz na souhlas, který vám dal váš asistent.",
      confirm: "Poslali jsme vám e-mail: poptávku potvrďte odkazem v něm.",
      count: "Doručené nabídky", cadence: "E-maily", results: "Stránka výsledků", resultsBtn: "Otevřít stránku výsledků",
      resultsMail: "Odkaz na stránku výsledků najdete v našich e-mailech.",
      hidden: "Je nastaven skrytý cenový limit. Prodejci ho nevidí; posíláme vám jen nabídky, které ho nepřekračují.",
      until: "Platí do", area: "Oblast", budget: "Rozpočet", upTo: "do", from: "od",
      error: "Držitel nemohl odpovědět: ", cancelled: "Požadavek byl zrušen.", loading: "Načítá se…",
      cadences: {
        as_they_come: "průběžně, hned jak přijdou", daily: "denně (nejvýše jeden e-mail za 24 hodin)",
        weekly: "týdně (nejvýše jeden e-mail za 7 dní)",
        pause: "pozastaveno (e-maily nechodí, nabídky se sbírají na stránce výsledků)"
      }
    }
  };
  var COUNTRIES = { sk: { SK: "Slovensko", CZ: "Česko" }, cs: { SK: "Slovensko", CZ: "Česko" }, en: { SK: "Slovakia", CZ: "Czechia" } };

  var ctx = {};
  var args = null;
  var result = null;
  var cancelled = false;
  var nextId = 1;
  var pending = {};
  var root = document.getElementById("view");

  // ---- JSON-RPC over postMessage (the parent window only) ----
  function send(msg) { window.parent.postMessage(msg, "*"); }
  function request(method, params) {
    var id = nextId++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params });
    return new Promise(function (resolve, reject) { pending[id] = { resolve: resolve, reject: reject }; });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function answer(id, res, err) {
    send(err ? { jsonrpc: "2.0", id: id, error: err } : { jsonrpc: "2.0", id: id, result: res });
  }
  window.addEventListener("message", function (e) {
    var m = e.data;
    if (e.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined) {
      var p = pending[m.id];
      if (!p) return;
      delete pending[m.id];
      if (m.error) p.reject(m.error); else p.resolve(m.result || {});
    } else if (m.id !== undefined) {
      if (m.method === "ping" || m.method === "ui/resource-teardown") answer(m.id, {});
      else answer(m.id, null, { code: -32601, message: "Method not found: " + m.method });
    } else {
      onNotification(m.method, m.params || {});
    }
  });
  function onNotification(method, params) {
    if (method === "ui/notifications/tool-input") args = params.arguments || {};
    else if (method === "ui/notifications/tool-result") { result = params; cancelled = false; }
    else if (method === "ui/notifications/tool-cancelled") cancelled = true;
    else if (method === "ui/notifications/host-context-changed") { merge(params); theme(); }
    else return;
    draw();
  }
  function merge(part) { for (var k in part) if (Object.prototype.hasOwnProperty.call(part, k)) ctx[k] = part[k]; }

  // ---- the host's theme (SEP-1865 "Theming"); fonts from other origins are not loaded ----
  function theme() {
    var html = document.documentElement;
    if (ctx.theme === "light" || ctx.theme === "dark") html.setAttribute("data-theme", ctx.theme);
    var vars = ctx.styles && ctx.styles.variables;
    if (vars && typeof vars === "object") {
      for (var k in vars) {
        if (/^--[a-z0-9-]+$/.test(k) && typeof vars[k] === "string" && !/url\s*\(|@\s*import/i.test(vars[k])) html.style.setProperty(k, vars[k]);
      }
    }
  }

  // ---- words ----
  function lang() {
    var want = [typeof ctx.locale === "string" ? ctx.locale : ""];
    var sc = result && result.structuredContent;
    if (sc && sc.intent) want.push(sc.intent.language);
    if (sc && sc.view) want.push(sc.view.language);
    for (var i = 0; i < want.length; i++) {
      var l = String(want[i] || "").split(/[-_]/)[0].toLowerCase();
      if (l === "cz") l = "cs";
      if (T[l]) return l;
    }
    return "en";
  }
  function amount(a) {
    var s = String(Math.round(Math.abs(Number(a) || 0)));
    var out = "";
    for (var i = 0; i < s.length; i++) { if (i > 0 && (s.length - i) % 3 === 0) out += "\u00a0"; out += s[i]; }
    return (Number(a) < 0 ? "-" : "") + out;
  }
  function money(p) { return p && p.amount !== undefined ? amount(p.amount) + "\u00a0" + (p.currency || "") : ""; }
  function area(a, l) {
    if (!a) return "";
    if (a.place) return a.place;
    var names = (a.regions || []).map(function (r) { return (DATA.regions[r] && DATA.regions[r][l]) || r; });
    return names.length ? names.join(", ") : (COUNTRIES[l][a.country] || a.country || "");
  }
  function day(s, l) {
    var d = new Date(s);
    if (isNaN(d)) return "";
    try { return new Intl.DateTimeFormat(l, { dateStyle: "long", timeZone: ctx.timeZone || "UTC" }).format(d); }
    catch (e) { return s.slice(0, 10); }
  }
  function webUrl(u) {
    try { var x = new URL(u); return x.protocol === "https:" || x.protocol === "http:" ? x.href : null; } catch (e) { return null; }
  }

  // ---- DOM ----
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = text;
    return n;
  }
  function openThroughHost(url) {
    request("ui/open-link", { url: url }).catch(function () {});
  }
  function link(text, url, label) {
    var a = el("a", "open", text);
    a.href = url;
    a.rel = "noopener noreferrer";
    if (label) a.setAttribute("aria-label", label);
    a.addEventListener("click", function (e) { e.preventDefault(); openThroughHost(url); });
    return a;
  }
  function button(text, url) {
    var b = el("button", "", text);
    b.type = "button";
    b.addEventListener("click", function () { openThroughHost(url); });
    return b;
  }

  function offerCard(o, t, l, extra) {
    var li = el("li", "card");
    var top = el("div", "top");
    var h = el("h2");
    if (extra && extra.fresh) h.appendChild(el("span", "badge", t.fresh));
    h.appendChild(document.createTextNode(o.title || ""));
    top.appendChild(h);
    top.appendChild(el("span", "price", money(o.price)));
    li.appendChild(top);
    var facts = [area(o.area, l)];
    if (o.seller && o.seller.name) facts.push(t.seller + ": " + o.seller.name);
    li.appendChild(el("p", "facts", facts.filter(Boolean).join(" · ")));
    if (extra && extra.why && extra.why.length) {
      var why = el("p", "why");
      why.appendChild(el("b", "", t.why));
      why.appendChild(document.createTextNode(" " + extra.why.join("; ")));
      li.appendChild(why);
    }
    var url = webUrl((o.source && o.source.url) || (o.seller && o.seller.url));
    if (url) li.appendChild(link(t.open, url, t.open + ": " + (o.title || "")));
    return li;
  }

  function offers(list, t, l) {
    var out = [el("h1", "", t.offers), el("p", "muted", list.length ? t.found + list.length : t.none)];
    var ul = el("ul", "cards");
    list.forEach(function (o) { ul.appendChild(offerCard(o || {}, t, l)); });
    if (list.length) out.push(ul);
    return out;
  }

  function matches(list, t, l) {
    var since = args && typeof args.since === "string" ? Date.parse(args.since) : NaN;
    var out = [el("h1", "", t.matches), el("p", "muted", list.length ? t.delivered + list.length : t.noneYet)];
    var ul = el("ul", "cards");
    list.forEach(function (m) {
      m = m || {};
      var ext = m.extensions || {};
      var why = Array.isArray(ext.reasons) ? ext.reasons.filter(function (r) { return typeof r === "string"; }) : [];
      var fresh = !isNaN(since) && Date.parse(m.deliveredAt) > since;
      ul.appendChild(offerCard(m.offer || {}, t, l, { why: why, fresh: fresh }));
    });
    if (list.length) out.push(ul);
    return out;
  }

  function fact(dl, term, value) {
    if (value === "" || value === null || value === undefined) return;
    dl.appendChild(el("dt", "", term));
    var dd = el("dd");
    if (typeof value === "string") dd.textContent = value; else dd.appendChild(value);
    dl.appendChild(dd);
  }

  function budget(b, t) {
    if (!b) return "";
    var cur = "\u00a0" + (b.currency || "");
    if (b.min !== undefined && b.max !== undefined) return amount(b.min) + "\u00a0– " + amount(b.max) + cur;
    if (b.max !== undefined) return t.upTo + " " + amount(b.max) + cur;
    if (b.min !== undefined) return t.from + " " + amount(b.min) + cur;
    return "";
  }

  function status(sc, t, l) {
    var i = sc.intent || {};
    var v = sc.view || {};
    var st = i.status || "";
    var card = el("section", "card status " + (st === "active" ? "active" : /^awaiting/.test(st) ? "waiting" : ""));
    card.setAttribute("aria-labelledby", "st-h");
    var h = el("h1", "", t[st] || st);
    h.id = "st-h";
    card.appendChild(h);
    if (i.statement) card.appendChild(el("p", "statement", i.statement));
    var dl = el("dl");
    fact(dl, t.area, area(i.area, l));
    fact(dl, t.budget, budget(i.budget, t));
    if (st === "active") {
      var n = i.extensions && typeof i.extensions.matchCount === "number" ? i.extensions.matchCount : 0;
      fact(dl, t.count, String(n));
      if (v.cadence && t.cadences[v.cadence]) fact(dl, t.cadence, t.cadences[v.cadence]);
    }
    fact(dl, t.until, day(i.validUntil, l));
    card.appendChild(dl);
    if (i.hasHiddenLimit) card.appendChild(el("p", "muted", t.hidden));
    if (st === "awaiting_consent") {
      var consent = webUrl(sc.consentUrl);
      card.appendChild(el("p", "", consent ? t.consent : t.consentElsewhere));
      if (consent) card.appendChild(button(t.consentBtn, consent));
    } else if (st === "awaiting_email_confirmation") {
      card.appendChild(el("p", "", t.confirm));
    } else if (st === "active") {
      var results = webUrl(v.resultsUrl);
      if (results) card.appendChild(button(t.resultsBtn, results));
      else card.appendChild(el("p", "muted", t.resultsMail));
    }
    return [card];
  }

  function draw() {
    var l = lang();
    var t = T[l];
    document.documentElement.lang = l;
    var parts;
    var sc = result && result.structuredContent;
    if (cancelled) parts = [el("p", "", t.cancelled)];
    else if (!result) parts = [el("p", "muted", t.loading)];
    else if (result.isError) {
      var text = (result.content || []).filter(function (c) { return c && c.type === "text"; }).map(function (c) { return c.text; }).join(" ");
      parts = [el("p", "", t.error + text)];
    } else if (sc && Array.isArray(sc.offers)) parts = offers(sc.offers, t, l);
    else if (sc && Array.isArray(sc.matches)) parts = matches(sc.matches, t, l);
    else if (sc && sc.intent) parts = status(sc, t, l);
    else parts = [el("p", "muted", t.none)];
    root.replaceChildren.apply(root, parts);
    root.setAttribute("aria-busy", result || cancelled ? "false" : "true");
  }

  // ---- size (SEP-1865 "Container Dimensions": the View reports its size) ----
  var lastW = 0;
  var lastH = 0;
  var queued = false;
  function measure() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () {
      queued = false;
      var html = document.documentElement;
      var keep = html.style.height;
      html.style.height = "max-content";
      var h = Math.ceil(html.getBoundingClientRect().height);
      html.style.height = keep;
      var w = Math.ceil(window.innerWidth);
      if (w !== lastW || h !== lastH) { lastW = w; lastH = h; notify("ui/notifications/size-changed", { width: w, height: h }); }
    });
  }

  draw();
  request("ui/initialize", {
    appInfo: { name: "isto", version: DATA.version },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: PROTOCOL
  }).then(function (r) {
    merge(r.hostContext || {});
    theme();
    notify("ui/notifications/initialized", {});
    draw();
    var ro = new ResizeObserver(measure);
    ro.observe(document.documentElement);
    ro.observe(document.body);
    measure();
  }, function () { draw(); });
})();
