// `ployz machine add`: join another Machine to the local Machine's Cluster (the local Machine is the Entry Machine).
// Over SSH, a host without ployzd is first provisioned through install.sh → `ployzd install` (machine_provision.ts).
import { CliError, type Command, type CommandContext, type Io, UsageError } from "../../lib/cli/mod.ts";
import { configHistory, enrollMachine, type EnrollResult } from "../../lib/mesh/mod.ts";
import type { MachineClient, MachineRecord } from "../../lib/rpc/mod.ts";
import { cliError, entryMachine, jsonLine, openConfig } from "./connect.ts";
import { rememberContext } from "./context.ts";
import { catchUpGlobal, type CatchUpResult, credentialCache, type Joined } from "../../lib/operator/mod.ts";
import { deployMachines, deployReport } from "./deploy_machines.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { collisionLines } from "./machine_ls.ts";
import {
  PROVISION_OPTIONS,
  type ProvisionedHost,
  type ProvisionFlags,
  provisionFlags,
  provisionJson,
  provisionOverSsh,
} from "./machine_provision.ts";
import { checkDestination, targetMachine } from "./machine_target.ts";
import { sharedOptions, stringFlag, timeoutMs } from "./flags.ts";

/** Runs the Global catch-up on the joined Machine and prints what it did per Project. */
async function catchUp(config: ConfigStore, joined: Joined, io: Io, json: boolean): Promise<CatchUpResult[]> {
  const results = await catchUpGlobal(config, joined, {
    open: () => deployMachines(),
    report: deployReport(io, { json, verb: "catch up" }),
    registryAuth: credentialCache({ saved: (host) => config.registryCredential(host) }),
    placing: (project, operations) => {
      if (!json) io.out(`Global catch-up of "${project}" on "${joined.name}": ${operations} operation(s)\n`);
    },
  });
  if (results.length === 0) {
    // Nothing to place: no Machine was asked, and --json keeps its one object.
    if (!json) {
      io.out(
        `Global catch-up: no Global Service in this operator's Saved States to place on "${joined.name}"\n`,
      );
    }
  } else if (json) io.out(jsonLine({ type: "catch_up", machine: joined, results }));
  else {
    for (const r of results) io.out(`Global catch-up of "${r.project}": ${r.status}: ${r.detail}\n`);
  }
  return results;
}

/** What `ployz machine add` was asked, parsed before anything is contacted. */
interface AddRequest {
  /** SSH destination (positional or `--ssh`). */
  ssh?: string;
  /** `--socket PATH`. */
  socket?: string;
  /** Provisioning flags (SSH only). */
  provision: ProvisionFlags;
  /** `--name`. */
  machineName?: string;
  /** Join wait. */
  timeoutMs: number;
  /** `--json`. */
  json: boolean;
  /** Place the operator's Global Services on the new Machine once it participates (not `--no-catch-up`). */
  catchUp: boolean;
}

function parseRequest({ values, positionals }: CommandContext): AddRequest {
  if (positionals[0] !== undefined && typeof values.ssh === "string") {
    throw new UsageError("Give the SSH destination once: as an argument or with --ssh");
  }
  const ssh = positionals[0] ?? stringFlag(values, "ssh");
  const socket = stringFlag(values, "socket");
  const provision = provisionFlags(values);
  const provisioning = ["release-source", "version", "channel", "install-prerequisites", "skip-prerequisites"]
    .find((k) => values[k] !== undefined);
  if (socket !== undefined && provisioning !== undefined) {
    throw new UsageError(`--${provisioning} provisions over SSH; it does not apply with --socket`);
  }
  return {
    ...(ssh === undefined ? {} : { ssh: checkDestination(ssh) }),
    ...(socket === undefined ? {} : { socket }),
    provision,
    ...(typeof values.name === "string" ? { machineName: values.name } : {}),
    timeoutMs: timeoutMs(values, 60),
    json: values.json === true,
    catchUp: values["no-catch-up"] !== true,
  };
}

/**
 * Refuses before anything is installed anywhere when the Entry Machine is unreachable or not in a Cluster
 * (enrollment checks it again, with the rest of its observation).
 */
async function requireEntry(entry: MachineClient): Promise<MachineRecord> {
  const machine = (await entry.status()).machine;
  if (machine.phase !== "participating" || machine.cluster_id === undefined) {
    throw new CliError(
      "conflict",
      `Cannot add a Machine through "${machine.name}": it is not in a Cluster (phase "${machine.phase}"); run "ployz machine init" there first`,
    );
  }
  return machine;
}

