/**
 * The daemon's upgrade routes and the mutation half of the interlock. `ployz.machine.upgrade.v1` hands the
 * request to lib/installer, which records the attempt and starts its worker as the transient unit
 * `ployz-upgrade-<id>` through the ployz-systemd door (the daemon runs neither `systemctl` nor `systemd-run`),
 * always from the release source the Machine was installed from. `ployz.machine.upgrade_status.v1` reads the record back; a
 * worker gone without a result reads `interrupted`. See {@link MutationGate} for the interlock. The installer's
 * upgrade path is imported when either route is first called, so an idle daemon does not carry it.
 *
 * @module
 */

import {
  type AttemptRecord,
  type InstallPaths,
  runningAttempt,
  type SystemdDoor,
} from "../installer/machine/mod.ts";
import { doorSystemd } from "./systemd_door.ts";
import {
  CAPABILITIES,
  type Handler,
  type RouteName,
  RpcError,
  type RpcHandlers,
  type UpgradeAttemptWire,
} from "../rpc/mod.ts";
import { CodedError, importOnFirstUse, messageOf } from "../util/mod.ts";
import type { MutationGate } from "./mutation_gate.ts";

/** The routes that change the Machine: refused during an upgrade attempt, and counted by the gate. */
export const MUTATING_ROUTES: readonly RouteName[] = Object.freeze([
  "init",
  "ensureContainer",
  "ensureContainerWithFiles",
  "startContainer",
  "stopContainer",
  "removeContainer",
  "joinMachine",
  "leaveMachine",
  "configureMachine",
  "retireMachine",
]);

/** What the upgrade handlers need from the daemon. */
export interface UpgradeHost {
  /** Where this Machine's installation lives. */
  paths: InstallPaths;
  /** The daemon's mutation count. */
  gate: MutationGate;
  /** The Machine Name, for messages. */
  machineName(): string;
  /** How upgrades reach systemd; default the ployz-systemd door, the daemon's only way there. */
  door?: SystemdDoor;
}

function doorOf(host: UpgradeHost): SystemdDoor {
  host.door ??= doorSystemd();
  return host.door;
}

function toRpc(error: unknown): unknown {
  // An InstallError, or the one-line error of an upgrade path that could not be loaded.
  if (error instanceof CodedError && !(error instanceof RpcError)) {
    return new RpcError(error.code, error.message, { details: { ...error.details }, cause: error });
  }
  return error;
}

// The upgrade path (staging, signatures, activation) is loaded when an upgrade is first asked, not at start.
function installer(): Promise<typeof import("../installer/mod.ts")> {
  return importOnFirstUse("lib/installer/mod.ts", () => import("../installer/mod.ts"));
}

function toWire(record: AttemptRecord): UpgradeAttemptWire {
  return record as UpgradeAttemptWire;
}

/** Handlers of `ployz.machine.upgrade.v1` and `ployz.machine.upgrade_status.v1`. */
export function upgradeHandlers(host: UpgradeHost): Pick<RpcHandlers, "upgradeMachine" | "upgradeStatus"> {
  return {
    async upgradeMachine(req) {
      try {
        const { requestUpgrade } = await installer();
        const accepted = await host.gate.admitUpgrade(
          host.machineName(),
          () =>
            requestUpgrade(host.paths, {
              version: req.version,
              channel: req.channel,
              requestKey: req.request_key,
            }, doorOf(host)),
        );
        return { attempt: toWire(accepted.attempt), existing: accepted.existing };
      } catch (error) {
        throw toRpc(error);
      }
    },
    async upgradeStatus(req) {
      try {
        const { readAttempt } = await installer();
        return { attempt: toWire(await readAttempt(host.paths, req.id, doorOf(host))) };
      } catch (error) {
        throw toRpc(error);
      }
    },
  };
}

/** Refuses `busy` while an upgrade attempt runs on this Machine, naming it. */
async function refuseDuringAttempt(host: UpgradeHost, capability: string): Promise<void> {
  let running: AttemptRecord | undefined;
  try {
    running = await runningAttempt(host.paths, doorOf(host));
  } catch (error) {
    throw new RpcError(
      "unavailable",
      `Cannot serve "${capability}" on Machine "${host.machineName()}": cannot tell whether an upgrade is running: ${
        messageOf(error)
      }`,
    );
  }
  if (running === undefined) return;
  throw new RpcError(
    "busy",
    `Cannot serve "${capability}" on Machine "${host.machineName()}": upgrade attempt "${running.id}" to ${running.target_version} is running (stage "${running.stage}"); retry once it ends`,
    {
      details: {
        "attempt_id": running.id,
        stage: running.stage,
        "target_version": running.target_version,
        "journal_hint": running.journal_hint,
      },
    },
  );
}

/**
 * Returns `handlers` with each of `names` counted by the gate and refused during an upgrade attempt. Handlers
 * not in `names` are unchanged.
 */
export function guardMutations(
  handlers: RpcHandlers,
  host: UpgradeHost,
  names: readonly RouteName[] = MUTATING_ROUTES,
): RpcHandlers {
  const out: RpcHandlers = { ...handlers };
  for (const name of names) {
    const inner = handlers[name] as Handler<RouteName> | undefined;
    if (inner === undefined) continue;
    const capability = CAPABILITIES[name];
    const guarded: Handler<RouteName> = async (req, ctx) => {
      const leave = host.gate.enter(capability, host.machineName());
      try {
        await refuseDuringAttempt(host, capability);
        return await inner(req, ctx);
      } finally {
        leave();
      }
    };
    (out as Record<string, unknown>)[name] = guarded;
  }
  return out;
}
