/**
 * The operator's side of Ployz: how the CLI on a laptop or a Machine names a Cluster's Entry Machine (contexts)
 * and reaches it (its unix socket, or one SSH connection running `ployzd dial-stdio --mux`).
 *
 * Precedence of a command's connection, strongest first: `--connect URL`, `--context NAME`, `$PLOYZ_CONTEXT`, the
 * Compose file's top-level `x-context` (for `deploy`), the context `ployz context use` selected, then the local
 * Machine's socket (`$PLOYZ_RUN_DIR/ployz.sock`).
 *
 * The operator's flows live here too, written against the transport-free Machine API so fakes can drive them:
 * the Deploy (Snapshot through the Entry Machine, capability checks, Plan, Preview, execution, Outcome, Saved State
 * and Deployment records), the removal (`ployz rm`: a removal mark, the Saved State removed with it, a bounded
 * wait for the reachable Machines), the Global catch-up after a Machine joins, restarts, upgrades, log fan-out and image
 * copies. Printing and asking stay with the caller, through callbacks.
 *
 * @module
 */

// Reaching a Cluster and reading across it: also a door of its own (./reach/mod.ts), for read commands.
export {
  checkContextName,
  chooseConnection,
  CONNECTION_SOURCES,
  type ConnectionChoice,
  type ConnectionInputs,
  type ConnectionSource,
  type ConnectTarget,
  describeChoice,
  formatConnectUrl,
  lineJson,
  lineKey,
  type ListedTargets,
  listTargets,
  type ListTargetsOptions,
  type MachineLine,
  type MergedHistory,
  mergeHistory,
  openConnection,
  OperatorError,
  parseConnectUrl,
  parseWhen,
  type Reach,
  readTailFrames,
  renderLine,
  type SshConnectOptions,
} from "./reach/mod.ts";

export {
  describeWire,
  type LiveCopy,
  type MoveFigures,
  readCopies,
  runVolume,
  type VolumeRunHost,
  type VolumeRunMachine,
  type VolumeRunRequest,
  type VolumeRunResult,
} from "./volume_run.ts";
export {
  type Builder,
  type BuilderApi,
  type BuildEvent,
  type BuildJob,
  type BuildReport,
  type BuildStage,
  discardBuilds,
  pickBuilder,
  prepareBuilds,
  type PrepareOptions,
  runBuilds,
} from "./build_flow.ts";
export { type ContextLimits, type PackedContext } from "./build_context.ts";
export {
  type RestartApi,
  type RestartOptions,
  restartOrder,
  type RestartReceipt,
  type RestartSlot,
  restartSlots,
  type RestartStep,
} from "./restart.ts";
export {
  commandKey,
  type MachineUpgradeOutcome,
  type ReceiptBook,
  runUpgradeSequence,
  type UpgradeReceipt,
  type UpgradeResult,
  type UpgradeSequenceOptions,
  type UpgradeSequenceResult,
  type UpgradeTarget,
} from "./upgrade_flow.ts";
export { copyImage, type ImageCopy } from "./image_copy.ts";
export { credentialCache, type CredentialSources } from "./registry_auth.ts";
export type { AuthLookup } from "./image_pins.ts";
export {
  configureMachine,
  labelRequest,
  listedMachine,
  onOff,
  retiredNotice,
  type RetiredReport,
  retireGone,
} from "./machine_settings.ts";
export { type DeployMachineApi, type DeployMachines, deployMachinesOf } from "./deploy_machines.ts";
export {
  type DrainApi,
  type DrainedProject,
  type DrainLegReceipt,
  drainMachine,
  type DrainOptions,
  type DrainReceipts,
  type DrainResult,
  type KeptVolume,
} from "./drain.ts";
export {
  type DeployBook,
  deployProject,
  type DeployReport,
  type FlowOptions,
  type FlowResult,
} from "./deploy_flow.ts";
export {
  cancelRemoval,
  type PendingMachine,
  type RemovalBook,
  type RemovalOptions,
  type RemovalOutcome,
  type RemovalReceipt,
  type RemovalResult,
  removalStatus,
  removeWithMark,
} from "./removal_flow.ts";
export { catchUpGlobal, type CatchUpOptions, type CatchUpResult, type Joined } from "./global_catch_up.ts";
export {
  type CleanupApi,
  type CleanupPreview,
  type CleanupReceipt,
  type CleanupReceipts,
  type CleanupReport,
  type CleanupTarget,
  type OldContainer,
  previewCleanup,
  runCleanup,
} from "./cleanup.ts";
