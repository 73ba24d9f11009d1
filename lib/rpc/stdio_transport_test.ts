import { deepEqual, equal, ok } from "node:assert/strict";
import { CAPABILITIES } from "./catalog.ts";
import { connectMachine } from "./client.ts";
import { RpcError } from "./errors.ts";
import { stdioFetch } from "./stdio_transport.ts";
import { dialStdio, startTestDaemon } from "./test_daemon.ts";

Deno.test("stdioFetch carries Machine RPC through `ployzd dial-stdio`: JSON, a chunked stream, a refusal", async () => {
  await using daemon = await startTestDaemon({
    tailLogs: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 3; i++) controller.enqueue(new TextEncoder().encode(`line ${i}\n`));
            controller.close();
          },
        }),
      ),
  });
  // The bridge the SSH path runs on the far side, here run locally instead of through ssh.
  const client = connectMachine({ label: "dial-stdio", fetch: stdioFetch(dialStdio(daemon.dir)) });
  try {
    const contract = await client.describeContract();
    equal(contract.machine_name, "one");
    const logs = await new Response(await client.tailLogs({ selector: {} })).text();
    equal(logs, "line 0\nline 1\nline 2\n");
    const refused = await client.inspectImage({ ref: "busybox" }).catch((e) => e);
    ok(refused instanceof RpcError);
    equal(refused.code, "unsupported");
    deepEqual(refused.details.capability, CAPABILITIES.inspectImage);
  } finally {
    client.close();
  }
});

Deno.test("stdioFetch reports a bridge that answers nothing as unavailable, naming it", async () => {
  const client = connectMachine({
    label: "nowhere",
    fetch: stdioFetch({
      cmd: "sh",
      args: ["-c", "echo 'ssh: connect to host nowhere: No route to host' >&2; exit 255"],
      label: "ssh nowhere",
    }),
  });
  const error = await client.describeContract().catch((e) => e);
  ok(error instanceof RpcError);
  equal(error.code, "unavailable");
  equal(
    error.message,
    'Cannot reach the Machine RPC socket "nowhere": Cannot reach the Machine through "ssh nowhere": ssh: connect to host nowhere: No route to host',
  );
});
