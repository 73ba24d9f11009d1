import { equal } from "node:assert/strict";
import { drainLines } from "./machine_drain.ts";

Deno.test("a Drain's report names each Provisioned Volume it leaves and the command that moves or deletes it", () => {
  const text = drainLines({
    machine: { id: "two", name: "m2" },
    projects: [{ project: "shop", status: "succeeded" }],
    kept: [],
    unmanaged: [],
    volumes: [
      { name: "shop_db", role: "writer", project: "shop", usedBytes: 3 * 2 ** 20 },
      { name: "shop_media", role: "mirror" },
    ],
    elapsedMs: 1200,
  });
  equal(
    text,
    [
      `Drained Machine "m2" (two) in 1.2 s: it accepts no new workloads`,
      `  shop: succeeded`,
      `  kept: Provisioned Volume shop_db (Writer, 3.0MiB used) stays on "m2" (a Drain moves no data): move it ` +
      `with "ployz volume move shop_db --to MACHINE"`,
      `  kept: Provisioned Volume shop_media (Mirror) stays on "m2": delete it with ` +
      `"ployz volume rm-mirror shop_media --on m2" if it is not wanted there`,
      "",
    ].join("\n"),
  );
  const unknown = drainLines({
    machine: { id: "two", name: "m2" },
    projects: [],
    kept: [],
    unmanaged: [],
    volumes: [],
    volumesUnknown: "no answer within 15 s",
    elapsedMs: 0,
  });
  equal(unknown.split("\n")[2], `  unknown: the Provisioned Volumes of "m2" (no answer within 15 s)`);
});
