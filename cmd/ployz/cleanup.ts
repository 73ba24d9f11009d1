// `ployz cleanup`: per Machine, the stopped old containers Ployz owns and the images Ployz pulled that no container
// uses, with a Preview and a receipt per leg. The flow is lib/operator's previewCleanup/runCleanup; this file asks,
// prints and keeps the receipts.
import type { Command } from "../../lib/cli/mod.ts";
import {
  type CleanupPreview,
  type CleanupReceipt,
  type CleanupReport,
  previewCleanup,
  runCleanup,
} from "../../lib/operator/mod.ts";
import { errorBody } from "../../lib/deploy/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, openConfig } from "./connect.ts";
import { receiptBook, requestKey } from "./receipts.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { confirmed } from "./confirm.ts";
import { megabytes } from "./units.ts";

function previewLine(p: CleanupPreview): string {
  const bytes = p.images.removed.reduce((n, r) => n + r.size, 0);
  return `  ${p.machine.name}: remove ${p.containers.length} stopped old container(s)${
    p.containers.length > 0 ? ` (${p.containers.map((c) => c.name).join(", ")})` : ""
  }, ${p.images.removed.length} unused Ployz image(s) ${
    megabytes(bytes)
  } and those only they use; keep ${p.keptStopped} stopped of a current Deployment, ${p.images.kept_in_use} image(s) in use, ${p.images.kept_not_owned} not pulled by Ployz`;
}

function reportLine(r: CleanupReport): string {
  const earlier = r.removed.filter((c) => c.earlier === true).length;
  const images = r.imagesEarlier === true
    ? "images pruned by an earlier run of this request"
    : r.images === undefined
    ? "images not pruned"
    : `removed ${r.images.removed.length} image(s), ${
      megabytes(r.images.removed.reduce((n, i) => n + i.size, 0))
    }`;
  return `Machine "${r.machine.name}": removed ${r.removed.length} container(s)${
    earlier > 0 ? ` (${earlier} by an earlier run of this request)` : ""
  }; ${images}${r.failed.length > 0 ? `; ${r.failed.length} failed: ${r.failed.join("; ")}` : ""}`;
}

/** `ployz cleanup`. */
export const cleanupCommand: Command = {
  name: "cleanup",
  summary: "Remove stopped old containers and unused Ployz images on every Machine",
  usage: "[--machine M] [-y] [--dry-run] [--request-key KEY] [--json]",
  description: [
    "Shows per Machine the stopped containers Ployz owns that are not of their Service's current Deployment (its",
    "Serving Pointer) and the images Ployz pulled or built that no container uses, then removes them once confirmed (-y",
    "skips asking): containers first, so images only they used go too. Containers and images Ployz does not own",
    "are never touched. Each leg keeps a receipt under the request key (printed); a re-run with",
    "--request-key KEY skips the legs already done.",
  ],
  options: sharedOptions("json", "machine", "yes", "dry-run", "request-key"),
  async run({ values, io }): Promise<number> {
    const json = values.json === true;
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const clients = new Map(targets.targets.flatMap((t) => "client" in t ? [[t.id, t.client] as const] : []));
    const previews = await askAll<CleanupPreview>(
      targets,
      (client, machine, signal) => previewCleanup({ machine, api: client }, signal),
      60_000,
    );
    requireAnyAnswer(previews, "preview the cleanup");
    const machines = previews.successes.map((s) => s.value);
    const count = machines.reduce((n, p) => n + p.containers.length + p.images.removed.length, 0);
    if (!json) io.out(`Cleanup:\n${machines.map(previewLine).join("\n")}\n`);
    if (values["dry-run"] === true || count === 0) {
      if (json) io.out(jsonLine({ "dry_run": true, machines, ...partialJson(previews) }));
      else {
        if (count === 0) io.out("Nothing to remove\n");
        for (const line of partialLines(previews)) io.err(`${line}\n`);
      }
      return 0;
    }
    if (values.yes !== true && !await confirmed("clean up", `Remove ${count} container(s) and image(s)?`)) {
      io.err("Nothing removed: the operator declined\n");
      return 1;
    }
    const key = requestKey(values["request-key"], "cleanup");
    using config = openConfig();
    const receipts = receiptBook<CleanupReceipt>(config, key);
    // Machines in parallel, each leg of one Machine in order; a Machine failing does not stop the others.
    const reports: CleanupReport[] = await Promise.all(machines.map(async (p) => {
      try {
        return await runCleanup({ machine: p.machine, api: clients.get(p.machine.id)! }, p, receipts);
      } catch (error) {
        const body = errorBody(error);
        return { machine: p.machine, removed: [], failed: [`${body.code}: ${body.message}`] };
      }
    }));
    const partial = partialLines(previews);
    if (json) {
      io.out(jsonLine({ "dry_run": false, "request_key": key, machines: reports, ...partialJson(previews) }));
    } else {
      for (const r of reports) io.out(`${reportLine(r)}\n`);
      for (const line of partial) io.err(`${line} (not reached)\n`);
      io.out(`request key: ${key}\n`);
    }
    return reports.some((r) => r.failed.length > 0) || partial.length > 0 ? 1 : 0;
  },
};
