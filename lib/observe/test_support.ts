/**
 * Helpers for this area's tests and benchmarks: Docker-shaped container directories and `local` driver files
 * generated with protobufjs, which also checks the hand-written decoder in `log_entry.ts`.
 *
 * @module
 */

import { join } from "node:path";
import protobuf from "protobufjs";
import type { ContainerIdentity } from "./containers.ts";
import type { LogEntryInput } from "./log_entry.ts";
import type { LogStore } from "./log_store.ts";
import { concatBytes } from "../util/mod.ts";

/** A base time: 2026-01-01T00:00:00Z in ns. */
export const T0 = 1_767_225_600_000_000_000n;

/**
 * Fills `store` with one hour from {@linkcode T0} of a busy Service, shop/web (three containers), and another
 * Service's container, shop/db: 30 lines a second each, every 1000th a status 500. Answers the containers' keys
 * (web's slots 0, 1, 2, then db) and the hour's bounds in ns.
 */
export function busyHour(store: LogStore): { keys: number[]; since: bigint; until: bigint } {
  const HOUR_S = 3600;
  const PER_SECOND = 30;
  const owned = (slot: string, name: string, service: string, id: string): ContainerIdentity =>
    identity({ containerId: id.repeat(64), name, project: "shop", service, deployment: "dep-1", slot });
  const keys = [
    ...["0", "1", "2"].map((slot) => store.upsertContainer(owned(slot, `web-${slot}`, "web", slot)).key),
    store.upsertContainer(owned("0", "db", "db", "9")).key,
  ];
  const encoder = new TextEncoder();
  for (let s = 0; s < HOUR_S; s += 60) {
    for (const key of keys) {
      const minute = Array.from({ length: 60 * PER_SECOND }, (_, i) => ({
        stream: "stdout" as const,
        timeNano: T0 + BigInt(s) * 1_000_000_000n + BigInt(i) * (1_000_000_000n / BigInt(PER_SECOND)),
        line: encoder.encode(
          `INFO request id=${s}-${i} path=/api/items/${i % 97} status=${i % 1000 === 0 ? 500 : 200}`,
        ),
        partial: false,
        at: 0,
      }));
      store.append(key, {
        entries: minute,
        corruptBytes: 0,
        gap: false,
        cursor: { ino: 1, head: new Uint8Array(), offset: 0 },
      });
    }
  }
  return { keys, since: T0, until: T0 + BigInt(HOUR_S) * 1_000_000_000n };
}

/** A container's identity with every label set; `overrides` replace fields. */
export function identity(overrides: Partial<ContainerIdentity> = {}): ContainerIdentity {
  return {
    containerId: "c".repeat(64),
    name: "c",
    machineId: "m",
    project: "p",
    service: "s",
    deployment: "d",
    slot: "0",
    ...overrides,
  };
}

/** `n` numbered stdout lines one ms apart, starting at `start`. */
export function numbered(prefix: string, n: number, start: bigint = T0, first = 0): LogEntryInput[] {
  return Array.from({ length: n }, (_, i) => ({
    stream: "stdout" as const,
    timeNano: start + BigInt(first + i) * 1_000_000n,
    line: `${prefix} ${first + i}`,
  }));
}

/** Frames for `entries`, concatenated. */
export function frames(entries: LogEntryInput[]): Uint8Array {
  return concatBytes(entries.map(encodeLogFrame));
}

/** Appends bytes to a file (creating it). */
export async function append(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.writeFile(path, bytes, { append: true });
}

/** Labels of a Ployz container. */
export function ployzLabels(service: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    "ployz.managed": "1",
    "ployz.machine": "machine-1",
    "ployz.project": "shop",
    "ployz.service": service,
    "ployz.deployment": "dep-1",
    "ployz.slot": "0",
    ...extra,
  };
}

/** Creates `<dockerRoot>/containers/<id>/` with a `config.v2.json` and an empty `local-logs/`; returns the log dir. */
export async function makeContainer(
  dockerRoot: string,
  id: string,
  labels: Record<string, string>,
): Promise<string> {
  const dir = join(dockerRoot, "containers", id);
  await Deno.mkdir(join(dir, "local-logs"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, "config.v2.json"),
    JSON.stringify({
      ID: id,
      Name: `/${id.slice(0, 8)}`,
      Config: { Labels: labels },
      State: { Running: true },
    }),
  );
  return join(dir, "local-logs");
}

/**
 * Rotates like Docker with `max-file` = `maxFiles`: shifts `.1`… up, drops the one past `maxFiles - 1`, renames
 * `container.log` to `.1` and starts an empty live file.
 */
export async function rotate(logDir: string, maxFiles = 5): Promise<void> {
  await Deno.remove(join(logDir, `container.log.${maxFiles - 1}`)).catch(() => {});
  for (let n = maxFiles - 2; n >= 1; n--) {
    try {
      await Deno.rename(join(logDir, `container.log.${n}`), join(logDir, `container.log.${n + 1}`));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  await Deno.rename(join(logDir, "container.log"), join(logDir, "container.log.1"));
  await Deno.writeFile(join(logDir, "container.log"), new Uint8Array());
}

/** A temp directory removed on dispose (the one every area's tests use). */
export { tempDir } from "../util/testing/mod.ts";

const { Field, Root, Type } = protobuf;

const metadataType = new Type("PartialLogEntryMetadata")
  .add(new Field("last", 1, "bool"))
  .add(new Field("id", 2, "string"))
  .add(new Field("ordinal", 3, "int32"));

const entryType = new Type("LogEntry")
  .add(new Field("source", 1, "string"))
  .add(new Field("timeNano", 2, "int64"))
  .add(new Field("line", 3, "bytes"))
  .add(new Field("partial", 4, "bool"))
  .add(new Field("partialLogMetadata", 5, "PartialLogEntryMetadata"));

new Root().add(metadataType).add(entryType);

const encoder = new TextEncoder();

/** Encodes one entry as a whole `local` driver frame: length, `LogEntry`, length. */
export function encodeLogFrame(entry: LogEntryInput): Uint8Array {
  const message: Record<string, unknown> = {
    source: entry.stream,
    timeNano: {
      low: Number(BigInt.asIntN(32, entry.timeNano)),
      high: Number(BigInt.asIntN(32, entry.timeNano >> 32n)),
      unsigned: false,
    },
    line: typeof entry.line === "string" ? encoder.encode(entry.line) : entry.line,
  };
  if (entry.partial) {
    message.partial = true;
    message.partialLogMetadata = entry.partial;
  }
  const body = entryType.encode(message).finish();
  const frame = new Uint8Array(body.length + 8);
  const view = new DataView(frame.buffer);
  view.setUint32(0, body.length);
  frame.set(body, 4);
  view.setUint32(4 + body.length, body.length);
  return frame;
}
