// `ployz exec PROJECT/SERVICE[/SLOT] [--machine M] -- CMD…`: runs a command in one of a Service's containers on
// whichever Machine holds it, over the same connection as every other call (the SSH bridge and the Entry Machine's
// forwarding): stdin, the terminal's size and its changes go in, output comes out, the exit code is passed through.
import { Buffer } from "node:buffer";
import { CliError, type Command, UsageError } from "../../lib/cli/mod.ts";
import {
  CAPABILITIES,
  type ListContainersResponse,
  type MachineClient,
  MAX_EXEC_INPUT,
  parseExecFrame,
} from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, requireAnyAnswer } from "./cluster_targets.ts";
import { cliError } from "./connect.ts";
import { sharedOptions, stringFlag } from "./flags.ts";

function parseExecTarget(text: string): { project: string; service: string; slot?: string } {
  const [project, service, slot, extra] = text.split("/");
  if (
    !project || !service || extra !== undefined || slot === "" ||
    (slot !== undefined && !/^\d{1,4}$/.test(slot))
  ) {
    throw new CliError(
      "invalid_argument",
      `Invalid target "${text.slice(0, 200)}": expected PROJECT/SERVICE or PROJECT/SERVICE/SLOT`,
      { exitCode: 2 },
    );
  }
  return slot === undefined ? { project, service } : { project, service, slot };
}

function terminalSize(): { cols: number; rows: number } | undefined {
  try {
    const { columns, rows } = Deno.consoleSize();
    return columns > 0 && rows > 0
      ? { cols: Math.min(columns, 10_000), rows: Math.min(rows, 10_000) }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Sends stdin to the session in order, then its end. */
async function pumpStdin(client: MachineClient, session: string, stop: AbortSignal): Promise<void> {
  const reader = Deno.stdin.readable.getReader();
  stop.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || stop.aborted) break;
      for (let at = 0; at < value.length; at += MAX_EXEC_INPUT) {
        const data = Buffer.from(value.subarray(at, at + MAX_EXEC_INPUT)).toString("base64");
        const answer = await client.execInput({ session, data });
        if (!answer.running) return;
      }
    }
    if (!stop.aborted) await client.execInput({ session, eof: true });
  } catch {
    // The session ended first: its exit frame says how.
  }
}

/** `ployz exec`. */
export const execCommand: Command = {
  name: "exec",
  summary: "Run a command in a Service's container, on whichever Machine holds it",
  usage: "PROJECT/SERVICE[/SLOT] [--machine M] [-t | -T] -- CMD [ARG...]",
  description: [
    "Without a slot, the lowest slot; a slot that runs on several Machines (a Global Service) needs --machine.",
    "A TTY is allocated when standard input is a terminal (-t forces one, -T refuses one). Standard input, the",
    "terminal size and its changes are sent; the command's exit code is this command's exit code.",
  ],
  positionals: [2, 4096],
  options: {
    ...sharedOptions("machine"),
    tty: { type: "boolean", short: "t" },
    "no-tty": { type: "boolean", short: "T" },
  },
  async run({ values, positionals }): Promise<number> {
    const target = parseExecTarget(positionals[0]);
    const cmd = positionals.slice(1);
    if (values.tty === true && values["no-tty"] === true) throw new UsageError(`Give "-t" or "-T", not both`);
    const tty = values.tty === true || (values["no-tty"] !== true && Deno.stdin.isTerminal());
    const machine = stringFlag(values, "machine");
    using targets = await clusterTargets({ machine });
    const listed = await askAll<ListContainersResponse>(
      targets,
      (client, _m, signal) =>
        client.listContainers({ project: target.project, service: target.service }, { signal }),
    );
    requireAnyAnswer(listed, `find "${target.project}/${target.service}"`);
    const running = listed.successes.flatMap((s) =>
      s.value.containers.filter((c) => c.slot !== "hook" && c.state === "running").map((c) => ({
        machine: s.machine,
        c,
      }))
    );
    const slots = [...new Set(running.map((r) => Number(r.c.slot)))].sort((a, b) => a - b);
    const slot = target.slot !== undefined ? Number(target.slot) : slots[0];
    const chosen = running.filter((r) => Number(r.c.slot) === slot);
    if (chosen.length === 0) {
      throw new CliError(
        "not_found",
        `No running container of "${target.project}/${target.service}"${
          target.slot === undefined ? "" : ` slot ${target.slot}`
        } on the Machines that answered${machine === undefined ? "" : ` (--machine "${machine}")`}`,
      );
    }
    if (chosen.length > 1) {
      throw new CliError(
        "ambiguous",
        `Slot ${slot} of "${target.project}/${target.service}" runs on ${
          chosen.map((r) => `"${r.machine.name}"`).join(", ")
        }: name one with --machine`,
      );
    }
    const { machine: where, c } = chosen[0];
    const client = targets.targets.find((t) => t.id === where.id && "client" in t) as {
      client: MachineClient;
    };
    const api = client.client;
    let exitCode: number | null = null;
    const stop = new AbortController();
    const raw = tty && Deno.stdin.isTerminal();
    const onResize = (): void => {
      const size = terminalSize();
      if (size !== undefined) api.execInput({ session, ...size }).catch(() => {});
    };
    let session = "";
    try {
      await api.requireCapability(CAPABILITIES.execStart);
      const size = tty ? terminalSize() : undefined;
      session = (await api.execStart({ id: c.id, cmd, tty, ...size })).session;
      const output = await api.execAttach({ session });
      if (raw) Deno.stdin.setRaw(true);
      if (tty && Deno.build.os !== "windows") Deno.addSignalListener("SIGWINCH", onResize);
      const input = pumpStdin(api, session, stop.signal);
      let buffered = "";
      for await (const text of output.pipeThrough(new TextDecoderStream())) {
        buffered += text;
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const line of lines) {
          if (line === "") continue;
          const frame = parseExecFrame(line);
          if (frame.type === "exit") {
            exitCode = frame.exit_code;
            continue;
          }
          const bytes = new Uint8Array(Buffer.from(frame.data, "base64"));
          const sink = frame.stream === "stderr" ? Deno.stderr : Deno.stdout;
          for (let at = 0; at < bytes.length;) at += sink.writeSync(bytes.subarray(at));
        }
      }
      stop.abort();
      void input;
    } catch (error) {
      throw cliError(error);
    } finally {
      stop.abort();
      if (raw) Deno.stdin.setRaw(false);
      if (tty && Deno.build.os !== "windows") Deno.removeSignalListener("SIGWINCH", onResize);
      // A read of the terminal cannot be cancelled; the process ends once the command did (cmd/ployz.ts).
    }
    if (exitCode === null) {
      throw new CliError(
        "unavailable",
        `The command in "${c.name}" on "${where.name}" ended without an exit code`,
      );
    }
    return exitCode;
  },
};
