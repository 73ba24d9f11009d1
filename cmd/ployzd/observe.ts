import { CliError, type Command } from "../../lib/cli/mod.ts";
import { budgetFromEnv, ObserveError, runObserve } from "../../lib/observe/mod.ts";
import { layoutFromEnv } from "../../lib/permissions/mod.ts";

/**
 * `ployzd observe`: the Observe Store. Copies the output of this Machine's Ployz containers from Docker's local
 * log files into `$PLOYZ_DATA_DIR/observe/observe.db` and answers history queries on `$PLOYZ_RUN_DIR/observe.sock`,
 * until SIGTERM or SIGINT.
 */
export const observe: Command = {
  name: "observe",
  summary: "Run the Observe Store: this Machine's logs and metrics",
  description: [
    "Reads $PLOYZ_DOCKER_ROOT/containers/*/config.v2.json and local-logs (default /var/lib/docker); never uses",
    "the Docker API. Disk budget: PLOYZ_OBSERVE_MAX_BYTES (default 512m) and PLOYZ_OBSERVE_MIN_FREE_BYTES",
    "(default the larger of 1 GiB and 5 % of the file system); the oldest hour goes first.",
  ],
  async run({ io }): Promise<number> {
    const get = (key: string): string | undefined => Deno.env.get(key);
    const layout = layoutFromEnv(get);
    let budget;
    try {
      budget = budgetFromEnv(get);
    } catch (error) {
      if (error instanceof ObserveError) throw new CliError("invalid_argument", error.message);
      throw error;
    }
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
    for (const s of signals) Deno.addSignalListener(s, onSignal);
    try {
      await runObserve({
        dataDir: layout.dataDir,
        runDir: layout.runDir,
        dockerRoot: layout.dockerRoot,
        budget,
        // Deno refuses narrow reads of /proc and /sys themselves: the unit may bind-mount them elsewhere.
        procRoot: get("PLOYZ_OBSERVE_PROC_ROOT") || undefined,
        cgroupRoot: get("PLOYZ_OBSERVE_CGROUP_ROOT") || undefined,
        signal: stop.signal,
        log: (line) => io.err(`${line}\n`),
        onReady: () => io.err(`Observe Store ready on "${layout.runDir}/observe.sock"\n`),
      });
    } catch (error) {
      if (error instanceof ObserveError) {
        throw new CliError(error.code, error.message, { details: error.details });
      }
      throw error;
    } finally {
      for (const s of signals) Deno.removeSignalListener(s, onSignal);
    }
    return 0;
  },
};
