/**
 * Installation: systemd units generated from the deno.json permission sets, with every value escaped.
 * Install and upgrade attempts build on this.
 *
 * @module
 */

export { renderUnit, unitName } from "./units.ts";
export type { UnitFile, UnitOptions, UnitSubcommand } from "./units.ts";
export { environmentLine, quoteExecWord, quotePath, UnitValueError } from "./systemd_escape.ts";
