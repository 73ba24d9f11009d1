/**
 * Client-side Deploy planning (docs/bets.md, bets 3, 4, 8, 10): a Deploy Intent from the Project's Saved State, a
 * Snapshot of each Machine's Live Observation with failures and omissions kept, and a Plan of ordered operations
 * with its Preview (warnings and Data Loss). Pure logic; Machines are reached only through {@linkcode MachineApi}.
 *
 * @module
 */

export { errorBody } from "./errors.ts";
export type {
  HealthEvidenceView,
  MachineApi,
  MachineHandle,
  MachineRecordView,
  ObservedContainerView,
  ServingPointerView,
  WaitHealthyAnswer,
} from "./machine_api.ts";
export { newDeploymentId } from "./keys.ts";
export { serviceContainerSpec, type SlotIdentity } from "./container_spec.ts";
export { type DeployIntent, deployIntent } from "./intent.ts";
export {
  type MachineObservation,
  type ObservationFailure,
  type ObservationOmission,
  type Snapshot,
  SNAPSHOT_ANSWER_MS,
  type SnapshotRequest,
  takeSnapshot,
} from "./snapshot.ts";
export { MAX_HEALTH_WAIT_MS } from "./health.ts";
export { planDeploy, type PlanOptions, type ServingPlanOptions } from "./plan.ts";
export { registryIsNearby } from "./image_sources.ts";
export { planRemoval, type RemovalOptions } from "./removal.ts";
export { renderPreview } from "./preview.ts";
export {
  describePlacement,
  type ObservedVolumeCopy,
  projectProvisionedVolumes,
  provisionedVolumes,
  type VolumePlacement,
  volumePlacement,
} from "./volume_locality.ts";
export type {
  ContainerRef,
  CreateOp,
  DataLoss,
  HealthGate,
  HookOp,
  ImageOp,
  ImageSource,
  IngressOp,
  Op,
  OpBase,
  Plan,
  PointOp,
  PullOp,
  RemoveOp,
  ReplaceOp,
  ServiceSummary,
  StartOp,
  StopOp,
} from "./types.ts";
