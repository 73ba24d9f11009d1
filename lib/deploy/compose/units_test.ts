import assert from "node:assert/strict";
import { formatDurationMs, parseBytes, parseDurationMs } from "./units.ts";

Deno.test("parseDurationMs() reads Go durations", () => {
  assert.equal(parseDurationMs("1m30s"), 90_000);
  assert.equal(parseDurationMs("10s"), 10_000);
  assert.equal(parseDurationMs("500ms"), 500);
  assert.equal(parseDurationMs("1.5h"), 5_400_000);
  assert.equal(parseDurationMs("1500us"), 1);
  assert.equal(parseDurationMs("0"), 0);
});

Deno.test("parseDurationMs() refuses numbers without units and unknown units", () => {
  for (const text of ["10", "", "1d", "-1s", "s", "1m30"]) {
    const parsed = parseDurationMs(text);
    assert.equal(typeof parsed, "object", text);
  }
});

Deno.test("formatDurationMs() writes what parseDurationMs() reads, largest units first", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [500, "500ms"],
    [1500, "1s500ms"],
    [90_000, "1m30s"],
    [1_800_000, "30m"],
    [3_600_000, "1h"],
    [3_661_001, "1h1m1s1ms"],
  ];
  for (const [ms, text] of cases) {
    assert.equal(formatDurationMs(ms), text);
    assert.equal(parseDurationMs(text), ms);
  }
});

Deno.test("parseBytes() reads Docker byte sizes in powers of 1024", () => {
  assert.equal(parseBytes("512"), 512);
  assert.equal(parseBytes("64m"), 64 * 1024 ** 2);
  assert.equal(parseBytes("1.5GiB"), 1.5 * 1024 ** 3);
  assert.equal(parseBytes("20G"), 20 * 1024 ** 3);
  assert.equal(parseBytes("1kb"), 1024);
});

Deno.test("parseBytes() refuses unknown units and fractional bytes", () => {
  for (const text of ["1.5x", "abc", "1.5", "-1m", ""]) assert.equal(typeof parseBytes(text), "object", text);
});
