import { type Command, lazyCommand } from "../../lib/cli/mod.ts";
import { versionCommand } from "../shared_version.ts";

/**
 * The `ployz` command tree: the operator's CLI. Each command is imported only when it runs, so `ployz version`
 * and `ployz --help` load nothing but this list.
 */
export const ployz: Command = {
  name: "ployz",
  summary: "Run containers across your own Machines",
  description:
    "Every command takes --context NAME or --connect ssh://[user@]host[:port]|unix:///path to pick\n" +
    'the Entry Machine it talks to (see "ployz context").',
  subcommands: [
    lazyCommand(
      "context",
      "Name the Clusters this CLI drives (SSH hosts or local sockets) and pick one",
      () => import("./context.ts").then((m) => m.contextCommand),
    ),
    lazyCommand(
      "machine",
      "Manage Machines",
      () => import("./machine.ts").then((m) => m.machineCommand),
    ),
    lazyCommand(
      "deploy",
      "Deploy a Compose file to the Cluster",
      () => import("./deploy.ts").then((m) => m.deployCommand),
    ),
    lazyCommand(
      "build",
      "Build a Compose file's build: Services on a Machine of the Cluster, without deploying",
      () => import("./build.ts").then((m) => m.buildCommand),
    ),
    lazyCommand(
      "config",
      "Print the normalized Project of a Compose file without contacting any Machine",
      () => import("./config.ts").then((m) => m.configCommand),
    ),
    lazyCommand("ps", "List containers", () => import("./ps.ts").then((m) => m.psCommand)),
    lazyCommand(
      "volume",
      "Provisioned Volumes: list, inspect, and Volume Runs (mirror, sync, move, release, rm-mirror)",
      () => import("./volume.ts").then((m) => m.volumeCommand),
    ),
    lazyCommand(
      "ls",
      "List Projects and their Services across the Cluster",
      () => import("./ls.ts").then((m) => m.lsCommand),
    ),
    lazyCommand(
      "inspect",
      "Show one Service",
      () => import("./inspect.ts").then((m) => m.inspectCommand),
    ),
    lazyCommand(
      "logs",
      "Show a Service's output from every Machine that ran it",
      () => import("./logs.ts").then((m) => m.logsCommand),
    ),
    lazyCommand(
      "top",
      "Show current CPU, memory and network per Service and Machine, from every Machine",
      () => import("./top.ts").then((m) => m.topCommand),
    ),
    lazyCommand(
      "metrics",
      "Plot a Service's CPU, memory, network and restarts over time, per Machine",
      () => import("./metrics.ts").then((m) => m.metricsCommand),
    ),
    lazyCommand(
      "cert",
      "Certificates of https routes: list, renew, add an operator's or an internal one, remove, root",
      () => import("./cert.ts").then((m) => m.certCommand),
    ),
    lazyCommand(
      "image",
      "List, prune and move images on the Cluster's Machines",
      () => import("./image.ts").then((m) => m.imageCommand),
    ),
    lazyCommand(
      "registry",
      "Registry credentials on this operator's side",
      () => import("./registry.ts").then((m) => m.registryCommand),
    ),
    lazyCommand(
      "start",
      "Start a Service's containers",
      () => import("./start.ts").then((m) => m.startCommand),
    ),
    lazyCommand(
      "stop",
      "Stop a Service's containers (they are kept)",
      () => import("./stop.ts").then((m) => m.stopCommand),
    ),
    lazyCommand(
      "exec",
      "Run a command in a Service's container, on whichever Machine holds it",
      () => import("./exec.ts").then((m) => m.execCommand),
    ),
    lazyCommand(
      "cleanup",
      "Remove stopped old containers and unused Ployz images on every Machine",
      () => import("./cleanup.ts").then((m) => m.cleanupCommand),
    ),
    lazyCommand(
      "restart",
      "Restart a Service's containers one slot at a time, each health-gated",
      () => import("./restart.ts").then((m) => m.restartCommand),
    ),
    lazyCommand(
      "rm",
      "Remove a Project or a Service: its containers on every Machine, and its Saved State",
      () => import("./rm.ts").then((m) => m.rmCommand),
    ),
    lazyCommand(
      "receipts",
      "Show the receipts of the last bounded commands (start, stop, restart, cleanup, drain…)",
      () => import("./receipts.ts").then((m) => m.receiptsCommand),
    ),
    lazyCommand(
      "scale",
      "Change how many containers a Service runs",
      () => import("./scale.ts").then((m) => m.scaleCommand),
    ),
    lazyCommand(
      "lab",
      "Run a local multi-Machine lab on this host (root)",
      () => import("./lab.ts").then((m) => m.labCommand),
    ),
    versionCommand("ployz"),
  ],
};
