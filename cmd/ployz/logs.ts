// `ployz logs PROJECT[/SERVICE]`: container output from every Machine that ran the Service, merged in time order.
import { CliError } from "../../lib/cli/mod.ts";
import type { Command, Io } from "../../lib/cli/mod.ts";
import {
  type LogSelectorWire,
  type MachineClient,
  type MachineRef,
  MAX_LOG_LINES,
  type PartialResult,
} from "../../lib/rpc/mod.ts";
import { askAll, clusterTargets, partialJson, partialLines, requireAnyAnswer } from "./cluster_targets.ts";
import { cliError, jsonLine, parseTarget } from "./connect.ts";
import {
  lineJson,
  lineKey,
  mergeHistory,
  parseWhen as parseWhenOf,
  readTailFrames as readFrames,
  renderLine,
} from "../../lib/operator/reach/mod.ts";
import { messageOf } from "../../lib/util/mod.ts";
import { sharedOptions } from "./flags.ts";

/** `--since`/`--until` parsed; a bad value is a usage error (exit 2). */
function parseWhen(option: string, text: string, nowMs: number): string {
  try {
    return parseWhenOf(option, text, nowMs);
  } catch (error) {
    const e = cliError(error);
    throw new CliError(e.code, e.message, { details: e.details, exitCode: 2 });
  }
}

const DEFAULT_SINCE = "1h";
const DEFAULT_TAIL = 1000;
// A tail starts this far before the history's end, so lines stored late are not lost; repeats are dropped.
const FOLLOW_OVERLAP_MS = 10_000;
const FOLLOW_START_MS = 15_000;

