// Sequential steps inside one node:test test: once a step fails, the following steps
// are reported as skipped ("an earlier step failed") instead of failing with confusing
// follow-up errors. Steps marked {independent: true} run anyway, unless their
// `needs` function (what they check must exist) returns a falsy value.

export function stepper(t) {
  let failed = null;
  return async function step(name, fn, { independent = false, needs } = {}) {
    if (failed && !independent) {
      await t.test(name, { skip: `earlier step failed: ${failed}` }, () => {});
      return undefined;
    }
    if (needs && !needs()) {
      const why = failed ? `earlier step failed: ${failed}` : "what it checks was not produced";
      await t.test(name, { skip: why }, () => {});
      return undefined;
    }
    let value;
    let ok = false;
    await t.test(name, async (st) => {
      value = await fn(st);
      ok = true;
    });
    if (!ok && !independent) failed = name;
    return value;
  };
}
