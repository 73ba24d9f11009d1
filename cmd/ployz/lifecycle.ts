// Shared by `ployz start` and `ployz stop`: act on every container of a Service on every Machine (or `--machine M`)
// and report each result; a Machine that did not answer is named, and the command exits 1.
import { CliError, type Command, type CommandContext } from "../../lib/cli/mod.ts";
import { drainText, errorBody, leftDrain } from "../../lib/deploy/mod.ts";
import type { ListContainersResponse, MachineClient } from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { jsonLine, openConfig, parseTarget } from "./connect.ts";
import { sharedOptions, stringFlag } from "./flags.ts";
import { receiptBook, requestKey } from "./receipts.ts";

/** A leg's receipt: `sent` until its answer is known. */
interface LegReceipt {
  status: "sent" | "succeeded" | "failed";
  state?: string;
  error?: string;
}

/** `ployz start` or `ployz stop`, summed up by `summary`. */
export function lifecycleCommand(action: "start" | "stop", summary: string): Command {
  return {
    name: action,
    summary,
    usage: "PROJECT/SERVICE [--machine M] [--request-key KEY] [--json]",
    positionals: [1, 1],
    options: sharedOptions("json", "machine", "request-key"),
    run: (ctx) => lifecycle(ctx, action),
  };
}

/** Starts or stops each container of `PROJECT/SERVICE`; a failure of one does not stop the others. */
export async function lifecycle(ctx: CommandContext, action: "start" | "stop"): Promise<number> {
  const { project, service } = parseTarget(ctx.positionals[0], true);
  const json = ctx.values.json === true;
  using targets = await clusterTargets({ machine: stringFlag(ctx.values, "machine") });
  const listed = await askAll<ListContainersResponse>(
    targets,
    (client, _m, signal) => client.listContainers({ project, service }, { signal }),
  );
  requireAnyAnswer(listed, `list "${project}/${service}"`);
  const work = listed.successes.flatMap((s) =>
    s.value.containers.filter((c) => c.slot !== "hook").map((c) => ({ machine: s.machine, c }))
  );
  if (work.length === 0) {
    throw new CliError(
      "not_found",
      `Service "${project}/${service}" has no containers on the Machines that answered`,
    );
  }
  const names = new Map(targets.targets.map((t) => [t.id, t.name]));
  const clients = new Map(targets.targets.flatMap((t) => "client" in t ? [[t.id, t.client] as const] : []));
  // A receipt per container leg under the request key: a re-run with the same key skips the legs already done and
  // resends the rest, which is safe because each names the state it wants (running or stopped).
  const key = requestKey(ctx.values["request-key"], `${action}-${project}-${service}`);
  using config = openConfig();
  const receipts = receiptBook<LegReceipt>(config, key);
  let failures = 0;
  for (const { machine, c } of work) {
    const client = clients.get(machine.id)!;
    const leg = `${action} ${c.name}@${machine.name}`;
    if (receipts.load(leg)?.status === "succeeded") {
      if (json) {
        ctx.io.out(
          jsonLine({ id: c.id, name: c.name, "machine_name": machine.name, ok: true, done: "earlier" }),
        );
      } else {ctx.io.out(
          `Already ${
            action === "start" ? "started" : "stopped"
          } ${c.name} on "${machine.name}" by an earlier run of this request\n`,
        );}
      continue;
    }
    receipts.save(leg, { status: "sent" });
    try {
      // A stop takes the container out of every Machine's proxies first (bounded patience, then stops anyway).
      const left = action === "stop" ? await leaveFirst(client, c.id) : undefined;
      const { container } = action === "start"
        ? await client.startContainer({ id: c.id })
        : await client.stopContainer({ id: c.id });
      receipts.save(leg, { status: "succeeded", state: container.state });
      if (json) {
        ctx.io.out(
          jsonLine({
            id: c.id,
            name: c.name,
            "machine_name": machine.name,
            ok: true,
            state: container.state,
            ...(left === undefined ? {} : { left }),
          }),
        );
      } else {
        ctx.io.out(
          `${action === "start" ? "Started" : "Stopped"} ${c.name} on "${machine.name}" (${container.state})${
            left === undefined ? "" : `; ${leftText(left, names)}`
          }\n`,
        );
      }
    } catch (error) {
      failures++;
      const body = errorBody(error);
      receipts.save(leg, { status: "failed", error: `${body.code}: ${body.message}` });
      if (json) {
        ctx.io.out(
          jsonLine({ id: c.id, name: c.name, "machine_name": machine.name, ok: false, error: body }),
        );
      } else {ctx.io.out(
          `Failed to ${action} ${c.name} on "${machine.name}": error[${body.code}]: ${body.message}\n`,
        );}
    }
  }
  if (!json) ctx.io.out(`request key: ${key}\n`);
  const partial = partialLines(listed);
  for (const line of partial) ctx.io.err(`${line}\n`);
  return failures === 0 && partial.length === 0 ? 0 : 1;
}

/** How long a stop waits for every Machine not Down to ack that the container left its proxies. */
const LEAVE_PATIENCE_MS = 10_000;

type Left = Awaited<ReturnType<MachineClient["leaveContainer"]>> | { skipped: string };

async function leaveFirst(client: MachineClient, id: string): Promise<Left> {
  try {
    return await client.leaveContainer({ id, "wait_ms": LEAVE_PATIENCE_MS });
  } catch (error) {
    const body = errorBody(error);
    if (body.code !== "unsupported") throw error;
    return { skipped: body.message };
  }
}

function leftText(left: Left, names: ReadonlyMap<string, string>): string {
  if ("skipped" in left) return `not taken out of the proxies first: ${left.skipped}`;
  if (!left.live) return "it was not running";
  const drained = drainText(leftDrain(left));
  if (left.missing.length === 0) {
    return `left every proxy first (${left.acked.length} Machine${
      left.acked.length === 1 ? "" : "s"
    } acked in ${left.waited_ms} ms)${drained}`;
  }
  return `stopped after ${left.waited_ms} ms without the proxy ack of ${
    left.missing.map((m) => names.get(m) ?? m).join(", ")
  }${drained}`;
}
