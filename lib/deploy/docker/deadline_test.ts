import assert from "node:assert/strict";
import { DockerError } from "./errors.ts";
import { openEngine } from "./engine.ts";
import { withDeadline } from "./deadline.ts";

Deno.test("a Docker that accepts but never answers becomes unavailable at the deadline", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/hung.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const engine = openEngine({
      socketPath: path,
      machineId: "m1",
      deadlines: { inspectMs: 200, stopMarginMs: 300 },
    });
    const started = Date.now();
    await assert.rejects(engine.inspectContainer("web"), (e) => {
      assert.ok(e instanceof DockerError);
      assert.equal(e.code, "unavailable");
      assert.equal(e.message, `Cannot inspect container "web": Docker did not answer within 200 ms`);
      return true;
    });
    assert.ok(Date.now() - started < 2_000);
    assert.ok(held.length >= 1, "the request reached the socket");
    // The missed deadline aborted the request: the client closed its end, so the server reads EOF.
    const buffer = new Uint8Array(4096);
    const eof = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 1_000);
      (async () => {
        try {
          while (await held[0].read(buffer) !== null) { /* the request bytes */ }
        } catch {
          // a reset also means the client let go
        }
        clearTimeout(timer);
        resolve(true);
      })();
    });
    assert.ok(eof, "the aborted request kept its connection open");
  } finally {
    listener.close();
    await accepting;
    for (const conn of held) {
      try {
        conn.close();
      } catch {
        // already closed by the aborted client
      }
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a socket nobody listens on is unavailable at once", async () => {
  const engine = openEngine({ socketPath: "/nonexistent/ployz/docker.sock", machineId: "m1" });
  await assert.rejects(engine.ping(), (e) => e instanceof DockerError && e.code === "unavailable");
});

Deno.test("withDeadline passes results through and clears its timer", async () => {
  assert.equal(await withDeadline("noop", 1_000, undefined, () => Promise.resolve(7)), 7);
  const controller = new AbortController();
  const pending = withDeadline(
    "wait",
    undefined,
    controller.signal,
    (signal) =>
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
  );
  controller.abort(new Error("cancelled by caller"));
  await assert.rejects(pending, /cancelled by caller/);
});
