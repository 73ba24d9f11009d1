// A call that fails says whether its request may have gone out: a refused connect never did, a connection that
// closed before the answer may have acted (the deploy executor reports that as an unknown outcome).
import assert from "node:assert/strict";
import { join } from "node:path";
import { connectMachine } from "./client.ts";
import { RpcError } from "./errors.ts";
import { tempDir } from "../util/testing/mod.ts";

async function failure(call: () => Promise<unknown>): Promise<RpcError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error("the call succeeded");
}

Deno.test("a refused connect is no_answer false; a connection dropped after the request is no_answer true", async () => {
  await using tmp = await tempDir("ployz-no-answer-");
  const dir = tmp.path;
  using refused = connectMachine({ socketPath: join(dir, "absent.sock") });
  const before = await failure(() => refused.describeContract());
  assert.equal(before.code, "unavailable");
  assert.equal(before.details["no_answer"], false);

  const path = join(dir, "drop.sock");
  const listener = Deno.listen({ transport: "unix", path });
  const served = (async () => {
    for await (const conn of listener) {
      await conn.read(new Uint8Array(64 * 1024));
      conn.close();
    }
  })();
  using dropped = connectMachine({ socketPath: path });
  const after = await failure(() => dropped.describeContract());
  assert.equal(after.code, "unavailable");
  assert.equal(after.details["no_answer"], true);
  listener.close();
  await served.catch(() => {});
});
