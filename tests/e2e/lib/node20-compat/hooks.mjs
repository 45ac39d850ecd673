// Module resolve hook, see register.mjs.
const SHIM = new URL("./fs-shim.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (
    (specifier === "fs" || specifier === "node:fs") &&
    context.parentURL &&
    context.parentURL.includes("/@modelcontextprotocol/conformance/")
  ) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
