// A minimal MCP Apps host page for mcp_app.test.mjs, bundled for the browser with esbuild
// at test time: the official MCP client (@modelcontextprotocol/client, pinned to
// 2026-07-28, declaring the io.modelcontextprotocol/ui extension) talks to isto's /mcp
// through the test's same-origin proxy, and the official AppBridge
// (@modelcontextprotocol/ext-apps/app-bridge) renders the tool's view in a sandboxed
// iframe (scripts only: an opaque origin) and answers it over postMessage.
//
// window.istoHost.show({tool, args, theme, locale}) calls the tool, reads the view the
// tool links to (resources/read), renders it and resolves once the view has the result
// and has reported its size. Every ui/open-link request lands in window.istoHost.opened.

import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const EXTENSION = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";

let client = null;

async function connect() {
  if (client) return client;
  client = new Client(
    { name: "isto-e2e-app-host", version: "0.0.0" },
    {
      capabilities: { extensions: { [EXTENSION]: { mimeTypes: [MIME] } } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  return client;
}

const host = {
  opened: [],
  tools: null,
  resource: null,
  result: null,
  /** Shows `tool`'s view for a call with `args`; resolves with the tool's result. */
  async show({ tool, args, theme = "light", locale = "en-GB", width = 640 }) {
    const c = await connect();
    host.tools ??= (await c.listTools()).tools;
    const def = host.tools.find((t) => t.name === tool);
    const uri = def?._meta?.ui?.resourceUri;
    if (!uri) throw new Error(`${tool} links no view: ${JSON.stringify(def?._meta)}`);
    const read = await c.readResource({ uri });
    host.resource = read.contents[0];
    const result = await c.callTool({ name: tool, arguments: args });
    host.result = result;

    document.querySelector("#stage")?.remove();
    const stage = document.createElement("section");
    stage.id = "stage";
    stage.style.width = `${width}px`;
    const iframe = document.createElement("iframe");
    iframe.title = "isto";
    iframe.setAttribute("sandbox", "allow-scripts");
    iframe.style.cssText = "display:block;width:100%;border:0;height:40px";
    stage.append(iframe);
    document.body.append(stage);

    const bridge = new AppBridge(
      c,
      { name: "isto-e2e-app-host", version: "0.0.0" },
      { openLinks: {}, serverTools: {}, serverResources: {} },
      {
        hostContext: {
          theme,
          locale,
          timeZone: "Europe/Bratislava",
          displayMode: "inline",
          availableDisplayModes: ["inline"],
          platform: "web",
          containerDimensions: { width, maxHeight: 6000 },
        },
      },
    );
    let sized = false;
    bridge.onopenlink = async ({ url }) => {
      host.opened.push(url);
      return {};
    };
    bridge.onsizechange = ({ height }) => {
      if (height) iframe.style.height = `${height}px`;
      sized = true;
    };
    const delivered = new Promise((resolve) => {
      bridge.oninitialized = async () => {
        await bridge.sendToolInput({ arguments: args });
        await bridge.sendToolResult(result);
        resolve();
      };
    });
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    iframe.srcdoc = host.resource.text;
    await delivered;
    const t0 = Date.now();
    while (!sized && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 50));
    host.bridge = bridge;
    return result;
  },
};

window.istoHost = host;
