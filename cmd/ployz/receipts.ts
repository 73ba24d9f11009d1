// `ployz receipts`: the receipts the last bounded commands kept in the operator's Config Store, one line per leg.
import type { Command } from "../../lib/cli/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { jsonLine, openConfig } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions } from "./flags.ts";

/** `ployz receipts`. */
export const receiptsCommand: Command = {
  name: "receipts",
  summary: "Show the receipts of the last bounded commands (start, stop, restart, cleanup, drain…)",
  usage: "[REQUEST_KEY] [--last N] [--json]",
  positionals: [0, 1],
  options: { last: { type: "string" }, ...sharedOptions("json") },
  run({ values, positionals, io }): Promise<number> {
    const last = Number(values.last ?? "10");
    using config = openConfig();
    const list = positionals[0] !== undefined
      ? config.receipts(positionals[0])
      : config.recentReceipts(Number.isInteger(last) && last > 0 ? Math.min(last, 1000) : 10);
    if (values.json === true) {
      io.out(jsonLine({ receipts: list }));
    } else if (list.length === 0) io.out("No receipts\n");
    else {
      io.out(table(
        ["REQUEST KEY", "LEG", "SAVED", "RECEIPT"],
        list.map((r) => [r.requestKey, r.leg, r.savedAt, JSON.stringify(r.receipt)]),
      ));
    }
    return Promise.resolve(0);
  },
};

/** The receipts of request `key` in the Config Store, one per leg. */
export function receiptBook<T>(
  config: ConfigStore,
  key: string,
): { load(leg: string): T | undefined; save(leg: string, receipt: T): void } {
  return {
    load: (leg) => config.receipts(key).find((r) => r.leg === leg)?.receipt as T | undefined,
    save: (leg, receipt) =>
      config.saveReceipt({ requestKey: key, leg, receipt, savedAt: new Date().toISOString() }),
  };
}

/** The request key a bounded command runs under: the one given, or a new one naming the command. */
export function requestKey(given: unknown, command: string): string {
  return typeof given === "string" && given !== "" ? given : `${command}-${crypto.randomUUID().slice(0, 8)}`;
}
