// `ployz build`: builds a Compose file's `build:` Services on a Machine that accepts Builds, without deploying; and
// how build events print, for `build` and `deploy` alike.
import { type Command, type Io } from "../../lib/cli/mod.ts";
import {
  type BuildEvent,
  discardBuilds,
  pickBuilder,
  prepareBuilds,
  runBuilds,
} from "../../lib/operator/mod.ts";
import { stageHeading, toWire } from "../../lib/deploy/mod.ts";
import { COMPOSE_OPTIONS, COMPOSE_USAGE, loadComposeInput } from "./compose_input.ts";
import { jsonLine } from "./connect.ts";
import { withDeployMachines } from "./deploy_machines.ts";
import { bytes } from "./metric_view.ts";
import { sharedOptions } from "./flags.ts";

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** One build event as text lines (build output prefixed by its Service) or one NDJSON line. */
export function renderBuildEvent(event: BuildEvent, json: boolean): string {
  if (json) return jsonLine({ type: "build", build: toWire(event) });
  switch (event.type) {
    case "planned":
      return event.upToDate
        ? `build ${event.service}: up to date as ${event.ref} on ${event.machine}\n`
        : `build ${event.service} on ${event.machine} as ${event.ref}: context ${
          bytes(event.bytes)
        } to send (${event.entries} entries, ${
          bytes(event.fileBytes)
        } of files, ${event.ignored} left out by .dockerignore; limit ${bytes(event.limit)})\n`;
    case "sending":
      return `build ${event.service}: sending ${bytes(event.bytes)} to ${event.machine} (limit ${
        bytes(event.limit)
      })\n`;
    case "sent":
      return `build ${event.service}: sent ${bytes(event.bytes)} in ${seconds(event.durationMs)}\n`;
    case "waiting":
      return `build ${event.service}: ${event.text}\n`;
    case "log":
      return `  ${event.service} | ${event.text}\n`;
    case "built":
      return event.built
        ? `build ${event.service}: built ${event.ref} in ${seconds(event.durationMs)}\n`
        : `build ${event.service}: ${event.ref} was already built\n`;
    case "failed":
      return `build ${event.service}: failed at stage "${event.stage}"${
        event.tail.length > 0
          ? `; last lines of its output:\n${event.tail.map((l) => `  ${event.service} | ${l}\n`).join("")}`
          : "\n"
      }`;
  }
}

/**
 * Prints build events on `io`, each as it comes; a failure's tail only when its output was not streamed. As text,
 * the build stage's heading comes before the first event of the builds themselves (what is planned is part of the
 * Preview).
 */
export function buildPrinter(io: Io, json: boolean): (event: BuildEvent) => void {
  const streamed = new Set<string>();
  let headed = false;
  return (event) => {
    if (!json && !headed && event.type !== "planned") {
      headed = true;
      io.out(stageHeading("build"));
    }
    if (event.type === "log") streamed.add(event.service);
    if (!json && event.type === "failed" && streamed.has(event.service)) {
      io.out(renderBuildEvent({ ...event, tail: [] }, false));
      return;
    }
    io.out(renderBuildEvent(event, json));
  };
}

/** `ployz build`. */
export const buildCommand: Command = {
  name: "build",
  summary: "Build a Compose file's build: Services on a Machine of the Cluster, without deploying",
  usage: `${COMPOSE_USAGE} [SERVICE ...] [--no-cache] [--builder MACHINE] [--json]`,
  description:
    "Reads each context here (honouring .dockerignore), sends it to the builder (default: the Entry Machine)\n" +
    "and builds it there with Docker, tagged <project>-<service>:<content digest>. A context the builder has\n" +
    "already built is up to date and not sent. --no-cache builds again without Docker's layer cache, under a\n" +
    "tag of its own (<content digest>-<random>); `ployz deploy --no-cache` builds and deploys such an image.",
  positionals: [0, 1000],
  options: {
    ...COMPOSE_OPTIONS,
    "no-cache": { type: "boolean" },
    builder: { type: "string" },
    ...sharedOptions("json"),
  },
  async run({ values, positionals, io }): Promise<number> {
    const { loaded } = loadComposeInput(values);
    const json = values.json === true;
    const print = buildPrinter(io, json);
    await withDeployMachines(async (machines) => {
      const builder = pickBuilder(machines, values.builder as string | undefined);
      const prepared = await prepareBuilds(loaded.project, builder, print, {
        services: positionals.length > 0 ? positionals : undefined,
        noCache: values["no-cache"] === true,
      });
      try {
        await runBuilds(prepared.jobs, builder, print);
      } finally {
        await discardBuilds(prepared.jobs);
      }
    }, { composeContext: loaded.project.context ?? undefined });
    return 0;
  },
};
