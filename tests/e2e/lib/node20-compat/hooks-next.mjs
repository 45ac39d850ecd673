// Module resolve hook for register-next.mjs: like hooks.mjs, but it also covers the
// conformance runner installed under the npm alias `conformance-next` (its files live in
// node_modules/conformance-next/, not node_modules/@modelcontextprotocol/conformance/).
const SHIM = new URL("./fs-shim.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (
    (specifier === "fs" || specifier === "node:fs") &&
    context.parentURL &&
    (context.parentURL.includes("/@modelcontextprotocol/conformance/") ||
      context.parentURL.includes("/node_modules/conformance-next/"))
  ) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
