import { deepEqual, equal } from "node:assert/strict";
import fc from "fast-check";
import { decodeLogEntry } from "./log_entry.ts";
import { encodeLogFrame } from "./test_support.ts";

// The body of a frame: what lies between its two lengths.
function body(frame: Uint8Array): Uint8Array {
  return frame.subarray(4, frame.length - 4);
}

Deno.test("decodeLogEntry() reads back every entry protobufjs encodes", () => {
  fc.assert(fc.property(
    fc.constantFrom("stdout" as const, "stderr" as const),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.uint8Array({ maxLength: 300 }),
    fc.option(
      fc.record({ id: fc.string(), ordinal: fc.integer({ min: 0, max: 2 ** 31 - 1 }), last: fc.boolean() }),
    ),
    (stream, timeNano, line, partial) => {
      const entry = decodeLogEntry(
        body(encodeLogFrame({ stream, timeNano, line, partial: partial ?? undefined })),
      );
      deepEqual(entry, { stream, timeNano, line, partial: partial !== null && !partial.last });
    },
  ));
});

Deno.test("decodeLogEntry() refuses truncated, foreign or garbage bytes without throwing", () => {
  const good = body(encodeLogFrame({ stream: "stdout", timeNano: 1n, line: "hello" }));
  for (let cut = 0; cut < good.length; cut++) {
    const entry = decodeLogEntry(good.subarray(0, cut));
    // A cut between fields can still be a whole message; it must then be the same entry or refused.
    if (entry !== undefined) equal(entry.stream, "stdout");
  }
  equal(decodeLogEntry(Uint8Array.of(0x0a, 0x03, 0x66, 0x6f, 0x6f)), undefined, "source foo");
  equal(decodeLogEntry(Uint8Array.of(0x0b)), undefined, "a group");
  equal(
    decodeLogEntry(Uint8Array.of(0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)),
    undefined,
  );
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
    const entry = decodeLogEntry(bytes);
    return entry === undefined || entry.stream === "stdout" || entry.stream === "stderr";
  }));
});
