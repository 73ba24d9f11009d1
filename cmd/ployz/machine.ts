// `ployz machine`: the Machine commands, grouped; each is imported only when it runs.
import { type Command, lazyCommand } from "../../lib/cli/mod.ts";

/** `ployz machine`. */
export const machineCommand: Command = {
  name: "machine",
  summary: "Manage Machines",
  subcommands: [
    lazyCommand(
      "init",
      "Found a Cluster on this Machine",
      () => import("./machine_init.ts").then((m) => m.machineInitCommand),
    ),
    lazyCommand(
      "add",
      "Join another Machine to this Cluster (over SSH, installing Ployz there if needed, or --socket)",
      () => import("./machine_add.ts").then((m) => m.machineAddCommand),
    ),
    lazyCommand(
      "ls",
      "List Machines as the local Machine observes them (membership, collisions)",
      () => import("./machine_ls.ts").then((m) => m.machineLsCommand),
    ),
    lazyCommand(
      "label",
      "Set or remove a Machine's Labels (placement constraints read them)",
      () => import("./machine_label.ts").then((m) => m.machineLabelCommand),
    ),
    lazyCommand(
      "accept",
      "Set whether a Machine accepts new workloads, an Ingress Proxy and Builds",
      () => import("./machine_label.ts").then((m) => m.machineAcceptCommand),
    ),
    lazyCommand(
      "drain",
      "Stop new workloads on a Machine and move its replicated slots to other Machines",
      () => import("./machine_drain.ts").then((m) => m.machineDrainCommand),
    ),
    lazyCommand(
      "undrain",
      "Let a drained Machine take new workloads again",
      () => import("./machine_drain.ts").then((m) => m.machineUndrainCommand),
    ),
    lazyCommand(
      "rm",
      "Ask a Machine to leave the Cluster (its row is tombstoned by itself)",
      () => import("./machine_rm.ts").then((m) => m.machineRmCommand),
    ),
    lazyCommand(
      "pool",
      "Show each Machine's Pool and Volume copies, or bind a Machine to a Pool",
      () => import("./machine_pool.ts").then((m) => m.machinePoolCommand),
    ),
    lazyCommand(
      "upgrade",
      "Upgrade Machines' Ployz software, one after another, and report each outcome",
      () => import("./machine_upgrade.ts").then((m) => m.machineUpgradeCommand),
    ),
  ],
};
