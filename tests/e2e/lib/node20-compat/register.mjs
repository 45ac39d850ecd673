// Loaded with `node --import ./lib/node20-compat/register.mjs` to run
// @modelcontextprotocol/conformance (bundled for Node >= 22) on Node 20.
// Its bundle does `import { globSync } from "fs"` at top level; on Node 20 that named
// export does not exist and the module fails to link, although globSync is only used by
// the `tier-check` command, which these tests never run. The resolve hook below hands
// the conformance bundle an `fs` that also exports a globSync stub. On Node >= 22 it
// does nothing.
import { register } from "node:module";

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  register("./hooks.mjs", import.meta.url);
}
