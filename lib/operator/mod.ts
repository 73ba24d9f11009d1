/**
 * The operator's side of Ployz: how the CLI on a laptop or a Machine names a Cluster's Entry Machine (contexts)
 * and reaches it (its unix socket, or one SSH connection running `ployzd dial-stdio --mux`).
 *
 * Precedence of a command's connection, strongest first: `--connect URL`, `--context NAME`, `$PLOYZ_CONTEXT`, the
 * Compose file's top-level `x-context` (for `deploy`), the context `ployz context use` selected, then the local
 * Machine's socket (`$PLOYZ_RUN_DIR/ployz.sock`).
 *
 * @module
 */

export {
  checkContextName,
  chooseConnection,
  CONNECTION_SOURCES,
  type ConnectionChoice,
  type ConnectionInputs,
  type ConnectionSource,
  type ConnectTarget,
  formatConnectUrl,
  parseConnectUrl,
} from "./context.ts";
export { describeChoice, openConnection, type SshConnectOptions, sshFailure } from "./connection.ts";
export { OperatorError } from "./errors.ts";
export {
  type RestartApi,
  type RestartOptions,
  restartOrder,
  type RestartSlot,
  restartSlots,
  type RestartStep,
} from "./restart.ts";
export {
  lineJson,
  lineKey,
  type MachineLine,
  type MergedHistory,
  mergeHistory,
  parseWhen,
  readFrames as readTailFrames,
  renderLine,
} from "./log_fanout.ts";
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
export {
  entryOnly,
  type ListedTargets,
  listTargets,
  type ListTargetsOptions,
  type Reach,
  throughEntry,
} from "./targets.ts";
export { copyImage, type ImageCopy, pickMachine } from "./image_copy.ts";
