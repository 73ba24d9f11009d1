import { deepEqual, equal, throws } from "node:assert/strict";
import type { LogHistoryResponse, LogLineWire, PartialResult } from "../rpc/mod.ts";
import { lineKey, mergeHistory, parseWhen, readFrames, renderLine } from "./log_fanout.ts";

function line(time: string, text: string, container = "c1"): LogLineWire {
  return {
    "machine_id": "x",
    "container_id": container,
    "container_name": `web-${container}`,
    service: "web",
    deployment: "d1",
    stream: "stdout",
    "time_nano": time,
    text,
  };
}

function answer(name: string, lines: LogLineWire[], extra: Partial<LogHistoryResponse> = {}): {
  machine: { id: string; name: string };
  value: LogHistoryResponse;
} {
  return {
    machine: { id: `id-${name}`, name },
    value: { "machine_id": `id-${name}`, "machine_name": name, lines, truncated: false, notes: [], ...extra },
  };
}

Deno.test("mergeHistory orders lines of every Machine by time, beyond 2^53 nanoseconds", () => {
  const result: PartialResult<LogHistoryResponse> = {
    successes: [
      answer("m2", [line("1700000000000000002", "b"), line("1700000000000000005", "e")]),
      answer("m1", [line("1700000000000000001", "a"), line("1700000000000000003", "c")], {
        notes: ["nothing else"],
      }),
    ],
    failures: [],
    omissions: [],
  };
  const merged = mergeHistory(result, 10);
  deepEqual(merged.lines.map((l) => `${l.machine.name}:${l.line.text}`), ["m1:a", "m2:b", "m1:c", "m2:e"]);
  deepEqual(merged.notes, ['Machine "m1": nothing else']);
  equal(merged.truncated, false);
});

Deno.test("mergeHistory keeps the newest lines and says older ones were left out", () => {
  const result: PartialResult<LogHistoryResponse> = {
    successes: [
      answer("m1", [line("10", "a"), line("30", "c")]),
      answer("m2", [line("20", "b"), line("40", "d")]),
    ],
    failures: [],
    omissions: [],
  };
  const merged = mergeHistory(result, 3);
  deepEqual(merged.lines.map((l) => l.line.text), ["b", "c", "d"]);
  equal(merged.truncated, true);
  const one = mergeHistory(
    { ...result, successes: [answer("m1", [line("1", "a")], { truncated: true })] },
    5,
  );
  equal(one.truncated, true, "a Machine's own truncation carries over");
});

Deno.test("renderLine names the Machine and the container and marks stderr", () => {
  const text = renderLine({
    machine: { id: "i", name: "m1" },
    line: { ...line("1700000000123456789", "boom"), stream: "stderr" },
  });
  equal(text, "2023-11-14T22:13:20.123Z m1 web-c1 (stderr) | boom\n");
});

Deno.test("parseWhen reads durations and RFC 3339 times, and refuses anything else", () => {
  const now = Date.parse("2024-01-01T02:00:00Z");
  equal(
    parseWhen("--since", "2h", now),
    (BigInt(Date.parse("2024-01-01T00:00:00Z")) * 1_000_000n).toString(),
  );
  equal(parseWhen("--until", "2024-01-01T01:00:00Z", now), "1704070800000000000");
  throws(() => parseWhen("--since", "yesterday", now), /Invalid value "yesterday" for "--since"/);
  throws(() => parseWhen("--since", "-5m", now), /Invalid value/);
});

Deno.test("readFrames reads NDJSON frames split anywhere and refuses unknown variants", async () => {
  const frames = [
    JSON.stringify({ type: "line", ...line("5", "hi") }),
    JSON.stringify({ type: "heartbeat" }),
    JSON.stringify({ type: "note", message: "n" }),
  ].join("\n") + "\n";
  const bytes = new TextEncoder().encode(frames);
  const stream = new ReadableStream<Uint8Array>({
    start(c): void {
      for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
      c.close();
    },
  });
  const got = [];
  for await (const f of readFrames(stream)) got.push(f.type === "line" ? `line:${f.text}` : f.type);
  deepEqual(got, ["line:hi", "heartbeat", "note"]);
  const unknown = ReadableStream.from([new TextEncoder().encode('{"type":"gap","since":"1"}\n')]);
  let refused = false;
  try {
    for await (const _ of readFrames(unknown)) { /* nothing */ }
  } catch (error) {
    refused = /unknown variant/.test(String(error));
  }
  equal(refused, true);
});

Deno.test("lineKey tells apart lines that differ in container, time, stream or text", () => {
  const a = line("1", "x");
  equal(lineKey(a), lineKey({ ...a }));
  equal(
    new Set([a, { ...a, text: "y" }, { ...a, "time_nano": "2" }, line("1", "x", "c2")].map(lineKey)).size,
    4,
  );
});
