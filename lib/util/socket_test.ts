import assert from "node:assert/strict";
import { join } from "node:path";
import { socketAnswers } from "./socket.ts";

Deno.test("socketAnswers is true while a listener accepts and false for a path nothing serves", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "s.sock");
  try {
    assert.equal(await socketAnswers(path), false);
    const listener = Deno.listen({ transport: "unix", path });
    const accepting = (async () => {
      for await (const conn of listener) conn.close();
    })();
    assert.equal(await socketAnswers(path), true);
    listener.close();
    await accepting;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
