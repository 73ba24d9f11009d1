/**
 * Client-side Deploy planning (docs/bets.md, bets 3, 4, 8, 10): a Deploy Intent from the Project's Saved State, a
 * Snapshot of each Machine's Live Observation with failures and omissions kept, and a Plan of ordered operations
 * with its Preview (warnings and Data Loss). Pure logic; Machines are reached only through {@linkcode MachineApi}.
 *
 * @module
 */

export { DeployError, errorBody } from "./errors.ts";
export type {
  HealthEvidenceView,
  MachineApi,
  MachineHandle,
  MachineRecordView,
  ObservedContainerView,
  ServingPointerView,
  WaitHealthyAnswer,
} from "./machine_api.ts";
export { containerName, creationKey, newDeploymentId } from "./keys.ts";
export { hookContainerSpec, NETWORK, serviceContainerSpec, type SlotIdentity } from "./container_spec.ts";
export { DEFAULT_MONITOR_MS, healthGate } from "./health.ts";
export { type DeployIntent, deployIntent, serviceOrder } from "./intent.ts";
export {
  type MachineObservation,
  type ObservationFailure,
  type ObservationOmission,
  type Snapshot,
  type SnapshotRequest,
  takeSnapshot,
} from "./snapshot.ts";
export { DEFAULT_HOOK_TIMEOUT_MS, planDeploy, type PlanOptions, type ServingPlanOptions } from "./plan.ts";
export { planRemoval, type RemovalOptions } from "./removal.ts";
export { describeOp, nothingToDo, opTarget, renderPreview } from "./preview.ts";
export type {
  ContainerRef,
  CreateOp,
  DataLoss,
  HealthGate,
  HookOp,
  ImageOp,
  IngressOp,
  Op,
  OpBase,
  Plan,
  PointOp,
  RemoveOp,
  ReplaceOp,
  ServiceSummary,
  StartOp,
  StopOp,
} from "./types.ts";
