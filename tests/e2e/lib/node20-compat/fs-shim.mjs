// `fs` for the conformance bundle on Node < 22: everything from node:fs plus a globSync
// stub (only the unused `tier-check` command calls it).
import fs from "node:fs";

export * from "node:fs";
export default fs;
export const globSync =
  fs.globSync ??
  function globSync() {
    throw new Error("fs.globSync needs Node >= 22 (only `conformance tier-check` uses it)");
  };
