import assert from "node:assert/strict";
import type { Io } from "../../lib/cli/mod.ts";
import type { BuildEvent } from "../../lib/operator/mod.ts";
import { buildPrinter } from "./build.ts";

function capture(): { io: Io; text: () => string } {
  const out: string[] = [];
  return {
    io: { out: (t: string) => out.push(t), err: () => {} } as unknown as Io,
    text: () => out.join(""),
  };
}

const EVENTS: BuildEvent[] = [
  {
    type: "planned",
    service: "web",
    machine: "m1",
    ref: "bld-web:0123456789abcdef",
    upToDate: false,
    bytes: 2048,
    fileBytes: 3,
    entries: 2,
    ignored: 1,
    limit: 512 * 1024 * 1024,
  },
  { type: "sending", service: "web", machine: "m1", bytes: 2048, limit: 512 * 1024 * 1024 },
  { type: "sent", service: "web", bytes: 2048, durationMs: 12 },
  { type: "log", service: "web", text: "Step 1/2 : FROM busybox" },
  { type: "failed", service: "web", stage: "build", message: "exit 7", tail: ["broken step"] },
];

Deno.test("build progress: the build heading follows what is planned; a failure names its stage", () => {
  const { io, text } = capture();
  const print = buildPrinter(io, false);
  for (const event of EVENTS) print(event);
  const lines = text().trimEnd().split("\n");
  assert.match(lines[0], /^build web on m1 as bld-web:0123456789abcdef: context /);
  assert.equal(lines[1], "--- build ---");
  assert.equal(lines.filter((l) => l === "--- build ---").length, 1);
  assert.equal(lines.at(-1), 'build web: failed at stage "build"', "the streamed output is not repeated");
});

Deno.test("build progress as JSON: one line per event, the stage in the failure, no heading", () => {
  const { io, text } = capture();
  const print = buildPrinter(io, true);
  for (const event of EVENTS) print(event);
  const lines = text().trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, EVENTS.length);
  assert.deepEqual(lines.at(-1), {
    type: "build",
    build: { type: "failed", service: "web", stage: "build", message: "exit 7", tail: ["broken step"] },
  });
});
