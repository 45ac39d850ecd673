"""The official MCP Python SDK (`mcp`, pinned in tests/run_all.sh) as an isto client,
driven by python_sdk.test.mjs.

    python3 mcp_python_flow.py consent URL MODE
        The consent-link flow on /mcp: publish, print {"step": "published", consentUrl,
        intentCode} as one JSON line, wait for one line on stdin (the test has consented
        and confirmed like the person), then get / list_matches / withdraw / get and print
        {"step": "done", ...}.
    python3 mcp_python_flow.py oauth URL MODE
        The OAuth flow on /mcp/buyer: the SDK's OAuthClientProvider (401 → metadata →
        registration → authorization); its redirect handler plays the person signed in
        with the cookie in ISTO_SESSION_COOKIE (GET the authorization page, POST Allow)
        and hands the code back; then publish / get / list_matches / withdraw with the
        token, printing {"step": "done", ...}.

    python3 mcp_python_flow.py seller URL MODE
        The seller's OAuth flow on /mcp/seller, the same way with the seller's session
        cookie in ISTO_SESSION_COOKIE; then tools/list, intent_list_open_intents {} and
        intent_submit_offer with the reply in ISTO_REPLY (JSON, without inReplyTo: the
        handle of the first open intent is put there), printing {"step": "done", ...}
        with both tools' structured results.
    python3 mcp_python_flow.py refused URL MODE
        The same with a buyer's session cookie on /mcp/seller, twice: with no stored
        credentials, then (when ISTO_PRELOAD is set) with those in ISTO_PRELOAD (JSON
        {client: a registration response, tokens: a token response}: the buyer's
        /mcp/buyer token is sent first). The authorization page refuses the buyer; each
        attempt prints {"step": "refused", preloaded, status, ...} (or {"step":
        "served", ...} if it got through), and the script exits 0.

MODE is "legacy" (2025-11-25: initialize, a session) or "2026-07-28" (stateless). Every
HTTP exchange is recorded ({method, path, status, request and response headers, the
JSON-RPC method}) and printed in the last line, for the test to check the wire. Errors
go to stderr with exit code 1. Network: the given URL only (127.0.0.1).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
from html.parser import HTMLParser
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout."""
    print(json.dumps(obj, ensure_ascii=False), flush=True)


