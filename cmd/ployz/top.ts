// `ployz top`: the latest sampled values per Service and of the Machine, from this Machine's Observe Store.
import type { Command } from "../../lib/cli/mod.ts";
import type { MetricName, PointValue, WirePoint, WireSeries } from "../../lib/observe/mod.ts";
import { jsonLine } from "./connect.ts";
import { formatValue, gapText, history, numberOf, THIS_MACHINE_ONLY } from "./metric_view.ts";
import { table } from "./ps.ts";

// Long enough to hold the last complete round even when one is late.
const WINDOW_MS = 30_000;

function latest(series: WireSeries): WirePoint | undefined {
  return series.points.findLast((p) => p.samples > 0);
}

function cell(point: WirePoint | undefined, metric: MetricName, perSecondOver?: number): string {
  if (point === undefined) return "gap: not_sampled";
  const value: PointValue | undefined = point.values[metric];
  const gap = gapText(value);
  if (gap !== undefined) return gap;
  const n = numberOf(value);
  return formatValue(
    metric,
    perSecondOver === undefined || n === undefined ? n : n / perSecondOver,
    perSecondOver !== undefined,
  );
}

/** `ployz top`. */
export const topCommand: Command = {
  name: "top",
  summary: "Show current CPU, memory and network per Service and of the Machine",
  usage: "[--json]",
  description: "Reads this Machine's Observe Store (observe.sock); other Machines are not asked yet.",
  options: { json: { type: "boolean" } },
  async run({ values, io }): Promise<number> {
    const since = new Date(Date.now() - WINDOW_MS).toISOString();
    const [services, machine] = await Promise.all([
      history({ since, step: 10 }),
      history({ machine: true, since, step: 10 }),
    ]);
    const seconds = services["sample_ms"] / 1000;
    const rows = services.series.map((s) => ({ series: s, point: latest(s) }));
    const machinePoint = machine.series[0] === undefined ? undefined : latest(machine.series[0]);
    if (values.json === true) {
      io.out(jsonLine({
        "machine_only": true,
        "sample_ms": services["sample_ms"],
        services: rows.map(({ series, point }) => ({
          project: series.project,
          service: series.service,
          containers: series.containers.length,
          "time_ms": point?.["time_ms"] ?? null,
          values: point?.values ?? null,
        })),
        machine: { "time_ms": machinePoint?.["time_ms"] ?? null, values: machinePoint?.values ?? null },
      }));
      return 0;
    }
    io.out(table(
      ["SERVICE", "CONTAINERS", "CPU", "MEMORY", "NET RX", "NET TX", "DISK READ", "DISK WRITE"],
      [
        ...rows.map(({ series, point }) => [
          `${series.project}/${series.service}`,
          String(series.containers.length),
          cell(point, "cpu"),
          cell(point, "memory"),
          cell(point, "net_rx", seconds),
          cell(point, "net_tx", seconds),
          cell(point, "disk_read", seconds),
          cell(point, "disk_write", seconds),
        ]),
        [
          "(Machine)",
          "",
          cell(machinePoint, "cpu"),
          cell(machinePoint, "memory"),
          cell(machinePoint, "net_rx", seconds),
          cell(machinePoint, "net_tx", seconds),
          "",
          "",
        ],
      ],
    ));
    const at = machinePoint === undefined
      ? "no sample in the last 30 s"
      : new Date(machinePoint["time_ms"]).toISOString();
    io.out(
      `CPU in cores; network and disk per second. Machine load ${
        cell(machinePoint, "load1")
      }, data disk free ${cell(machinePoint, "disk_free")}. Sampled ${at} ${THIS_MACHINE_ONLY}\n`,
    );
    return 0;
  },
};
