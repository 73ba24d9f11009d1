// `ployz metrics PROJECT/SERVICE`: a Service's metric history from every Machine as terminal plots, gaps drawn as
// gaps.
import { CliError } from "../../lib/cli/mod.ts";
import type { Command } from "../../lib/cli/mod.ts";
import { isGauge, type MetricName, renderPlot } from "../../lib/observe/mod.ts";
import type { MetricSeriesWire } from "../../lib/rpc/mod.ts";
import { partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, parseTarget } from "./connect.ts";
import { formatValue, historyAll, numberOf, parseDuration } from "./metric_view.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

const DEFAULT_WIDTH = 72;
const TITLES: Record<MetricName, string> = {
  cpu: "CPU (cores)",
  memory: "Memory",
  "net_rx": "Network in",
  "net_tx": "Network out",
  "disk_read": "Disk read",
  "disk_write": "Disk write",
  restarts: "Restarts",
  load1: "Load (1 min)",
  "disk_free": "Data disk free",
};

function render(series: MetricSeriesWire, stepMs: number): string {
  const lines: string[] = [];
  for (const metric of series.metrics as MetricName[]) {
    const values = series.points.map((p) => numberOf(p.values[metric]));
    const perSecond = !isGauge(metric) && metric !== "restarts";
    const shown = values.map((v) => v === undefined ? undefined : perSecond ? v / (stepMs / 1000) : v);
    const read = shown.filter((v): v is number => v !== undefined);
    const max = read.length === 0 ? undefined : Math.max(...read);
    const last = shown.findLast((v) => v !== undefined);
    const gaps = values.filter((v) => v === undefined).length;
    lines.push(
      `${TITLES[metric]}${perSecond ? " per second" : ""}: last ${
        formatValue(metric, last, perSecond)
      }, max ${formatValue(metric, max, perSecond)}${
        gaps > 0 ? `, ${gaps} of ${values.length} points are gaps` : ""
      }`,
    );
    for (const row of renderPlot(shown, { height: 3 })) lines.push(`  │${row}│`);
  }
  return lines.join("\n");
}

function gapSummary(series: MetricSeriesWire): string {
  const counts = new Map<string, number>();
  for (const p of series.points) {
    for (const reasons of Object.values(p.gaps)) {
      for (const [reason, n] of Object.entries(reasons ?? {})) {
        counts.set(reason, (counts.get(reason) ?? 0) + (n ?? 0));
      }
    }
    if (p.samples === 0) counts.set("not_sampled", (counts.get("not_sampled") ?? 0) + 1);
  }
  return [...counts].map(([reason, n]) => `${reason} ×${n}`).join(", ");
}

/** `ployz metrics`. */
export const metricsCommand: Command = {
  name: "metrics",
  summary: "Plot a Service's CPU, memory, network and restarts over time, per Machine",
  usage: "PROJECT/SERVICE [--since 24h] [--width N] [--machine M] [--json]",
  description: [
    "Asks every Machine the local Machine knows of; each Machine's series is plotted on its own. Windows within",
    "the last 24 h come from raw 10 s samples, longer ones from 5 minute Rollups (kept 90 days). A blank column",
    "is a gap: a value that could not be read, or no sample at all; it is never drawn as zero. Machines that did",
    "not answer, and Machines not asked, are listed. The exit code is 0 when at least one Machine answered.",
  ],
  positionals: [1, 1],
  options: { since: { type: "string" }, width: { type: "string" }, ...sharedOptions("machine", "json") },
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], true);
    const sinceText = typeof values.since === "string" ? values.since : "24h";
    const sinceMs = parseDuration("--since", sinceText);
    const width = values.width === undefined ? DEFAULT_WIDTH : Number(values.width);
    if (!Number.isInteger(width) || width < 10 || width > 1000) {
      throw new CliError(
        "invalid_argument",
        `Invalid value "${values.width}" for "--width": expected 10 to 1000`,
        {
          exitCode: 2,
        },
      );
    }
    const step = Math.max(1, Math.ceil(sinceMs / width / 1000));
    const result = await historyAll(
      { project, service, since: new Date(Date.now() - sinceMs).toISOString(), step },
      stringFlag(values, "machine"),
    );
    requireAnyAnswer(result, `read the metrics of "${project}/${service}"`);
    if (values.json === true) {
      io.out(jsonLine({ machines: result.successes.map((s) => s.value), ...partialJson(result) }));
      return 0;
    }
    let shown = 0;
    for (const { machine, value: answer } of result.successes) {
      const series = answer.series[0];
      if (series === undefined) continue;
      shown++;
      const stepText = answer["step_ms"] >= 60_000
        ? `${answer["step_ms"] / 60_000} min`
        : `${answer["step_ms"] / 1000} s`;
      io.out(
        `${project}/${service} on Machine "${machine.name}": ${
          series.containers.length || "?"
        } container(s), ` +
          `${
            answer.source === "raw" ? "raw samples" : "5 minute Rollups"
          }, one column per ${stepText}, from ` +
          `${new Date(answer["since_ms"]).toISOString()} to ${new Date(answer["until_ms"]).toISOString()}\n`,
      );
      io.out(`${render(series, answer["step_ms"])}\n`);
      const markers = answer.markers.filter((m) => m.project === project && m.service === service);
      if (markers.length > 0) {
        io.out(
          `Events: ${
            markers.map((m) =>
              `${new Date(m["at_ms"]).toISOString()} ${m.kind}${m.detail ? ` ${m.detail}` : ""}`
            )
              .join("; ")
          }\n`,
        );
      }
      const gaps = gapSummary(series);
      if (gaps !== "") io.out(`Gaps: ${gaps}\n`);
    }
    const partial = partialLines(result);
    for (const line of partial) io.err(`${line}\n`);
    if (shown === 0) {
      const asked = result.successes.map((s) => `"${s.machine.name}"`).join(", ");
      throw new CliError(
        "not_found",
        `Service "${project}/${service}" has no metrics in the last ${sinceText} on ${asked}`,
      );
    }
    return 0;
  },
};
