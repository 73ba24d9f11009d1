// `ployz machine upgrade`: a client-driven, bounded sequence over the named Machines, one after another. Each
// Machine upgrades itself from its own release source (Machine RPC `ployz.machine.upgrade.v1`); this command
// follows the attempt across the daemon's restart and reports what it observed. It stops at the first Machine that
// did not verifiably succeed; nothing is persisted as a desired fleet version and nothing is rolled back.
import { CliError, type Command, type Io, UsageError } from "../../lib/cli/mod.ts";
import { isRpcErrorCode } from "../../lib/rpc/mod.ts";
import type { ErrorCode } from "../../lib/util/mod.ts";
import { cliError, entryMachine, jsonLine, openConfig } from "./connect.ts";
import { targetMachine } from "./machine_target.ts";
import {
  commandKey,
  type MachineUpgradeOutcome,
  type ReceiptBook,
  runUpgradeSequence,
  type UpgradeReceipt,
  type UpgradeSequenceResult,
  type UpgradeTarget,
} from "../../lib/operator/mod.ts";
import { sharedOptions, stringFlag, timeoutMs } from "./flags.ts";

function target(name: string | undefined): UpgradeTarget {
  if (name === undefined) return { label: "local", connect: entryMachine };
  if (name.startsWith("/")) {
    return { label: name, connect: () => targetMachine({ socket: name, what: `Machine "${name}"` }) };
  }
  // Validated now, so a bad destination is a usage mistake before anything is asked.
  targetMachine({ ssh: name, what: `Machine "${name}"` }).close();
  return { label: name, connect: () => targetMachine({ ssh: name, what: `Machine "${name}"` }) };
}

function isReceipt(value: unknown): value is UpgradeReceipt {
  return value !== null && typeof value === "object" &&
    typeof (value as UpgradeReceipt).request_key === "string" &&
    typeof (value as UpgradeReceipt).finished === "boolean";
}

function seconds1(ms: number | undefined): string {
  return ms === undefined ? "?" : `${(ms / 1000).toFixed(1)} s`;
}

function describe(o: MachineUpgradeOutcome): string {
  const who = o.machine_name === undefined ? `"${o.target}"` : `"${o.machine_name}" (${o.target})`;
  const attempt = o.attempt_id === undefined ? "" : `, attempt ${o.attempt_id}`;
  switch (o.result) {
    case "succeeded":
      return `Machine ${who}: succeeded, ${o.from_version ?? "?"} → ${o.target_version}${attempt}${
        o.existing ? " (found from an earlier run)" : ""
      }; verified: the daemon answers as ${o.observed_version}; request → ready ${
        seconds1(o.request_to_ready_ms)
      }; management unreachable ${seconds1(o.management_unreachable_ms)}`;
    case "not_attempted":
      return `Machine ${who}: not attempted`;
    case "failed":
    case "interrupted":
      return `Machine ${who}: ${o.result} at stage "${o.stage}"${attempt}: ${o.error ?? "no detail"}${
        o.note ? `; ${o.note}` : ""
      }; diagnostics: ${o.journal_hint}`;
    case "unknown":
      return `Machine ${who}: outcome unknown${attempt}${
        o.stage ? ` (last seen at stage "${o.stage}")` : ""
      }: ${o.error ?? "no detail"}`;
    default:
      return `Machine ${who}: ${o.result}, nothing was changed there: ${o.error ?? "no detail"}`;
  }
}

function report(io: Io, result: UpgradeSequenceResult): void {
  for (const o of result.machines) io.out(describe(o) + "\n");
  const names = (r: (o: MachineUpgradeOutcome) => boolean): string =>
    result.machines.filter(r).map((o) => o.machine_name ?? o.target).join(", ") || "none";
  io.out(
    `done: ${names((o) => o.result === "succeeded")}; failed: ${
      names((o) => ["failed", "interrupted", "refused", "unreachable"].includes(o.result))
    }; unknown: ${names((o) => o.result === "unknown")}; not attempted: ${
      names((o) => o.result === "not_attempted")
    }\n`,
  );
}

/** `ployz machine upgrade`. */
export const machineUpgradeCommand: Command = {
  name: "upgrade",
  summary: "Upgrade Machines' Ployz software, one after another, and report each outcome",
  usage: "[--version V | --channel C] [MACHINE…] [--timeout SECONDS] [--json]",
  description: [
    "Each MACHINE is a daemon socket path (e.g. a lab Machine's) or an SSH destination; none means the local",
    "Machine. Each Machine upgrades from the release source it was installed from, as a bounded attempt that",
    "survives this command ending; the command follows it across the daemon's restart (--timeout per Machine,",
    "default 900 s). Running the same command again finds the same attempts. The sequence stops at the first",
    "Machine that fails, refuses or cannot be confirmed; later Machines are not attempted. No automatic rollback.",
  ],
  options: { version: { type: "string" }, channel: { type: "string" }, ...sharedOptions("timeout", "json") },
  positionals: [0, 64],
  async run({ values, positionals, io }): Promise<number> {
    const version = stringFlag(values, "version");
    const channel = stringFlag(values, "channel");
    if (version !== undefined && channel !== undefined) {
      throw new UsageError("Give at most one of --version and --channel");
    }
    const timeout = timeoutMs(values, 900);
    const names = positionals.length === 0 ? [undefined] : positionals;
    if (new Set(names).size !== names.length) throw new UsageError("Each MACHINE may be named once");
    const targets = names.map(target);
    const json = values.json === true;
    using config = openConfig();
    const key = commandKey({ version, channel });
    const receipts: ReceiptBook = {
      load(leg) {
        const found = config.receipts(key).find((r) => r.leg === leg)?.receipt;
        return isReceipt(found) ? found : undefined;
      },
      save(leg, receipt) {
        config.saveReceipt({ requestKey: key, leg, receipt, savedAt: new Date().toISOString() });
      },
    };
    let result: UpgradeSequenceResult;
    try {
      result = await runUpgradeSequence({
        version,
        channel,
        targets,
        receipts,
        timeoutMs: timeout,
        progress: json ? undefined : (line) => io.err(`${line}\n`),
      });
    } catch (error) {
      throw cliError(error);
    }
    if (json) {
      io.out(jsonLine(result));
      return result.ok ? 0 : 1;
    }
    report(io, result);
    if (result.ok) return 0;
    const stop = result.machines.find((o) => o.result !== "succeeded" && o.result !== "not_attempted")!;
    const code: ErrorCode = isRpcErrorCode(stop.error_code)
      ? stop.error_code
      : stop.result === "unknown" || stop.result === "unreachable"
      ? "unavailable"
      : "internal";
    throw new CliError(
      code,
      `Upgrade stopped at Machine "${stop.machine_name ?? stop.target}": ${stop.result}`,
      { details: { "attempt_id": stop.attempt_id ?? null, stage: stop.stage ?? null } },
    );
  },
};
