import { deepEqual, equal } from "node:assert/strict";
import type { ObservedContainerWire, PruneImagesResponse } from "../rpc/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import {
  type CleanupApi,
  type CleanupReceipt,
  oldContainers,
  previewCleanup,
  runCleanup,
} from "./cleanup.ts";
import { receiptBook } from "./deploy_test_fake.ts";

function container(name: string, state: string, deployment: string, service = "web"): ObservedContainerWire {
  return { id: `id-${name}`, name, project: "shop", service, deployment, state } as ObservedContainerWire;
}

const images = (n: number): PruneImagesResponse => ({
  "machine_id": "m1",
  removed: Array.from({ length: n }, (_, i) => ({ id: `sha256:${i}`, tags: [`img:${i}`], size: 10 })),
  "kept_in_use": 1,
  "kept_not_owned": 2,
  failed: [],
});

Deno.test("cleanup: only exited or dead containers of a Deployment other than the Serving Pointer are old", () => {
  const { old, keptStopped } = oldContainers([
    container("web-1-new", "running", "new"),
    container("web-1-old", "exited", "old"),
    container("web-2-old", "dead", "old"),
    container("web-2-cur", "exited", "new"), // stopped by `ployz stop`: the current Deployment stays
    container("web-3-old", "created", "old"), // may be a Deploy's container about to start
    container("web-4-old", "running", "old"),
    container("db-1-old", "exited", "old", "db"), // no Serving Pointer: which is current is not known
  ], new Map([["shop/web", "new"], ["shop/db", undefined]]));
  deepEqual(old.map((c) => `${c.name} ${c.state}`), ["web-1-old exited", "web-2-old dead"]);
  equal(keptStopped, 2);
});

function fakeMachine(log: string[], fail: Set<string> = new Set()): CleanupApi {
  return {
    listContainers: () =>
      Promise.resolve({
        "machine_id": "m1",
        "observed_at": "",
        containers: [
          container("web-1-new", "running", "new"),
          container("web-1-old", "exited", "old"),
          container("web-2-old", "exited", "old"),
        ],
      }),
    pointerStatus: ({ project, service }) => {
      log.push(`pointer ${project}/${service}`);
      return Promise.resolve({ pointer: { project, service, deployment: "new" }, acks: [], missing: [] });
    },
    removeContainer: ({ id }) => {
      log.push(`remove ${id}`);
      if (fail.has(id)) return Promise.reject(new RpcError("unavailable", `Cannot reach Machine "m1"`));
      return Promise.resolve({ id, removed: true });
    },
    pruneImages: ({ dry_run }) => {
      log.push(`prune dry=${dry_run}`);
      return Promise.resolve(images(dry_run ? 1 : 2));
    },
  };
}

Deno.test("cleanup: a Preview, then a receipt per leg; a re-run with them sends only what is not known done", async () => {
  const receipts = receiptBook<CleanupReceipt>();
  const log: string[] = [];
  const target = { machine: { id: "m1", name: "m1" }, api: fakeMachine(log, new Set(["id-web-2-old"])) };
  const preview = await previewCleanup(target);
  deepEqual(preview.containers.map((c) => c.name), ["web-1-old", "web-2-old"]);
  equal(preview.images.removed.length, 1);
  deepEqual(log, ["pointer shop/web", "prune dry=true"]);
  const first = await runCleanup(target, preview, receipts);
  deepEqual(first.removed, [{ name: "web-1-old" }]);
  deepEqual(first.failed, ['remove web-2-old: unavailable: Cannot reach Machine "m1"']);
  equal(first.images?.removed.length, 2, "the prune runs after the removals, so their images go too");
  deepEqual([...receipts.legs].map(([leg, r]) => `${leg}: ${r.status}`), [
    "remove web-1-old@m1: succeeded",
    "remove web-2-old@m1: failed",
    "prune images@m1: succeeded",
  ]);

  const again: string[] = [];
  const healed = { ...target, api: fakeMachine(again) };
  const second = await runCleanup(healed, await previewCleanup(healed), receipts);
  deepEqual(second.removed, [{ name: "web-1-old", earlier: true }, { name: "web-2-old" }]);
  equal(second.imagesEarlier, true);
  deepEqual(again, ["pointer shop/web", "prune dry=true", "remove id-web-2-old"]);
  deepEqual(second.failed, []);
});
