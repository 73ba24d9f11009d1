import { deepEqual } from "node:assert/strict";
import { Demuxer } from "./demux.ts";

function frame(stream: number, text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + payload.length);
  out[0] = stream;
  new DataView(out.buffer).setUint32(4, payload.length);
  out.set(payload, 8);
  return out;
}

Deno.test("Demuxer splits stdout and stderr frames across arbitrary chunk boundaries", () => {
  const bytes = new Uint8Array([...frame(1, "out line\n"), ...frame(2, "err line\n"), ...frame(1, "")]);
  for (const cut of [1, 3, 8, 9, 17, 20, bytes.length - 1]) {
    const demux = new Demuxer();
    const frames = [...demux.push(bytes.slice(0, cut)), ...demux.push(bytes.slice(cut))].map((f) => ({
      stream: f.stream,
      text: new TextDecoder().decode(f.data),
    }));
    deepEqual(frames, [
      { stream: "stdout", text: "out line\n" },
      { stream: "stderr", text: "err line\n" },
      { stream: "stdout", text: "" },
    ], `cut at ${cut}`);
  }
});
