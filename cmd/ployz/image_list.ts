// `ployz image ls` and `ployz image prune`: every Machine's images (ids, digests, sizes, which Services use them,
// which Ployz pulled), and the removal of the ones Ployz pulled that no container uses, with a Preview and counts.
import type { Command, Io } from "../../lib/cli/mod.ts";
import type { ListImagesResponse, PruneImagesResponse } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { confirmed } from "./confirm.ts";
import { megabytes } from "./units.ts";

function shortId(id: string): string {
  return id.replace(/^sha256:/, "").slice(0, 12);
}

/** `ployz image ls`. */
export const imageLsCommand: Command = {
  name: "ls",
  summary: "List every Machine's images, their digests and the Services using them",
  usage: "[--machine M] [--json]",
  description: [
    "One row per image and Machine: id, tags, registry digest, size, whether Ployz pulled it (PLOYZ yes) and the",
    "Services whose containers use it. Machines that did not answer are listed at the end.",
  ],
  options: sharedOptions("json", "machine"),
  async run({ values, io }): Promise<number> {
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const result = await askAll<ListImagesResponse>(
      targets,
      (client, _m, signal) => client.listImages({ signal }),
    );
    requireAnyAnswer(result, "list images");
    if (values.json === true) {
      io.out(jsonLine({
        machines: result.successes.map((s) => ({
          "machine_id": s.machine.id,
          "machine_name": s.machine.name,
          images: s.value.images,
        })),
        ...partialJson(result),
      }));
      return 0;
    }
    const rows = result.successes.flatMap((s) =>
      s.value.images.map((i) => [
        shortId(i.id),
        i.tags.join(",") || "<none>",
        i.digests.map((d) => d.slice(d.indexOf("@") + 1, d.indexOf("@") + 20) + "…").join(",") || "-",
        megabytes(i.size),
        i.owned ? "yes" : "no",
        [...i.used_by, ...(i.other_containers > 0 ? [`${i.other_containers} other`] : [])].join(",") || "-",
        s.machine.name,
      ])
    );
    io.out(table(["ID", "TAGS", "DIGEST", "SIZE", "PLOYZ", "USED BY", "MACHINE"], rows));
    for (const line of partialLines(result)) io.err(`${line}\n`);
    return 0;
  },
};

async function prune(
  io: Io,
  targets: Awaited<ReturnType<typeof clusterTargets>>,
  dryRun: boolean,
  all: boolean,
) {
  return await askAll<PruneImagesResponse>(
    targets,
    (client, _m, signal) => client.pruneImages({ "dry_run": dryRun, all }, { signal }),
    120_000,
    (o) => {
      if (o.kind === "failure") io.err(`Machine "${o.machine.name}" failed: ${o.message}\n`);
    },
  );
}

/** `ployz image prune`. */
export const imagePruneCommand: Command = {
  name: "prune",
  summary: "Remove images Ployz pulled or built that no container uses, on every Machine",
  usage: "[--machine M] [--all] [-y] [--dry-run] [--json]",
  description: [
    "Shows what each Machine would remove, then removes it once confirmed (-y skips asking). Only images Ployz",
    "pulled, copied or built are removed (a built image superseded by a newer build of its Service, once no",
    "container runs it); --all also removes other images no container uses. Docker refuses to remove an image",
    "any container uses, Ployz's or not.",
  ],
  options: {
    ...sharedOptions("json", "machine"),
    all: { type: "boolean" },
    ...sharedOptions("yes", "dry-run"),
  },
  async run({ values, io }): Promise<number> {
    using targets = await clusterTargets({ machine: stringFlag(values, "machine") });
    const all = values.all === true;
    const preview = await prune(io, targets, true, all);
    requireAnyAnswer(preview, "list images");
    const count = preview.successes.reduce((n, s) => n + s.value.removed.length, 0);
    const lines = preview.successes.map((s) =>
      `  ${s.machine.name}: remove ${s.value.removed.length} image(s), ${
        megabytes(s.value.removed.reduce((n, r) => n + r.size, 0))
      }; keep ${s.value.kept_in_use} in use, ${s.value.kept_not_owned} not pulled by Ployz${
        s.value.removed.length > 0
          ? ` (${s.value.removed.map((r) => r.tags[0] ?? shortId(r.id)).join(", ")})`
          : ""
      }`
    );
    if (values.json !== true) io.out(`Image prune${all ? " --all" : ""}:\n${lines.join("\n")}\n`);
    if (values["dry-run"] === true || count === 0) {
      if (values.json === true) {
        io.out(jsonLine({ "dry_run": true, machines: preview.successes.map(view), ...partialJson(preview) }));
      }
      return 0;
    }
    if (values.yes !== true && !await confirmed("prune", `Remove ${count} image(s)?`)) {
      io.err("Nothing removed: the operator declined\n");
      return 1;
    }
    const done = await prune(io, targets, false, all);
    requireAnyAnswer(done, "prune images");
    if (values.json === true) {
      io.out(jsonLine({ "dry_run": false, machines: done.successes.map(view), ...partialJson(done) }));
    } else {
      for (const s of done.successes) {
        io.out(
          `Machine "${s.machine.name}": removed ${s.value.removed.length} image(s), ${
            megabytes(s.value.removed.reduce((n, r) => n + r.size, 0))
          }${
            s.value.failed.length > 0
              ? `; ${s.value.failed.length} failed: ${s.value.failed.map((f) => f.message).join("; ")}`
              : ""
          }\n`,
        );
      }
      for (const line of partialLines(done)) io.err(`${line}\n`);
    }
    return done.successes.some((s) => s.value.failed.length > 0) || done.failures.length > 0 ? 1 : 0;
  },
};

function view(
  s: { machine: { id: string; name: string }; value: PruneImagesResponse },
): Record<string, unknown> {
  return { "machine_name": s.machine.name, ...s.value };
}
