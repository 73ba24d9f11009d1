// The exec handlers against a real dockerd (PLOYZ_DOCKER_SOCKET): a TTY session and a plain one, stdin in,
// stdout and stderr apart, the exit code out, a foreign container refused.
import { deepEqual, equal, match, rejects } from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execHandlers } from "../lib/daemon/mod.ts";
import { openEngine } from "../lib/deploy/mod.ts";
import { type ExecFrame, parseExecFrame, type RpcError } from "../lib/rpc/mod.ts";
import { DOCKER_SOCKET as SOCKET, IMAGE } from "./support/docker.ts";
import { needs } from "./support/needs.ts";

const MACHINE = "m-exec-test";

async function docker(args: string[]): Promise<string> {
  const out = await new Deno.Command("docker", {
    args: ["-H", `unix://${SOCKET}`, ...args],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (!out.success) throw new Error(`docker ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout).trim();
}

async function frames(stream: ReadableStream<Uint8Array>): Promise<ExecFrame[]> {
  const text = await new Response(stream).text();
  return text.trim().split("\n").map(parseExecFrame);
}

function output(list: ExecFrame[], stream: "stdout" | "stderr"): string {
  return list.map((f) =>
    f.type === "output" && f.stream === stream ? Buffer.from(f.data, "base64").toString() : ""
  )
    .join("");
}

Deno.test(needs(["docker", `image:${IMAGE}`], {
  name: "exec handlers run a command in an owned container, with and without a TTY, and pass its exit code",
  async fn() {
    const name = `ployz-exec-test-${crypto.randomUUID().slice(0, 8)}`;
    await docker([
      "run",
      "-d",
      "--name",
      name,
      "--label",
      "ployz.test=exec",
      "--label",
      "ployz.managed=1",
      "--label",
      `ployz.machine=${MACHINE}`,
      IMAGE,
      "sleep",
      "300",
    ]);
    const stopping = new AbortController();
    try {
      const handlers = execHandlers({
        engine: openEngine({ socketPath: SOCKET, machineId: MACHINE }),
        stopping: stopping.signal,
        log: () => {},
      });
      const ctx = { signal: new AbortController().signal } as never;
      const cmd = ["sh", "-c", "tty; cat; echo err >&2; exit 3"];
      for (const tty of [false, true]) {
        const { session } = await handlers.execStart!({ id: name, cmd, tty }, ctx);
        const stream = await handlers.execAttach!({ session }, ctx);
        await handlers.execInput!(
          { session, data: Buffer.from("hello\n").toString("base64"), eof: true },
          ctx,
        );
        const got = await frames(stream);
        deepEqual(got.at(-1), { type: "exit", "exit_code": 3 }, `tty=${tty}`);
        if (tty) {
          // The terminal echoes the input as it arrives, so only the pieces are certain, not their order.
          const text = output(got, "stdout");
          match(text, /\/dev\/pts\/\d+\r\n/, "the command ran on a TTY");
          match(text, /hello\r\n/);
          match(text, /err\r\n/, "a TTY merges stderr into its output");
          equal(output(got, "stderr"), "");
        } else {
          equal(output(got, "stdout"), "not a tty\nhello\n");
          equal(output(got, "stderr"), "err\n");
        }
        await rejects(handlers.execInput!({ session, eof: true }, ctx), /No exec session/);
      }
      const foreign = execHandlers({
        engine: openEngine({ socketPath: SOCKET, machineId: "m-someone-else" }),
        stopping: stopping.signal,
        log: () => {},
      });
      await rejects(foreign.execStart!({ id: name, cmd: ["true"], tty: false }, ctx), (e: RpcError) => {
        equal(e.code, "conflict");
        match(e.message, /does not own it/);
        return true;
      });
    } finally {
      stopping.abort();
      await docker(["rm", "-f", name]).catch(() => "");
    }
  },
}));