function printResult(
  io: CommandContext["io"],
  request: AddRequest,
  result: EnrollResult,
  provisioned: ProvisionedHost | undefined,
): void {
  if (request.json) {
    io.out(jsonLine({
      machine: result.machine,
      entry: { id: result.entry.id, name: result.entry.name },
      subnet: result.subnet,
      "reused_allocation": result.reusedAllocation,
      "already_member": result.alreadyMember,
      participating: result.participating,
      "participating_after_ms": result.participatingAfterMs,
      "entry_holds_row": result.entryHoldsRow,
      "subnet_collisions": result.collisions,
      ...(provisioned ? { provision: provisionJson(provisioned, request.provision.source) } : {}),
    }));
    return;
  }
  const m = result.machine;
  io.out(
    result.participating
      ? `Machine "${m.name}" (${m.id}) participates in Cluster "${m.cluster_name}" with subnet ${result.subnet} after ${
        ((result.participatingAfterMs ?? 0) / 1000).toFixed(1)
      } s; "${result.entry.name}" ${result.entryHoldsRow ? "holds" : "does not hold yet"} its row\n`
      : `Machine "${m.name}" (${m.id}) is still ${m.phase} after ${
        request.timeoutMs / 1000
      } s: it keeps catching up on its own; check with "ployz machine ls"\n`,
  );
  io.out(collisionLines(result.collisions));
}

/** `ployz machine add`. */
export const machineAddCommand: Command = {
  name: "add",
  summary: "Join another Machine to this Cluster (over SSH, installing Ployz there if needed, or --socket)",
  usage: "[SSH_DEST | --ssh SSH_DEST | --socket PATH] [--name NAME] [--timeout SECONDS] " +
    "[--release-source DIR|URL] [--version V | --channel C] [--skip-prerequisites | --install-prerequisites] " +
    "[--no-install] [--no-catch-up] [--json]",
  description: [
    "The local Machine is the Entry Machine. The new Machine's /24 is picked from what the Entry Machine observes",
    "plus this operator's allocation history (saved before it is published, kept after failures). The command waits",
    "(--timeout, default 60 s) until the new Machine's store caught up and it participates.",
    "",
    "Over SSH (BatchMode; PLOYZ_SSH_CONFIG may name an ssh config file), the host is probed first. Without ployzd,",
    "the release (this CLI's version, or --version/--channel) is fetched here from --release-source (default",
    `PLOYZ_RELEASE_SOURCE, else the production source), checked against SHA256SUMS, sent over SSH with install.sh,`,
    "and installed there by install.sh and `ployzd install` as root (or sudo -n), which verify it again. A host",
    "already running ployzd is not reinstalled (--no-install: never install). Stages: probe, acquire, transfer,",
    "install, serve_ready; then the join runs over `ssh HOST ployzd dial-stdio`.",
    "",
    "Once it participates, one bounded pass places the Global Services of this operator's Saved States on it",
    "(creations only, images copied from peers; never replaces, moves or removes) and says per Project what it",
    "placed, what failed, and where it could not tell; --no-catch-up skips it. Exit 1 if any Project failed.",
    "With --json, a pass that had Projects to consider adds its operations' NDJSON and a `catch_up` line.",
  ],
  options: {
    ssh: { type: "string" },
    socket: { type: "string" },
    name: { type: "string" },
    ...sharedOptions("timeout", "json"),
    "no-catch-up": { type: "boolean" },
    ...PROVISION_OPTIONS,
  },
  positionals: [0, 1],
  async run(ctx): Promise<number> {
    const request = parseRequest(ctx);
    const { io } = ctx;
    const progress = request.json ? undefined : (line: string): void => io.err(`${line}\n`);
    if (request.ssh === undefined && request.socket === undefined) {
      throw new CliError(
        "invalid_argument",
        `Cannot reach the Machine to add: give an SSH destination or "--socket PATH"`,
        { exitCode: 2 },
      );
    }
    if (request.ssh !== undefined && request.socket !== undefined) {
      throw new CliError("invalid_argument", `Give either an SSH destination or "--socket", not both`, {
        exitCode: 2,
      });
    }
    const entry = entryMachine();
    using config = openConfig();
    let joiner: MachineClient | undefined;
    try {
      const entryRecord = await requireEntry(entry);
      let provisioned: ProvisionedHost | undefined;
      if (request.ssh !== undefined) {
        provisioned = await provisionOverSsh(request.ssh, request.provision, progress ?? (() => {}));
        joiner = provisioned.client;
      } else {
        joiner = targetMachine({ socket: request.socket, what: "the Machine to add" });
      }
      const result = await enrollMachine({
        entry,
        joiner,
        history: configHistory(config),
        machineName: request.machineName,
        timeoutMs: request.timeoutMs,
        progress,
      });
      printResult(io, request, result, provisioned);
      const context = rememberContext([entryRecord.cluster_name, entryRecord.name]);
      if (context !== undefined && !request.json) {
        io.err(`Saved context "${context}" for the Entry Machine\n`);
      }
      if (!result.participating) {
        throw new CliError(
          "unavailable",
          `Machine "${result.machine.name}" did not report participating in time`,
        );
      }
      if (request.catchUp) {
        // Once participating, the Cluster's Global Services belong on it too: one bounded pass, never a loop.
        const done = await catchUp(
          config,
          { id: result.machine.id, name: result.machine.name },
          io,
          request.json,
        );
        if (done.some((r) => r.status === "failed" || r.status === "unknown")) return 1;
      }
      return 0;
    } catch (error) {
      throw cliError(error);
    } finally {
      joiner?.close();
      entry.close();
    }
  },
};
