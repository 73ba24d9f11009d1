/**
 * Upgrade routes of Machine RPC, merged into the catalog: ask a Machine to upgrade its own Ployz software to an
 * exact version (or a channel it resolves once), and read that attempt back. The Machine always uses the release
 * source it was installed from: a remote caller never names where a privileged installer downloads from, so the
 * request schema has no such field and, as the one strict request, refuses one.
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

const VERSION = z.string().min(1).max(64);
const CHANNEL = z.string().min(1).max(32);

/** What `ployz.machine.upgrade.v1` asks. Neither `version` nor `channel`: the Machine's recorded channel. */
export interface UpgradeMachineRequest {
  /** Exact target version, e.g. `0.2.0`. */
  version?: string;
  /** Channel on the Machine's release line, resolved once to an exact version. */
  channel?: string;
  /** The caller's key: a retry with the same key answers the attempt it started instead of a new one. */
  "request_key": string;
}

/**
 * Strict reader of {@link UpgradeMachineRequest}: the one request that refuses fields it does not know, because it
 * starts a privileged install and must fail closed rather than ignore what a caller meant (for example a download
 * source), as the Stable promise allows for explicit security refusals (docs/rpc.md).
 */
export const UpgradeMachineRequestSchema: z.ZodType<UpgradeMachineRequest> = z.lazy(() =>
  z.strictObject({
    version: VERSION.optional(),
    channel: CHANNEL.optional(),
    "request_key": z.string().min(1).max(128),
  }).refine((r) => r.version === undefined || r.channel === undefined, {
    message: "give a version or a channel, not both",
    path: ["channel"],
  })
);

/** What the Machine observed when it judged the new daemon ready. */
export interface UpgradeReadyWire {
  /** The version the restarted daemon reported. */
  "daemon_version": string;
  /** The Machine id it reported. */
  "machine_id": string;
  /** How readiness was observed, e.g. `describe_contract`. */
  via: string;
  /** When (ISO 8601). */
  "observed_at": string;
}

/** An upgrade attempt as its Machine records it. Readers keep fields they do not know. */
export interface UpgradeAttemptWire {
  /** Attempt id; its worker is the systemd unit `ployz-upgrade-<id>`. */
  id: string;
  /** The key it was requested with. */
  "request_key": string;
  /** The exact version it installs, resolved once. */
  "target_version": string;
  /** The channel the target came from, when one was asked for. */
  channel?: string;
  /** The version that was current when it began. */
  "from_version"?: string;
  /** The last stage entered (`accepted` … `verify_ready`, `done`). */
  stage: string;
  /** `succeeded`, `failed` or `interrupted`; absent while it runs. */
  outcome?: string;
  /** Why it failed, one line. */
  error?: string;
  /** The failure's code. */
  "error_code"?: string;
  /** Where its diagnostics are (a journalctl command). */
  "journal_hint": string;
  /** True once `current` pointed at the target: a later failure left the new release in place. */
  replaced?: boolean;
  /** True when the target was already installed. */
  noop?: boolean;
  /** When it began (ISO 8601). */
  "started_at": string;
  /** Its last record write (ISO 8601). */
  "updated_at": string;
  /** When the daemon restart began. */
  "restart_started_at"?: string;
  /** When the new daemon answered as the target. */
  "ready_at"?: string;
  /** The readiness evidence. */
  ready?: UpgradeReadyWire;
  /** Fields a newer Machine adds. */
  [key: string]: unknown;
}

const AttemptWireSchema: z.ZodType<UpgradeAttemptWire> = z.lazy(() =>
  z.looseObject({
    id: z.string(),
    "request_key": z.string(),
    "target_version": z.string(),
    channel: z.string().optional(),
    "from_version": z.string().optional(),
    stage: z.string(),
    outcome: z.string().optional(),
    error: z.string().optional(),
    "error_code": z.string().optional(),
    "journal_hint": z.string(),
    replaced: z.boolean().optional(),
    noop: z.boolean().optional(),
    "started_at": z.string(),
    "updated_at": z.string(),
    "restart_started_at": z.string().optional(),
    "ready_at": z.string().optional(),
    ready: z.looseObject({
      "daemon_version": z.string(),
      "machine_id": z.string(),
      via: z.string(),
      "observed_at": z.string(),
    }).optional(),
  })
);

/** What `ployz.machine.upgrade.v1` answers: the accepted attempt, or the one the request key started. */
export interface UpgradeMachineResponse {
  /** The attempt as recorded now. */
  attempt: UpgradeAttemptWire;
  /** True when the request key matched an attempt started earlier. */
  existing: boolean;
}

/** Tolerant reader of {@link UpgradeMachineResponse}. */
export const UpgradeMachineResponseSchema: z.ZodType<UpgradeMachineResponse> = z.lazy(() =>
  z.looseObject({
    attempt: AttemptWireSchema,
    existing: z.boolean(),
  })
);

/** What `ployz.machine.upgrade_status.v1` asks. */
export interface UpgradeStatusRequest {
  /** The attempt id. */
  id: string;
}

/** Reader of {@link UpgradeStatusRequest}; fields it does not know are ignored. */
export const UpgradeStatusRequestSchema: z.ZodType<UpgradeStatusRequest> = z.lazy(() =>
  z.object({
    id: z.string().min(1).max(64),
  })
);

/** What `ployz.machine.upgrade_status.v1` answers. A worker gone without a result reads `interrupted`. */
export interface UpgradeStatusResponse {
  /** The attempt as recorded now. */
  attempt: UpgradeAttemptWire;
}

/** Tolerant reader of {@link UpgradeStatusResponse}. */
export const UpgradeStatusResponseSchema: z.ZodType<UpgradeStatusResponse> = z.lazy(() =>
  z.looseObject({
    attempt: AttemptWireSchema,
  })
);

/** Request and response types of the upgrade routes, by method name. */
export interface UpgradeRouteTypes {
  /**
   * `ployz.machine.upgrade.v1`: asks the Machine to upgrade itself from its own release source; a known
   * request key finds its attempt.
   */
  upgradeMachine: [UpgradeMachineRequest, UpgradeMachineResponse];
  /** `ployz.machine.upgrade_status.v1`: reads an upgrade attempt on the Machine. */
  upgradeStatus: [UpgradeStatusRequest, UpgradeStatusResponse];
}

/** The upgrade rows, to be spread into the catalog. */
export const UPGRADE_ROUTES: RouteTable<UpgradeRouteTypes> = Object.freeze({
  upgradeMachine: route(
    "ployz.machine.upgrade.v1",
    UpgradeMachineRequestSchema,
    UpgradeMachineResponseSchema,
  ),
  upgradeStatus: route(
    "ployz.machine.upgrade_status.v1",
    UpgradeStatusRequestSchema,
    UpgradeStatusResponseSchema,
  ),
});
