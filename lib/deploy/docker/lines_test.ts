import assert from "node:assert/strict";
import { jsonLines, readJsonLines, textLines } from "./client.ts";
import { Readable } from "node:stream";

async function* chunks(...parts: (string | Uint8Array)[]): AsyncGenerator<string | Uint8Array> {
  for (const part of parts) yield part;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

Deno.test("textLines: lines split across chunks, a character split across chunks, the last line without a newline", async () => {
  const euro = new TextEncoder().encode("€");
  const lines = await collect(textLines(chunks("a", "b\nc", euro.slice(0, 1), euro.slice(1), "\n\nlast")));
  assert.deepEqual(lines, ["ab", "c€", "", "last"]);
  assert.deepEqual(
    await collect(textLines(chunks("x\n"))),
    ["x", ""],
    "a trailing newline leaves an empty last line",
  );
});

Deno.test("jsonLines: blank lines skipped, a line that is not JSON kept as {stream}", async () => {
  const lines = await collect(jsonLines(chunks('{"status":"Pulling"}\n  \n', "plain text\n", '{"a":', "1}")));
  assert.deepEqual(lines, [{ status: "Pulling" }, { stream: "plain text" }, { a: 1 }]);
  assert.deepEqual(await readJsonLines(Readable.from(['{"id":1}\n{"id":2}'])), [{ id: 1 }, { id: 2 }]);
});
