import { join } from "node:path";
import { CliError, type Command } from "../../lib/cli/mod.ts";
import { DNS_EXIT_UNSUPPORTED_SPEC, probeDnsSpec, runDns } from "../../lib/dns/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";

/** Exit code when the spec's format is newer than this build: the port was handed back. */
export const EXIT_UNSUPPORTED_SPEC = DNS_EXIT_UNSUPPORTED_SPEC;

/**
 * `ployzd dns`: Internal DNS, serving `$PLOYZ_RUN_DIR/dns.json` until SIGTERM. `--probe` only checks that this
 * binary can serve the current spec.
 */
export const dns: Command = {
  name: "dns",
  summary: "Serve Internal DNS from /run/ployz/dns.json",
  usage: "[--probe]",
  description: [
    "Answers nothing until the spec first loads, reloads it on every change, and keeps the last good spec when a",
    "new one does not load. A spec whose format this build does not know closes the sockets and exits with",
    `status ${EXIT_UNSUPPORTED_SPEC}. On SIGTERM it keeps answering until queries stop arriving (a successor bound`,
    "the same addresses), then exits. --probe exits 0 only when this binary can serve the current spec.",
    "The spec is $PLOYZ_RUN_DIR/dns.json (default /run/ployz/dns.json).",
  ],
  options: { probe: { type: "boolean" } },
  async run({ values, io }): Promise<number> {
    const specPath = join(layoutFromEnv((k) => Deno.env.get(k)).runDir, "dns.json");
    if (values.probe) {
      const result = await probeDnsSpec(specPath);
      if (!result.ok) throw new CliError(result.code, result.reason);
      io.out(`${result.summary}\n`);
      return 0;
    }
    if (typeof Deno.listenDatagram !== "function") {
      throw new CliError(
        "unsupported",
        "Internal DNS needs Deno.listenDatagram: run deno with --unstable-net",
      );
    }
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    Deno.addSignalListener("SIGTERM", onSignal);
    Deno.addSignalListener("SIGINT", onSignal);
    try {
      const exit = await runDns({
        specPath,
        signal: stop.signal,
        log: (line) => io.err(`ployzd dns: ${line}\n`),
      });
      return exit.kind === "unsupported" ? EXIT_UNSUPPORTED_SPEC : 0;
    } finally {
      Deno.removeSignalListener("SIGTERM", onSignal);
      Deno.removeSignalListener("SIGINT", onSignal);
    }
  },
};