function parseTail(value: unknown): number {
  if (value === undefined) return DEFAULT_TAIL;
  const n = Number(value);
  if (typeof value !== "string" || !Number.isInteger(n) || n < 1 || n > MAX_LOG_LINES) {
    throw new CliError(
      "invalid_argument",
      `Invalid value "${String(value)}" for "--tail": expected a whole number from 1 to ${MAX_LOG_LINES}`,
      { exitCode: 2 },
    );
  }
  return n;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** `ployz logs`. */
export const logsCommand: Command = {
  name: "logs",
  summary: "Show a Service's output from every Machine that ran it",
  usage:
    "PROJECT[/SERVICE] [--since 1h] [--until T] [--grep TEXT] [-f] [--machine M] [--deployment D] [--container ID] [-n N] [--json]",
  description: [
    "Asks every Machine the local Machine knows of for the output its Observe Store kept, including output of",
    "containers that no longer exist, and merges the lines in time order with the Machine named on each.",
    "--since and --until take a duration before now (90s, 30m, 2h, 7d) or an RFC 3339 time; -n keeps the newest",
    "N lines (default 1000). --grep keeps lines containing TEXT (plain, case-sensitive). --deployment and",
    "--container (an id or unique prefix) tell one Deployment's or container's output from another's.",
    "-f then prints new lines as each Machine stores them, in arrival order, until interrupted.",
    "A Partial Result: Machines that did not answer, and Machines not asked, are listed on standard error (in",
    "--json, under failures and omissions). The exit code is 0 when at least one Machine answered, 1 when none did.",
  ],
  positionals: [1, 1],
  options: {
    since: { type: "string" },
    until: { type: "string" },
    grep: { type: "string" },
    follow: { type: "boolean", short: "f" },
    ...sharedOptions("machine"),
    deployment: { type: "string" },
    container: { type: "string" },
    tail: { type: "string", short: "n" },
    ...sharedOptions("json"),
  },
  async run({ values, positionals, io }): Promise<number> {
    const { project, service } = parseTarget(positionals[0], false);
    const limit = parseTail(values.tail);
    const now = Date.now();
    const since = parseWhen("--since", text(values.since) ?? DEFAULT_SINCE, now);
    const untilText = text(values.until);
    const until = untilText === undefined ? undefined : parseWhen("--until", untilText, now);
    const follow = values.follow === true;
    if (follow && until !== undefined) {
      throw new CliError("invalid_argument", 'Cannot combine "--follow" with "--until"', { exitCode: 2 });
    }
    if (until !== undefined && BigInt(until) <= BigInt(since)) {
      throw new CliError("invalid_argument", `Invalid window: "--until" is not after "--since"`, {
        exitCode: 2,
      });
    }
    const selector: LogSelectorWire = { project };
    if (service !== undefined) selector.service = service;
    if (text(values.deployment) !== undefined) selector.deployment = text(values.deployment);
    if (text(values.container) !== undefined) selector.container = text(values.container);
    const grep = text(values.grep);
    const json = values.json === true;

    using targets = await clusterTargets({ machine: text(values.machine) });
    const result = await askAll(
      targets,
      (client, _m, signal) => client.logHistory({ selector, since, until, grep, limit }, { signal }),
    );
    const merged = mergeHistory(result, limit);
    const what = `read the logs of "${positionals[0]}"`;
    if (json && !follow) {
      requireAnyAnswer(result, what);
      io.out(jsonLine({
        lines: merged.lines.map(lineJson),
        truncated: merged.truncated,
        notes: merged.notes,
        ...partialJson(result),
      }));
      return 0;
    }
    for (const entry of merged.lines) {
      io.out(json ? jsonLine({ type: "line", ...lineJson(entry) }) : renderLine(entry));
    }
    if (!follow) {
      requireAnyAnswer(result, what);
      report(io, result, merged.notes);
      if (merged.truncated) {
        io.err(`Older lines left out: showing the newest ${limit}; narrow "--since" or raise "--tail"\n`);
      }
      return 0;
    }
    report(io, result, merged.notes);
    const seen = new Set(merged.lines.map((l) => lineKey(l.line)));
    const tailSince = ((BigInt(now) - BigInt(FOLLOW_OVERLAP_MS)) * 1_000_000n).toString();
    return await followAll(targets.targets.flatMap((t) => "client" in t ? [t] : []), {
      selector,
      since: tailSince,
      grep,
      seen,
      io,
      json,
    });
  },
};

function report(io: Io, result: PartialResult<unknown>, notes: string[]): void {
  for (const note of notes) io.err(`${note}\n`);
  for (const line of partialLines(result)) io.err(`${line}\n`);
}

interface FollowOptions {
  selector: LogSelectorWire;
  since: string;
  grep?: string;
  seen: Set<string>;
  io: Io;
  json: boolean;
}

/** Follows every Machine's TailLogs until each stream ends; exit 0 if any Machine streamed. */
async function followAll(
  targets: (MachineRef & { client: MachineClient })[],
  options: FollowOptions,
): Promise<number> {
  const { io } = options;
  let streamed = 0;
  await Promise.all(targets.map(async (target) => {
    const machine = { id: target.id, name: target.name };
    let stream: ReadableStream<Uint8Array>;
    // Bounds only the wait for the stream to start; the stream itself runs until interrupted.
    const opening = new AbortController();
    const timer = setTimeout(
      () => opening.abort(new Error(`did not answer within ${FOLLOW_START_MS} ms`)),
      FOLLOW_START_MS,
    );
    try {
      stream = await target.client.tailLogs({
        selector: options.selector,
        since: options.since,
        backlog: MAX_LOG_LINES,
        grep: options.grep,
        heartbeat: true,
      }, { signal: opening.signal });
    } catch (error) {
      io.err(`Machine "${machine.name}" (${machine.id}) cannot be followed: ${messageOf(error)}\n`);
      return;
    } finally {
      clearTimeout(timer);
    }
    streamed++;
    try {
      for await (const frame of readFrames(stream)) {
        if (frame.type === "heartbeat") continue;
        if (frame.type === "note") {
          io.err(`Machine "${machine.name}": ${frame.message}\n`);
          continue;
        }
        // Only the overlap with the history can repeat a line; a tail itself never does.
        if (options.seen.has(lineKey(frame))) continue;
        const { type: _type, ...line } = frame;
        const entry = { machine, line };
        io.out(options.json ? jsonLine({ type: "line", ...lineJson(entry) }) : renderLine(entry));
      }
      io.err(`Machine "${machine.name}": the tail ended\n`);
    } catch (error) {
      io.err(`Machine "${machine.name}" stopped streaming: ${messageOf(error)}\n`);
    }
  }));
  if (streamed === 0) throw new CliError("unavailable", "Cannot follow the logs: no Machine answered");
  return 0;
}
