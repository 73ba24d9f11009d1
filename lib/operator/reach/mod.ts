/**
 * How the CLI reaches a Cluster and reads across it, and nothing of the operator's flows that change it: choosing
 * the connection (flags, contexts, the local socket), opening it (the unix socket, or one SSH connection), listing
 * the Machines to ask, and merging their logs.
 *
 * Why a narrower door than `lib/operator/mod.ts`: that one also carries the Deploy, build, removal, drain, upgrade
 * and Volume flows, and with them the Compose loader, YAML, the planner and the serving code. A command that only
 * reads (`ployz ps`, `ls`, `logs`, `top`) imports this door alone and loads none of them
 * (`tests/module_graph_test.ts` holds it to that).
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
} from "../context.ts";
export { describeChoice, openConnection, type SshConnectOptions } from "../connection.ts";
export { OperatorError } from "../errors.ts";
export { type ListedTargets, listTargets, type ListTargetsOptions, type Reach } from "../targets.ts";
export {
  lineJson,
  lineKey,
  type MachineLine,
  type MergedHistory,
  mergeHistory,
  parseWhen,
  readFrames as readTailFrames,
  renderLine,
} from "../log_fanout.ts";
