// `ployz cleanup`: per Machine, the stopped old containers Ployz owns (exited or dead, of a Deployment other than
// their Service's Serving Pointer) and the images Ployz pulled that no container uses (the image prune route).
// A Preview first, then a receipt per leg under a request key; the report names per Machine what was removed, what
// failed and what was never reached. Containers and images Ployz does not own are never touched: the Machine lists
// only owned containers, removes only owned ones, and its prune keeps images it did not pull.
import type { MachineClient, ObservedContainerWire, PruneImagesResponse } from "../rpc/mod.ts";
import { CodedError, messageOf } from "../util/mod.ts";

/** The slice of Machine RPC a cleanup needs: owned containers, the Serving Pointer, removal and image prune. */
export type CleanupApi = Pick<
  MachineClient,
  "listContainers" | "pointerStatus" | "removeContainer" | "pruneImages"
>;

/** A Machine to clean. */
export interface CleanupTarget {
  /** The Machine. */
  machine: { id: string; name: string };
  /** Its client. */
  api: CleanupApi;
}

/** One old container. */
export interface OldContainer {
  /** Docker's id. */
  id: string;
  /** Container name. */
  name: string;
  /** `project/service`. */
  service: string;
  /** Its Deployment. */
  deployment: string;
  /** Docker's state. */
  state: string;
}

/** What a Machine would lose: its Preview. */
export interface CleanupPreview {
  /** The Machine. */
  machine: { id: string; name: string };
  /** Stopped old containers. */
  containers: OldContainer[];
  /** Stopped containers kept: of the current Deployment, or of a Service without a Serving Pointer. */
  keptStopped: number;
  /** The prune route's dry run: images Ployz pulled that no container uses now. */
  images: PruneImagesResponse;
}

/** What happened on one Machine. */
export interface CleanupReport {
  /** The Machine. */
  machine: { id: string; name: string };
  /** Containers removed, by name (`earlier`: by an earlier run of the request). */
  removed: { name: string; earlier?: boolean }[];
  /** Images removed by the prune; absent when the prune was done earlier or failed. */
  images?: PruneImagesResponse;
  /** The image prune was done by an earlier run of the request. */
  imagesEarlier?: boolean;
  /** Legs that failed, each `what: code: message`. */
  failed: string[];
}

/** A leg's receipt: `sent` until its answer is known. */
export interface CleanupReceipt {
  /** Where the leg stands. */
  status: "sent" | "succeeded" | "failed";
  /** Images removed by a prune leg. */
  images?: number;
  /** Why it failed, `code: message`. */
  error?: string;
}

/** Where the receipts of a cleanup are kept (the Config Store in the CLI). */
export interface CleanupReceipts {
  /** The receipt of `leg`, if any. */
  load(leg: string): CleanupReceipt | undefined;
  /** Saves the receipt of `leg`. */
  save(leg: string, receipt: CleanupReceipt): void;
}

// Only these are old enough to remove: `created` may be a Deploy's container about to start.
const STOPPED = new Set(["exited", "dead"]);

/**
 * The stopped containers that are old: exited or dead, and of a Deployment other than their Service's Serving
 * Pointer. A Service without a pointer keeps its containers (which of them is current is not known).
 */
export function oldContainers(
  containers: ObservedContainerWire[],
  pointers: ReadonlyMap<string, string | undefined>,
): { old: OldContainer[]; keptStopped: number } {
  const old: OldContainer[] = [];
  let keptStopped = 0;
  for (const c of containers) {
    if (!STOPPED.has(c.state)) continue;
    const service = `${c.project}/${c.service}`;
    const current = pointers.get(service);
    if (current === undefined || current === c.deployment) keptStopped++;
    else old.push({ id: c.id, name: c.name, service, deployment: c.deployment, state: c.state });
  }
  return { old: old.sort((a, b) => a.name.localeCompare(b.name)), keptStopped };
}

function errorText(error: unknown): string {
  if (error instanceof CodedError) return `${error.code}: ${error.message}`;
  return `internal: ${messageOf(error)}`;
}

/** The Preview of one Machine: its own view of its containers, its Serving Pointers and its prunable images. */
export async function previewCleanup(target: CleanupTarget, signal?: AbortSignal): Promise<CleanupPreview> {
  const { containers } = await target.api.listContainers({}, { signal });
  const services = [
    ...new Set(containers.filter((c) => STOPPED.has(c.state)).map((c) => `${c.project}/${c.service}`)),
  ];
  const pointers = new Map<string, string | undefined>();
  for (const service of services) {
    const [project, name] = service.split("/");
    const status = await target.api.pointerStatus({ project, service: name }, { signal });
    pointers.set(service, status.pointer?.deployment);
  }
  const { old, keptStopped } = oldContainers(containers, pointers);
  const images = await target.api.pruneImages({ "dry_run": true }, { signal });
  return { machine: target.machine, containers: old, keptStopped, images };
}

/**
 * Removes what `preview` lists on its Machine, a receipt per leg: each old container, then the image prune (after,
 * so images only those containers used go too). A leg whose receipt says `succeeded` is not sent again; any other
 * is, which is safe: a removal and a prune each name the state they want (gone, unused images gone).
 */
export async function runCleanup(
  target: CleanupTarget,
  preview: CleanupPreview,
  receipts: CleanupReceipts,
  signal?: AbortSignal,
): Promise<CleanupReport> {
  const name = target.machine.name;
  const report: CleanupReport = { machine: target.machine, removed: [], failed: [] };
  for (const c of preview.containers) {
    const leg = `remove ${c.name}@${name}`;
    if (receipts.load(leg)?.status === "succeeded") {
      report.removed.push({ name: c.name, earlier: true });
      continue;
    }
    receipts.save(leg, { status: "sent" });
    try {
      await target.api.removeContainer({ id: c.id }, { signal });
      receipts.save(leg, { status: "succeeded" });
      report.removed.push({ name: c.name });
    } catch (error) {
      receipts.save(leg, { status: "failed", error: errorText(error) });
      report.failed.push(`remove ${c.name}: ${errorText(error)}`);
    }
  }
  const leg = `prune images@${name}`;
  if (receipts.load(leg)?.status === "succeeded") {
    report.imagesEarlier = true;
    return report;
  }
  receipts.save(leg, { status: "sent" });
  try {
    const images = await target.api.pruneImages({ "dry_run": false }, { signal });
    report.images = images;
    for (const f of images.failed) report.failed.push(`remove image ${f.id.slice(0, 19)}: ${f.message}`);
    receipts.save(
      leg,
      images.failed.length === 0 ? { status: "succeeded", images: images.removed.length } : {
        status: "failed",
        images: images.removed.length,
        error: `${images.failed.length} image(s) failed`,
      },
    );
  } catch (error) {
    receipts.save(leg, { status: "failed", error: errorText(error) });
    report.failed.push(`prune images: ${errorText(error)}`);
  }
  return report;
}
