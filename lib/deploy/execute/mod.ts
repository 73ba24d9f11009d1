/**
 * Executing a Deploy Plan: operations in order with live progress, a health gate per new container, compensation
 * only for a failed replacement, and the Outcome (completed prefix, failure, unexecuted suffix) as text and JSON.
 *
 * @module
 */

export {
  DEFAULT_PARALLEL,
  DEFAULT_PER_MACHINE,
  type ExecuteOptions,
  executePlan,
  type IngressFiller,
  type RegistryAuthSource,
  startPulls,
} from "./execute.ts";
export type { DeployEvent, Phase } from "./events.ts";
export {
  type CompensationStep,
  type DeployStage,
  drainText,
  type LeaveDrainAnswer,
  type LeftContainer,
  leftDrain,
  type OpFailure,
  opStage,
  opView,
  type Outcome,
  outcomeJson,
  type RetiringContainer,
  toWire,
} from "./outcome.ts";
export { type ProgressPrinter, progressPrinter, renderOutcome, stageHeading } from "./render.ts";
