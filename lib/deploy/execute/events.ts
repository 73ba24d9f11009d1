/**
 * Deploy Progress: the events an execution emits, in order, for a live table, one line per step, or NDJSON.
 *
 * @module
 */

import type { Op } from "../plan/types.ts";
import type { CompensationStep, Outcome } from "./outcome.ts";

/** What an operation is doing right now. */
export type Phase =
  | "creating"
  | "starting"
  | "waiting_for_health"
  | "running_hook"
  | "removing_old_hooks"
  | "leaving_proxies"
  | "stopping"
  | "stopping_old"
  | "removing"
  | "removing_old"
  | "leaving_old"
  | "setting_pointer"
  | "filling_ingress"
  | "copying_image"
  | "pulling_image"
  | "compensating";

/** One progress event. */
export type DeployEvent =
  | { type: "plan"; deploymentId: string; ops: Op[] }
  | { type: "step"; index: number; status: "running"; phase: Phase; detail?: string }
  | { type: "step"; index: number; status: "completed"; container?: { id: string; name: string } }
  | {
    type: "step";
    index: number;
    status: "failed";
    error: { code: string; message: string };
    /** The request went out and no answer came back. */
    outcomeUnknown?: boolean;
  }
  | { type: "compensation"; index: number; step: CompensationStep }
  | { type: "outcome"; outcome: Outcome };