class Recorder:
    """httpx2 event hooks that record every exchange (no bodies but the JSON-RPC method)."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []

    async def on_request(self, request: httpx2.Request) -> None:
        method = None
        try:
            body = json.loads(request.content or b"null")
            method = body.get("method") if isinstance(body, dict) else None
        except (ValueError, httpx2.RequestNotRead):
            pass
        request.extensions["isto_rpc"] = method

    async def on_response(self, response: httpx2.Response) -> None:
        req = response.request
        self.log.append(
            {
                "method": req.method,
                "path": req.url.path,
                "rpc": req.extensions.get("isto_rpc"),
                "status": response.status_code,
                "headers": {k.lower(): v for k, v in req.headers.items() if k.lower() != "authorization"},
                "bearer": req.headers.get("authorization", "").startswith("Bearer "),
                "resHeaders": {k.lower(): v for k, v in response.headers.items()},
            }
        )


def http_client(rec: Recorder, auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=60),
        auth=auth,
        event_hooks={"request": [rec.on_request], "response": [rec.on_response]},
    )


def structured(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error:
        texts = [getattr(c, "text", "") for c in result.content]
        raise RuntimeError(f"{tool} failed: {' '.join(texts)}")
    return result.structured_content


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return structured(await client.call_tool(tool, args), tool)


async def consent_flow(url: str, mode: str) -> None:
    rec = Recorder()
    async with http_client(rec) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            tools = await client.list_tools()
            pub = await call(
                client,
                "intent_publish_intent",
                {
                    "statement": "Hledám Škoda Octavia, nejlépe diesel",
                    "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia"},
                    "area": "CZ-64",
                    "budget": {"max": 400000, "currency": "CZK"},
                    "hiddenLimit": 250000,
                },
            )
            code = pub["intentCode"]
            emit({"step": "published", "consentUrl": pub["consentUrl"], "intentCode": code, "status": pub["intent"]["status"]})
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if line.strip() != "confirmed":
                raise RuntimeError(f"expected 'confirmed' on stdin, got {line!r}")
            got = await call(client, "intent_get_intent", {"intentCode": code})
            matches: list[Any] = []
            with anyio.move_on_after(20):
                while not matches:
                    matches = (await call(client, "intent_list_matches", {"intentCode": code}))["matches"]
                    if not matches:
                        await anyio.sleep(0.3)
            withdrawn = await call(client, "intent_withdraw_intent", {"intentCode": code})
            after = await call(client, "intent_get_intent", {"intentCode": code})
            emit(
                {
                    "step": "done",
                    "protocolVersion": client.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "statusAfterConfirm": got["intent"]["status"],
                    "matchTitles": [m.get("title") or (m.get("offer") or {}).get("title") for m in matches],
                    "withdraw": withdrawn["status"],
                    "statusAfterWithdraw": after["intent"]["status"],
                    "wire": rec.log,
                }
            )


class FormParser(HTMLParser):
    """The POST forms of a page: action and the inputs' names and values."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("method", "get").lower() == "post":
            self.forms.append({"action": a.get("action", ""), "fields": []})
        elif tag == "input" and self.forms and a.get("type", "").lower() == "hidden" and "name" in a:
            self.forms[-1]["fields"].append((a["name"], a.get("value", "")))


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class PersonRefused(Exception):
    """The authorization page did not offer Allow to the signed-in person (HTTP status)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"GET the authorization page: HTTP {status}")
        self.status = status


def oauth_provider(url: str, cookie: str, seen: dict[str, Any], storage: MemoryStorage) -> OAuthClientProvider:
    """The SDK's OAuthClientProvider for `url` whose redirect handler plays the person
    signed in with the session `cookie` (GET the authorization page, POST Allow) and
    whose callback handler hands the code back; `seen` gets the authorization URL's
    query ("authorizationQuery"), the redirect back ("redirect") and "authorizations"."""
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
    redirect_uri = "http://127.0.0.1:9/callback"

    async def act_as_person(authorization_url: str) -> None:
        """The signed-in person opens the authorization page and presses Allow."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)
        seen["authorizationQuery"] = {k: v[0] for k, v in query.items()}
        async with httpx2.AsyncClient(timeout=30, headers={"Cookie": f"isto_session={cookie}"}) as browser:
            page = await browser.get(authorization_url)
            if page.status_code != 200:
                raise PersonRefused(page.status_code)
            parser = FormParser()
            parser.feed(page.text)
            form = next((f for f in parser.forms if f["action"].endswith("/oauth/authorize")), None)
            if form is None:
                raise RuntimeError("no Allow form on the authorization page")
            fields = [*form["fields"], ("decision", "allow")]
            answer = await browser.post(
                urllib.parse.urljoin(authorization_url, form["action"]),
                content=urllib.parse.urlencode(fields),
                headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": origin, "Referer": authorization_url},
            )
            location = answer.headers.get("location", "")
            if answer.status_code != 303 or not location.startswith(redirect_uri):
                raise RuntimeError(f"POST Allow: HTTP {answer.status_code}, not a redirect to the client")
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
            seen["redirect"] = {k: v[0] for k, v in q.items()}
            seen["authorizations"] = seen.get("authorizations", 0) + 1

    async def callback() -> AuthorizationCodeResult:
        r = seen["redirect"]
        return AuthorizationCodeResult(code=r["code"], state=r.get("state"), iss=r.get("iss"))

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="isto e2e python agent",
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=act_as_person,
        callback_handler=callback,
    )


