// `node --import ./lib/node20-compat/register-next.mjs` for the 0.2.0 pre-release of the
// conformance runner (npm alias `conformance-next`, see package.json): the same fs.globSync
// stub as register.mjs, for both installed runners. On Node >= 22 it does nothing.
import { register } from "node:module";

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  register("./hooks-next.mjs", import.meta.url);
}
