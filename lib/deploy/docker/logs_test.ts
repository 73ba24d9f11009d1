import { deepEqual } from "node:assert/strict";
import { Demuxer } from "./logs.ts";

function frame(stream: number, text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + payload.length);
  out[0] = stream;
  new DataView(out.buffer).setUint32(4, payload.length);
  out.set(payload, 8);
  return out;
}

Deno.test("Demuxer joins stdout and stderr payloads across arbitrary chunk boundaries", () => {
  const bytes = new Uint8Array([...frame(1, "out line\n"), ...frame(2, "err line\n"), ...frame(1, "")]);
  for (const cut of [1, 3, 8, 9, 17, 20, bytes.length - 1]) {
    const demux = new Demuxer();
    const text = new TextDecoder().decode(
      new Uint8Array([...demux.push(bytes.slice(0, cut)), ...demux.push(bytes.slice(cut))]),
    );
    deepEqual(text, "out line\nerr line\n", `cut at ${cut}`);
  }
});