async def oauth_flow(url: str, mode: str) -> None:
    seen: dict[str, Any] = {}
    storage = MemoryStorage()
    provider = oauth_provider(url, os.environ["ISTO_SESSION_COOKIE"], seen, storage)
    rec = Recorder()
    async with http_client(rec, auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            tools = await client.list_tools()
            pub = await call(
                client,
                "intent_publish_intent",
                {"statement": "Hledám Škoda Octavia Combi, diesel", "area": "CZ-64", "budget": {"max": 300000, "currency": "CZK"}},
            )
            iid = pub["intent"]["id"]
            got = await call(client, "intent_get_intent", {"id": iid})
            listed = await call(client, "intent_list_matches", {"intent": iid})
            withdrawn = await call(client, "intent_withdraw_intent", {"id": iid})
            emit(
                {
                    "step": "done",
                    "protocolVersion": client.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "registered": storage.client is not None,
                    "authorizations": seen.get("authorizations", 0),
                    "published": pub["intent"]["status"],
                    "got": got["intent"]["status"],
                    "matchesIsList": isinstance(listed.get("matches"), list),
                    "withdraw": withdrawn["status"],
                    "wire": rec.log,
                }
            )


async def seller_flow(url: str, mode: str) -> None:
    seen: dict[str, Any] = {}
    storage = MemoryStorage()
    provider = oauth_provider(url, os.environ["ISTO_SESSION_COOKIE"], seen, storage)
    reply = json.loads(os.environ["ISTO_REPLY"])
    rec = Recorder()
    async with http_client(rec, auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            tools = await client.list_tools()
            opened = await call(client, "intent_list_open_intents", {})
            if not opened["intents"]:
                raise RuntimeError("intent_list_open_intents: no open intent to reply to")
            submitted = await call(client, "intent_submit_offer", {**reply, "inReplyTo": opened["intents"][0]["id"]})
            emit(
                {
                    "step": "done",
                    "protocolVersion": client.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "registered": storage.client is not None,
                    "authorizations": seen.get("authorizations", 0),
                    "authorizationQuery": seen.get("authorizationQuery"),
                    "redirect": {k: v for k, v in (seen.get("redirect") or {}).items() if k != "code"},
                    "tokenScope": storage.tokens.scope if storage.tokens else None,
                    "openIntents": opened,
                    "submitted": submitted,
                    "wire": rec.log,
                }
            )


def refusal_in(e: BaseException) -> PersonRefused | None:
    """The PersonRefused in `e`, its causes or (nested) exception groups."""
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, PersonRefused):
            return x
        todo.extend(getattr(x, "exceptions", ()))
        todo.extend([x.__cause__, x.__context__])
    return None


async def refused_attempt(url: str, mode: str, preload: dict[str, Any] | None) -> None:
    seen: dict[str, Any] = {}
    storage = MemoryStorage()
    if preload:
        storage.client = OAuthClientInformationFull.model_validate(preload["client"])
        storage.tokens = OAuthToken.model_validate(preload["tokens"])
    provider = oauth_provider(url, os.environ["ISTO_SESSION_COOKIE"], seen, storage)
    rec = Recorder()
    try:
        async with http_client(rec, auth=provider) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                tools = await client.list_tools()
                emit({"step": "served", "preloaded": bool(preload), "tools": [t.name for t in tools.tools], "wire": rec.log})
                return
    except Exception as e:  # noqa: BLE001 - only the person's refusal is expected
        refused = refusal_in(e)
        if refused is None:
            raise
        emit(
            {
                "step": "refused",
                "preloaded": bool(preload),
                "status": refused.status,
                "authorizationQuery": seen.get("authorizationQuery"),
                "wire": rec.log,
            }
        )


async def refused_flow(url: str, mode: str) -> None:
    await refused_attempt(url, mode, None)
    preload = json.loads(os.environ.get("ISTO_PRELOAD") or "null")
    if preload:
        await refused_attempt(url, mode, preload)


FLOWS = {"consent": consent_flow, "oauth": oauth_flow, "seller": seller_flow, "refused": refused_flow}


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in FLOWS:
        print(f"usage: mcp_python_flow.py {'|'.join(FLOWS)} URL legacy|2026-07-28", file=sys.stderr)
        return 2
    flow, url, mode = sys.argv[1:]
    try:
        anyio.run(FLOWS[flow], url, mode)
    except BaseException as e:  # noqa: BLE001 - reported to the test, with its kind
        print(f"{flow} flow failed: {type(e).__name__}: {e}", file=sys.stderr)
        if hasattr(e, "exceptions"):
            for sub in e.exceptions:
                print(f"  {type(sub).__name__}: {sub}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
