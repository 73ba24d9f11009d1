// `ployz top`: the latest sampled values per Service and of each Machine, asked of every Machine.
import type { Command } from "../../lib/cli/mod.ts";
import type { MetricName } from "../../lib/observe/mod.ts";
import type { MetricHistoryResponse, MetricPointWire, MetricSeriesWire } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { formatValue, gapText, numberOf } from "./metric_view.ts";
import { table } from "./table.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

// Long enough to hold the last complete round even when one is late.
const WINDOW_MS = 30_000;

function latest(series: MetricSeriesWire | undefined): MetricPointWire | undefined {
  return series?.points.findLast((p) => p.samples > 0);
}

function cell(point: MetricPointWire | undefined, metric: MetricName, perSecondOver?: number): string {
  if (point === undefined) return "gap: not_sampled";
  const value = point.values[metric];
  const gap = gapText(value);
  if (gap !== undefined) return gap;
  const n = numberOf(value);
  return formatValue(
    metric,
    perSecondOver === undefined || n === undefined ? n : n / perSecondOver,
    perSecondOver !== undefined,
  );
}

interface MachineTop {
  services: MetricHistoryResponse;
  machine: MetricHistoryResponse;
}

/** `ployz top`. */
export const topCommand: Command = {
  name: "top",
  summary: "Show current CPU, memory and network per Service and Machine, from every Machine",
  usage: "[--machine M] [--json]",
  description: [
    "Asks every Machine the local Machine knows of for its latest 10 s samples. A value a Machine could not read",
    "shows as a gap with its reason, never as zero. Machines that did not answer, and Machines not asked, are",
    "listed. The exit code is 0 when at least one Machine answered.",
  ],
  options: sharedOptions("json", "machine"),
  async run({ values, io }): Promise<number> {
    const since = new Date(Date.now() - WINDOW_MS).toISOString();
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const result = await askAll<MachineTop>(targets, async (client, _m, signal) => {
      const [services, machine] = await Promise.all([
        client.metricHistory({ since, step: 10 }, { signal }),
        client.metricHistory({ machine: true, since, step: 10 }, { signal }),
      ]);
      return { services, machine };
    });
    requireAnyAnswer(result, "read metrics");
    if (values.json === true) {
      io.out(jsonLine({
        machines: result.successes.map(({ machine, value }) => {
          const point = latest(value.machine.series[0]);
          return {
            "machine_id": machine.id,
            "machine_name": machine.name,
            "sample_ms": value.services.sample_ms,
            services: value.services.series.map((series) => {
              const p = latest(series);
              return {
                project: series.project,
                service: series.service,
                containers: series.containers.length,
                "time_ms": p?.time_ms ?? null,
                values: p?.values ?? null,
              };
            }),
            machine: { "time_ms": point?.time_ms ?? null, values: point?.values ?? null },
          };
        }),
        ...partialJson(result),
      }));
      return 0;
    }
    const rows: string[][] = [];
    const footer: string[] = [];
    for (const { machine, value } of result.successes) {
      const seconds = value.services.sample_ms / 1000;
      for (const series of value.services.series) {
        const point = latest(series);
        rows.push([
          machine.name,
          `${series.project}/${series.service}`,
          String(series.containers.length),
          cell(point, "cpu"),
          cell(point, "memory"),
          cell(point, "net_rx", seconds),
          cell(point, "net_tx", seconds),
          cell(point, "disk_read", seconds),
          cell(point, "disk_write", seconds),
        ]);
      }
      const point = latest(value.machine.series[0]);
      rows.push([
        machine.name,
        "(Machine)",
        "",
        cell(point, "cpu"),
        cell(point, "memory"),
        cell(point, "net_rx", seconds),
        cell(point, "net_tx", seconds),
        "",
        "",
      ]);
      const at = point === undefined
        ? "no sample in the last 30 s"
        : `sampled ${new Date(point.time_ms).toISOString()}`;
      footer.push(
        `Machine "${machine.name}": load ${cell(point, "load1")}, data disk free ${
          cell(point, "disk_free")
        }, ${at}`,
      );
    }
    io.out(table(
      ["MACHINE", "SERVICE", "CONTAINERS", "CPU", "MEMORY", "NET RX", "NET TX", "DISK READ", "DISK WRITE"],
      rows,
    ));
    io.out(`CPU in cores; network and disk per second.\n${footer.join("\n")}\n`);
    for (const line of partialLines(result)) io.err(`${line}\n`);
    return 0;
  },
};
