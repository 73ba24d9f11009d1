import assert from "node:assert/strict";
import { MAX_FRAME_BYTES, scanFrames } from "./frames.ts";
import { concatBytes } from "../util/mod.ts";
import { encodeLogFrame, frames, numbered, T0 } from "./test_support.ts";

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

Deno.test("scanFrames reads every valid frame with its stream, time and text", () => {
  const bytes = frames([
    { stream: "stdout", timeNano: T0, line: "out 1" },
    { stream: "stderr", timeNano: T0 + 1n, line: "err 1" },
    { stream: "stdout", timeNano: T0 + 2n, line: "" },
  ]);
  const scan = scanFrames(bytes, { final: true });
  assert.equal(scan.corruptBytes, 0);
  assert.equal(scan.next, bytes.length);
  assert.deepEqual(scan.entries.map((e) => [e.stream, e.timeNano, text(e.line)]), [
    ["stdout", T0, "out 1"],
    ["stderr", T0 + 1n, "err 1"],
    ["stdout", T0 + 2n, ""],
  ]);
});

Deno.test("scanFrames skips garbage between frames and counts exactly its bytes", () => {
  const garbage = new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x05, 0x01]);
  const bytes = concatBytes([
    frames(numbered("a", 2)),
    garbage,
    frames(numbered("b", 2)),
    garbage.subarray(0, 3),
  ]);
  const scan = scanFrames(bytes, { final: true });
  assert.deepEqual(scan.entries.map((e) => text(e.line)), ["a 0", "a 1", "b 0", "b 1"]);
  assert.equal(scan.corruptBytes, garbage.length + 3);
});

Deno.test("scanFrames skips a frame whose trailer differs from its header, or whose body does not decode", () => {
  const good = encodeLogFrame({ stream: "stdout", timeNano: T0, line: "kept" });
  const badTrailer = encodeLogFrame({ stream: "stdout", timeNano: T0, line: "trailer" });
  badTrailer[badTrailer.length - 1] ^= 0xff;
  const badBody = encodeLogFrame({ stream: "stdout", timeNano: T0, line: "body" });
  badBody[4] = 0xff; // tag 0x7f byte run: not a LogEntry
  badBody[5] = 0xff;
  const notStream = encodeLogFrame({ stream: "stdout", timeNano: T0, line: "source" });
  notStream.set(new TextEncoder().encode("stdzzz"), 6);
  const bytes = concatBytes([good, badTrailer, badBody, notStream, good]);
  const scan = scanFrames(bytes, { final: true });
  assert.deepEqual(scan.entries.map((e) => text(e.line)), ["kept", "kept"]);
  assert.equal(scan.corruptBytes, badTrailer.length + badBody.length + notStream.length);
});

Deno.test("scanFrames treats a frame larger than the cap as corrupt", () => {
  const big = encodeLogFrame({ stream: "stdout", timeNano: T0, line: "x".repeat(2000) });
  const bytes = concatBytes([frames(numbered("a", 1)), big, frames(numbered("b", 1))]);
  const scan = scanFrames(bytes, { final: true, maxFrameBytes: 1000 });
  assert.deepEqual(scan.entries.map((e) => text(e.line)), ["a 0", "b 0"]);
  assert.equal(scan.corruptBytes, big.length);
  // The same frame is fine under the default cap.
  assert.equal(scanFrames(bytes, { final: true }).entries.length, 3);
  assert.ok(MAX_FRAME_BYTES >= 1_000_000);
});

Deno.test("scanFrames waits on a truncated last frame unless the bytes are final", () => {
  const whole = frames(numbered("a", 3));
  const cut = whole.subarray(0, whole.length - 5);
  const live = scanFrames(cut, { final: false });
  assert.equal(live.entries.length, 2);
  assert.equal(live.corruptBytes, 0);
  const lastStart = live.next;
  assert.equal(lastStart, live.entries[1].at + (whole.length / 3));
  // Three bytes of a header also wait.
  assert.equal(scanFrames(cut.subarray(lastStart, lastStart + 3), { final: false }).next, 0);
  const final = scanFrames(cut, { final: true });
  assert.equal(final.entries.length, 2);
  assert.equal(final.corruptBytes, cut.length - lastStart);
});

Deno.test("scanFrames keeps partial fragments flagged, and the last fragment not", () => {
  const bytes = frames([
    { stream: "stdout", timeNano: T0, line: "first half ", partial: { id: "p", ordinal: 1, last: false } },
    {
      stream: "stdout",
      timeNano: T0 + 1n,
      line: "second half",
      partial: { id: "p", ordinal: 2, last: true },
    },
  ]);
  const scan = scanFrames(bytes, { final: true });
  assert.deepEqual(scan.entries.map((e) => e.partial), [true, false]);
});
