// The client-driven upgrade sequence behind `ployz machine upgrade`: one Machine after another, each a bounded
// request → poll-until-terminal → verify, with the request key kept in the Config Store's receipts so a re-run of
// the same command finds the same attempt. It stops at the first Machine that did not verifiably succeed: a
// failure, a refusal or an unknown (never continue past an unknown). There is no fleet state and no rollback.
import { CAPABILITIES, type MachineClient, RpcError, type UpgradeAttemptWire } from "../rpc/mod.ts";
import { messageOf, sleep } from "../util/mod.ts";

/** A Machine the sequence upgrades. */
export interface UpgradeTarget {
  /** How the operator named it: `local`, a socket path or an SSH destination. */
  label: string;
  /** A fresh client; called again after the connection is lost. */
  connect(): MachineClient;
}

/** What the receipt of one Machine's leg holds. */
export interface UpgradeReceipt {
  /** The key sent with the request. */
  "request_key": string;
  /** The attempt the Machine answered with, once known. */
  "attempt_id"?: string;
  /** True once this command observed a terminal result; a later run then starts afresh. */
  finished: boolean;
  /** The result observed. */
  result?: UpgradeResult;
}

/** Where receipts are kept (the Config Store in the CLI). */
export interface ReceiptBook {
  /** The receipt of a leg, if any. */
  load(leg: string): UpgradeReceipt | undefined;
  /** Saves a leg's receipt, replacing the previous one. */
  save(leg: string, receipt: UpgradeReceipt): void;
}

/** How one Machine's leg ended. */
export type UpgradeResult =
  | "succeeded"
  | "failed"
  | "interrupted"
  | "refused"
  | "unreachable"
  | "unknown"
  | "not_attempted";

/** One Machine's outcome: what was observed there, never more. */
export interface MachineUpgradeOutcome {
  /** The target as named. */
  target: string;
  /** How it ended. */
  result: UpgradeResult;
  /** The Machine's id, once it answered. */
  "machine_id"?: string;
  /** The Machine's name, once it answered. */
  "machine_name"?: string;
  /** The daemon version it reported before the request. */
  "from_version"?: string;
  /** The attempt. */
  "attempt_id"?: string;
  /** The request key sent. */
  "request_key"?: string;
  /** True when the key found an attempt an earlier run started. */
  existing?: boolean;
  /** The exact target the Machine resolved. */
  "target_version"?: string;
  /** The last stage the attempt recorded. */
  stage?: string;
  /** What went wrong or is unknown, one line. */
  error?: string;
  /** Its code. */
  "error_code"?: string;
  /** Where diagnostics are on the Machine. */
  "journal_hint"?: string;
  /** What this command itself observed afterwards: the daemon's reported version. */
  "observed_version"?: string;
  /** The Machine's own readiness evidence. */
  ready?: UpgradeAttemptWire["ready"];
  /** The Machine's record of request → verified ready. */
  "request_to_ready_ms"?: number;
  /** How long this command could not reach the Machine's management socket while it waited. */
  "management_unreachable_ms"?: number;
  /** Extra notes from the Machine (e.g. no rollback). */
  note?: string;
}

/** The whole sequence's answer. */
export interface UpgradeSequenceResult {
  /** One entry per target, in order; those after a stop are `not_attempted`. */
  machines: MachineUpgradeOutcome[];
  /** True when every Machine verifiably succeeded. */
  ok: boolean;
}

/** How to run the sequence. */
export interface UpgradeSequenceOptions {
  /** Exact version. */
  version?: string;
  /** Channel. */
  channel?: string;
  /** Machines, in order. */
  targets: UpgradeTarget[];
  /** Receipts of this command's legs. */
  receipts: ReceiptBook;
  /** Per-Machine bound on request + wait. */
  timeoutMs: number;
  /** Pause between status reads while the Machine answers; default 500 ms. */
  pollMs?: number;
  /** Progress lines. */
  progress?: (line: string) => void;
  /** A new request key. */
  mintKey?: () => string;
}

