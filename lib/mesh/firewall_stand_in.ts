/**
 * A stand-in for `iptables` and `ip6tables` for unit tests of code that checks the mesh firewall: it keeps the
 * tables in memory, answers `-S` (a chain or a whole table), `-N`, `-F`, `-A`, `-I`, `-C` and `-D` as they do, and
 * counts the commands that read and those that write. The filter chains INPUT, FORWARD and DOCKER-USER (IPv4),
 * INPUT (IPv6) and the nat chain POSTROUTING exist from the start, empty.
 *
 * @module
 */

import type { CommandResult, CommandRunner } from "./runner.ts";

/** The stand-in's runner, its command counts and its chains (`"<tool> <table> <chain>"` → `-A` lines). */
export interface FirewallStandIn {
  /** Runs `iptables`/`ip6tables` commands against the tables in memory. */
  runner: CommandRunner;
  /** Commands run so far that only read (`-S`, `-C`) and that wrote. */
  counts: { reads: number; writes: number };
  /** The chains, as `iptables -S` would list each. */
  chains: Map<string, string[]>;
}

/** A fresh stand-in; see the module comment. */
export function firewallStandIn(): FirewallStandIn {
  const chains = new Map<string, string[]>();
  for (
    const name of [
      "iptables filter INPUT",
      "iptables filter FORWARD",
      "iptables filter DOCKER-USER",
      "iptables nat POSTROUTING",
      "ip6tables filter INPUT",
    ]
  ) chains.set(name, []);
  const counts = { reads: 0, writes: 0 };
  const ok = (stdout = ""): Promise<CommandResult> => Promise.resolve({ code: 0, stdout, stderr: "" });
  const fail = (): Promise<CommandResult> => Promise.resolve({ code: 1, stdout: "", stderr: "no such rule" });
  const runner: CommandRunner = {
    where: "stand-in",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      const rest = args.filter((a) => a !== "-w");
      const table = rest[0] === "-t" ? rest[1] : "filter";
      const [verb, chain, ...spec] = rest[0] === "-t" ? rest.slice(2) : rest;
      const key = `${cmd} ${table} ${chain}`;
      const rules = chains.get(key);
      const line = `-A ${chain} ${spec.join(" ")}`;
      if (verb === "-S") {
        counts.reads++;
        const listed = [...chains].filter(([k]) =>
          chain === undefined ? k.startsWith(`${cmd} ${table} `) : k === key
        );
        if (listed.length === 0) return fail();
        return ok(listed.flatMap(([k, r]) => [`-N ${k.split(" ")[2]}`, ...r]).join("\n"));
      }
      if (verb === "-C") {
        counts.reads++;
        return rules?.includes(line) ? ok() : fail();
      }
      counts.writes++;
      if (verb === "-N") chains.set(key, []);
      else if (rules === undefined) return fail();
      else if (verb === "-F") rules.length = 0;
      else if (verb === "-A") rules.push(line);
      else if (verb === "-I") rules.unshift(`-A ${chain} ${spec.slice(1).join(" ")}`);
      else if (verb === "-D") {
        const at = rules.indexOf(line);
        if (at < 0) return fail();
        rules.splice(at, 1);
      }
      return ok();
    },
  };
  return { runner, counts, chains };
}
