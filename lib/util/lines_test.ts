import assert from "node:assert/strict";
import { linesUntilAborted, textLines } from "./lines.ts";
import { answerWithin, sleep } from "./time.ts";

/** A source that yields `first` and then never answers again: its pending read settles on nothing. */
async function* stalled(first: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(first);
  await new Promise(() => {});
}

Deno.test("linesUntilAborted ends at the abort even when the source's pending read never settles", async () => {
  const controller = new AbortController();
  const seen: string[] = [];
  const reading = (async () => {
    for await (const line of linesUntilAborted(stalled("one\ntwo\n"), controller.signal)) seen.push(line);
  })();
  await sleep(20);
  controller.abort();
  await answerWithin(reading, 1_000, () => new Error("the lines did not end within 1 s of the abort"));
  assert.deepEqual(seen, ["one", "two"]);
});

Deno.test("linesUntilAborted passes every line of a source that ends, as textLines does", async () => {
  async function* chunks(): AsyncGenerator<string> {
    yield "a\nb";
    yield "c\n";
  }
  const lines: string[] = [];
  for await (const line of linesUntilAborted(chunks(), new AbortController().signal)) lines.push(line);
  assert.deepEqual(lines, await Array.fromAsync(textLines(chunks())));
  assert.deepEqual(lines, ["a", "bc", ""]);
});

Deno.test("linesUntilAborted yields nothing once aborted", async () => {
  const controller = new AbortController();
  controller.abort();
  assert.deepEqual(await Array.fromAsync(linesUntilAborted(stalled("x\n"), controller.signal)), []);
});