/** The receipts' request key of a command: the same target means the same command. */
export function commandKey(options: { version?: string; channel?: string }): string {
  if (options.version !== undefined) return `machine-upgrade version=${options.version}`;
  return `machine-upgrade channel=${options.channel ?? "default"}`;
}

const CALL_MS = 15_000;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 2_000;

/** True when the call failed to reach the Machine (or timed out), so it may answer again later. */
function unreachable(error: unknown): boolean {
  if (error instanceof RpcError) return error.code === "unavailable" && error.details.socket !== undefined;
  return error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError");
}

/** One Machine's connection, reopened after a loss, with the time it could not be reached. */
class Link {
  #client: MachineClient | undefined;
  #downSince: number | undefined;
  unreachableMs = 0;

  constructor(readonly target: UpgradeTarget) {}

  /** Calls `body` until it answers, reconnecting with backoff on loss, until `deadline`. */
  async call<T>(
    body: (client: MachineClient, signal: AbortSignal) => Promise<T>,
    deadline: number,
  ): Promise<T> {
    let backoff = BACKOFF_MIN_MS;
    while (true) {
      this.#client ??= this.target.connect();
      try {
        const answer = await body(
          this.#client,
          AbortSignal.timeout(Math.min(CALL_MS, deadline - Date.now())),
        );
        if (this.#downSince !== undefined) this.unreachableMs += Date.now() - this.#downSince;
        this.#downSince = undefined;
        return answer;
      } catch (error) {
        if (!unreachable(error)) throw error;
        this.#downSince ??= Date.now();
        this.close();
        if (Date.now() + backoff >= deadline) throw error;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  /** Closes the current connection. */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /** Closes and adds a still-open unreachable window. */
  finish(): void {
    if (this.#downSince !== undefined) this.unreachableMs += Date.now() - this.#downSince;
    this.#downSince = undefined;
    this.close();
  }
}

function fromAttempt(out: MachineUpgradeOutcome, attempt: UpgradeAttemptWire): void {
  out["attempt_id"] = attempt.id;
  out["target_version"] = attempt.target_version;
  out.stage = attempt.stage;
  out["journal_hint"] = attempt.journal_hint;
  if (attempt.error !== undefined) out.error = attempt.error;
  if (attempt.error_code !== undefined) out["error_code"] = attempt.error_code;
  if (attempt.ready !== undefined) out.ready = attempt.ready;
  if (typeof attempt.note === "string") out.note = attempt.note;
  if (attempt.ready_at !== undefined) {
    out["request_to_ready_ms"] = Date.parse(attempt.ready_at) - Date.parse(attempt.started_at);
  }
}

async function upgradeOne(
  target: UpgradeTarget,
  options: UpgradeSequenceOptions,
): Promise<MachineUpgradeOutcome> {
  const out: MachineUpgradeOutcome = { target: target.label, result: "unknown" };
  const progress = options.progress ?? (() => {});
  const deadline = Date.now() + options.timeoutMs;
  const link = new Link(target);
  const leg = target.label;
  try {
    let contract;
    try {
      contract = await link.call((c, signal) => c.describeContract({ signal }), Date.now() + 5_000);
      await link.call((c, signal) => c.requireCapability(CAPABILITIES.upgradeMachine, { signal }), deadline);
    } catch (error) {
      // Nothing was asked of this Machine yet.
      out.result = unreachable(error) ? "unreachable" : "refused";
      out.error = messageOf(error);
      out["error_code"] = error instanceof RpcError ? error.code : "unavailable";
      return out;
    }
    out["machine_id"] = contract.machine_id;
    out["machine_name"] = contract.machine_name;
    out["from_version"] = contract.daemon_version;

    const prior = options.receipts.load(leg);
    const requestKey = prior !== undefined && !prior.finished
      ? prior.request_key
      : (options.mintKey ?? (() => `cli-${crypto.randomUUID()}`))();
    out["request_key"] = requestKey;
    // Saved before asking, so a command killed mid-request finds the same attempt on its re-run.
    options.receipts.save(leg, {
      "request_key": requestKey,
      "attempt_id": prior?.attempt_id,
      finished: false,
    });

    let attempt: UpgradeAttemptWire;
    try {
      const accepted = await link.call(
        (c, signal) =>
          c.upgradeMachine({
            ...(options.version === undefined ? {} : { version: options.version }),
            ...(options.channel === undefined ? {} : { channel: options.channel }),
            "request_key": requestKey,
          }, { signal }),
        deadline,
      );
      attempt = accepted.attempt;
      out.existing = accepted.existing;
    } catch (error) {
      out.error = messageOf(error);
      out["error_code"] = error instanceof RpcError ? error.code : "unavailable";
      // Unreachable: the request may or may not have been accepted; the receipt keeps its key for a re-run.
      out.result = unreachable(error) ? "unknown" : "refused";
      if (out.result === "refused") options.receipts.save(leg, { "request_key": requestKey, finished: true });
      if (error instanceof RpcError && typeof error.details.attempt_id === "string") {
        out["attempt_id"] = error.details.attempt_id;
      }
      return out;
    }
    fromAttempt(out, attempt);
    options.receipts.save(leg, { "request_key": requestKey, "attempt_id": attempt.id, finished: false });
    progress(
      `${
        out.existing ? "found" : "accepted"
      } upgrade attempt ${attempt.id} to ${attempt.target_version} on "${contract.machine_name}"`,
    );

    let lastStage = attempt.stage;
    while (attempt.outcome === undefined) {
      if (Date.now() >= deadline) {
        out.error = `Attempt "${attempt.id}" is still at stage "${attempt.stage}" after ${
          options.timeoutMs / 1000
        } s: run the same command again to keep following it`;
        out["error_code"] = "unavailable";
        return out;
      }
      await sleep(options.pollMs ?? 500);
      try {
        attempt = (await link.call((c, signal) => c.upgradeStatus({ id: attempt.id }, { signal }), deadline))
          .attempt;
      } catch (error) {
        out.error = `Cannot read attempt "${attempt.id}" (last seen at stage "${attempt.stage}"): ${
          messageOf(error)
        }`;
        out["error_code"] = error instanceof RpcError ? error.code : "unavailable";
        return out;
      }
      fromAttempt(out, attempt);
      if (attempt.stage !== lastStage) progress(`attempt ${attempt.id}: stage ${attempt.stage}`);
      lastStage = attempt.stage;
    }

    if (attempt.outcome !== "succeeded") {
      out.result = attempt.outcome === "interrupted" ? "interrupted" : "failed";
    } else {
      // The Machine's own evidence, checked once more from here.
      try {
        const now = await link.call((c, signal) => c.describeContract({ signal }), deadline);
        out["observed_version"] = now.daemon_version;
        if (now.daemon_version === attempt.target_version) out.result = "succeeded";
        else {
          out.error =
            `The Machine recorded success but its daemon now reports version "${now.daemon_version}"`;
          out["error_code"] = "conflict";
        }
      } catch (error) {
        out.error = `The attempt succeeded, but this command could not confirm the running version: ${
          messageOf(error)
        }`;
        out["error_code"] = "unavailable";
      }
    }
    if (out.result !== "unknown") {
      options.receipts.save(leg, {
        "request_key": requestKey,
        "attempt_id": attempt.id,
        finished: true,
        result: out.result,
      });
    }
    return out;
  } finally {
    link.finish();
    out["management_unreachable_ms"] = link.unreachableMs;
  }
}

/** Upgrades the targets one after another; stops at the first that did not verifiably succeed. */
export async function runUpgradeSequence(options: UpgradeSequenceOptions): Promise<UpgradeSequenceResult> {
  const machines: MachineUpgradeOutcome[] = [];
  let stopped = false;
  for (const target of options.targets) {
    if (stopped) {
      machines.push({ target: target.label, result: "not_attempted" });
      continue;
    }
    const outcome = await upgradeOne(target, options);
    machines.push(outcome);
    if (outcome.result !== "succeeded") stopped = true;
  }
  return { machines, ok: !stopped };
}
