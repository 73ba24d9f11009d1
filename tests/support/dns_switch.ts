// Watching Internal DNS move between its systemd units in a test Machine: a dig loop from inside the Machine's
// network namespace, when the switch happened (systemd's journal), and which slots are active.
import type { SystemdMachine } from "./installer.ts";

/**
 * What a dig loop saw: queries sent, answered with the expected address, the failures' first lines, and when
 * its first and last queries ended (epoch ms), to tell which window it covered.
 */
export interface DigTally {
  sent: number;
  answered: number;
  lost: string[];
  firstMs?: number;
  lastMs?: number;
}

/**
 * Runs real `dig` in the network namespace of process `pid`, from address `client` to `server`, one query at a
 * time with a 1 s timeout and a single try (what a stub resolver's first attempt sees), each of `names` in turn
 * (a name and the address it must answer), at about 16 q/s, until stopped. A refusal (ICMP port unreachable), a
 * timeout or a wrong answer counts as lost.
 */
export function digLoop(
  pid: string,
  server: string,
  client: string,
  names: Record<string, string>,
  stopFile: string,
): { stop(): Promise<DigTally> } {
  const queries = Object.keys(names).join(" ");
  const script = `while [ ! -e '${stopFile}' ]; do for n in ${queries}; do ` +
    `a=$(dig -b ${client} @${server} +tries=1 +time=1 +short "$n" A 2>&1 | tr '\\n' ' '); ` +
    `echo "$(date +%s%3N) $n $a"; done; sleep 0.1; done`;
  const child = new Deno.Command("nsenter", {
    args: [`--net=/proc/${pid}/ns/net`, "sh", "-c", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  return {
    async stop(): Promise<DigTally> {
      await Deno.writeTextFile(stopFile, "");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const out = await output.finally(() => clearTimeout(timer));
      const tally: DigTally = { sent: 0, answered: 0, lost: [] };
      for (const line of new TextDecoder().decode(out.stdout).split("\n").filter((l) => l !== "")) {
        tally.sent++;
        const [at, name, ...answer] = line.trim().split(" ");
        tally.firstMs ??= Number(at);
        tally.lastMs = Number(at);
        if (answer.join(" ") === names[name]) tally.answered++;
        else tally.lost.push(`${name} ${answer.join(" ")}`);
      }
      return tally;
    },
  };
}

/**
 * When a DNS switch happened (epoch ms), from systemd's own journal lines: the new unit's "Starting", its
 * "Serving spec" line, and the old unit's "Stopped" (or "Deactivated"); `undefined` when one is missing.
 */
export async function switchTimes(
  machine: SystemdMachine,
  next: string,
  old: string,
): Promise<SwitchTimes | undefined> {
  const lines = (await machine.exec(`journalctl -u ${next} -u ${old} --no-pager -o short-unix`)).stdout.split(
    "\n",
  );
  const at = (pattern: RegExp): number | undefined => {
    const line = lines.findLast((l) => pattern.test(l));
    return line === undefined ? undefined : Number(line.split(" ")[0]) * 1000;
  };
  const started = at(new RegExp(`Starting ${next.replace(/[@.]/g, "\\$&")}`));
  const serving = at(/ployzd dns: Serving spec/);
  const stopped = at(
    new RegExp(
      `(Stopped|Deactivated successfully).*${old.replace(/[@.]/g, "\\$&")}|${
        old.replace(/[@.]/g, "\\$&")
      }: Deactivated`,
    ),
  );
  if (started === undefined || serving === undefined || stopped === undefined) return undefined;
  return { started, serving, stopped };
}

/** When a DNS switch's steps happened, in epoch ms. */
export interface SwitchTimes {
  started: number;
  serving: number;
  stopped: number;
}

/** How long a DNS switch took, as a line. */
export function switchFigures(times: SwitchTimes | undefined): string {
  if (times === undefined) return "switch timing not in the journal";
  const { started, serving, stopped } = times;
  return `new unit starting → serving ${Math.round(serving - started)} ms, → old unit stopped ${
    Math.round(stopped - started)
  } ms`;
}

/** The DNS slots' ActiveStates inside the Machine, e.g. `{a: "active", b: "inactive"}`. */
export async function dnsSlots(machine: SystemdMachine): Promise<Record<string, string>> {
  const states = (await machine.ok(
    "systemctl show --property=ActiveState --value ployz-dns@a.service ployz-dns@b.service ployz-dns.service",
  )).split("\n").filter((l) => l !== "");
  return { a: states[0], b: states[1], legacy: states[2] };
}
