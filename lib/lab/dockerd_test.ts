import assert from "node:assert/strict";
import { dockerdAnswers, dockerdConfigProblem } from "./dockerd.ts";
import type { MachinePlan } from "./plan.ts";

Deno.test("dockerdConfigProblem accepts registry hosts and a bounded attempt count, and names what it refuses", () => {
  assert.equal(
    dockerdConfigProblem({ insecureRegistries: ["192.0.2.1:5000", "registry.lan"], maxDownloadAttempts: 1 }),
    undefined,
  );
  assert.equal(dockerdConfigProblem({}), undefined);
  assert.match(
    dockerdConfigProblem({ insecureRegistries: ["http://x:5000"] }) ?? "",
    /insecure registry "http:\/\/x:5000" is not HOST or HOST:PORT/,
  );
  assert.match(dockerdConfigProblem({ insecureRegistries: ['a", "b'] }) ?? "", /is not HOST/);
  assert.match(dockerdConfigProblem({ maxDownloadAttempts: 0 }) ?? "", /from 1 to 20: got 0/);
  assert.match(dockerdConfigProblem({ maxDownloadAttempts: Number("x") }) ?? "", /got NaN/);
});

Deno.test("dockerdAnswers is true only when the socket answers Docker's /_ping with 200", async () => {
  const dir = await Deno.makeTempDir();
  const machine = { dockerSocket: `${dir}/docker.sock` } as MachinePlan;
  try {
    assert.equal(await dockerdAnswers(machine), false);
    let status = 500;
    const server = Deno.serve(
      { transport: "unix", path: machine.dockerSocket, onListen: () => {} },
      (request) => new Response("OK", { status: new URL(request.url).pathname === "/_ping" ? status : 404 }),
    );
    try {
      assert.equal(await dockerdAnswers(machine), false);
      status = 200;
      assert.equal(await dockerdAnswers(machine), true);
    } finally {
      await server.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
