/**
 * The Machine's `ployz` network, checked at every start of a participating daemon: made again when it is gone (the
 * way out of an old network is to remove it and restart ployzd), and reported when Docker masquerades it (a network
 * made before Ployz turned Docker's masquerade off for it, which breaks cross-Machine container traffic under
 * Docker's default networking). The report is logged and stays in the Machine's mesh error (`ployz machine ls`)
 * until the network is fixed; nothing is changed behind the operator's back.
 *
 * @module
 */

import { DockerError, type Engine, type NetworkSpec } from "../deploy/machine/mod.ts";
import { messageOf, sleep } from "../util/mod.ts";

/** What {@link watchMachineNetwork} needs. */
export interface MachineNetworkOptions {
  /** The Machine's engine. */
  engine: Engine;
  /** The Machine's network as it must be. */
  spec: NetworkSpec;
  /** One line per notable event. */
  log: (line: string) => void;
  /** Ends the retries. */
  signal: AbortSignal;
  /** Retry period while Docker cannot be asked; default 10 s. */
  retryMs?: number;
}

/** Checks the network until Docker answers once; resolves to the problem to report, if any. */
export async function watchMachineNetwork(options: MachineNetworkOptions): Promise<string | undefined> {
  const { spec } = options;
  let reported = "";
  while (!options.signal.aborted) {
    try {
      const info = await options.engine.ensureNetwork(spec, options.signal);
      if (info.created) options.log(`network "${spec.name}" was missing: created it for ${spec.subnet}`);
      if (info.masqueradeProblem !== undefined) options.log(`error[conflict]: ${info.masqueradeProblem}`);
      return info.masqueradeProblem;
    } catch (error) {
      // A network that is not the Machine's (another owner, driver or subnet) does not mend by asking again.
      if (error instanceof DockerError && error.code === "conflict") {
        options.log(`error[conflict]: ${error.message}`);
        return error.message;
      }
      const message = messageOf(error);
      if (message !== reported) options.log(`network "${spec.name}": ${message}`);
      reported = message;
    }
    await sleep(options.retryMs ?? 10_000, options.signal);
  }
  return undefined;
}
