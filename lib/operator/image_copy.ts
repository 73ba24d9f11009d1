// Image copy between Machines: the target Machine fetches the image from the source over the mesh
// (`ployz.image.pull_from_peer.v1`) and loads it; the operator only asks, through its Entry Machine.
import {
  CAPABILITIES,
  type FanOutTarget,
  type MachineClient,
  type PullFromPeerResponse,
} from "../rpc/mod.ts";
import { OperatorError } from "./errors.ts";

/** Finds the one Machine `wanted` names (id, name or id prefix of at least 4) among `targets`. */
export function pickMachine(
  targets: readonly FanOutTarget<MachineClient>[],
  wanted: string,
  flag: string,
): FanOutTarget<MachineClient> {
  const byId = targets.filter((t) => t.id === wanted);
  const found = byId.length > 0
    ? byId
    : targets.filter((t) => t.name === wanted || (wanted.length >= 4 && t.id.startsWith(wanted)));
  if (found.length === 0) {
    throw new OperatorError(
      "not_found",
      `No Machine "${wanted}" for "${flag}" among the Machines the Entry Machine holds`,
      { machine: wanted },
    );
  }
  if (found.length > 1) {
    throw new OperatorError(
      "ambiguous",
      `Machine "${wanted}" for "${flag}" matches ${found.length} Machines (${
        found.map((t) => t.id).join(", ")
      }): give an id`,
      { machine: wanted },
    );
  }
  return found[0];
}

/** What {@link copyImage} did. */
export interface ImageCopy {
  /** The Machine that had the image. */
  source: { id: string; name: string };
  /** The Machine that fetched it. */
  target: { id: string; name: string };
  /** The target's answer: whether it transferred, bytes and time. */
  answer: PullFromPeerResponse;
}

/** Asks the `to` Machine to fetch `ref` from the `from` Machine, bounded by `timeoutMs`. */
export async function copyImage(
  targets: readonly FanOutTarget<MachineClient>[],
  request: { ref: string; from: string; to: string; timeoutMs: number },
): Promise<ImageCopy> {
  const source = pickMachine(targets, request.from, "--from");
  const target = pickMachine(targets, request.to, "--to");
  if (source.id === target.id) {
    throw new OperatorError("invalid_argument", `"--from" and "--to" name the same Machine "${source.name}"`);
  }
  if (!("client" in target)) {
    throw new OperatorError("unavailable", `Cannot reach Machine "${target.name}": ${target.omitted}`);
  }
  await target.client.requireCapability(CAPABILITIES.pullImageFromPeer);
  const answer = await target.client.pullImageFromPeer(
    { ref: request.ref, "from_machine_id": source.id, "timeout_ms": request.timeoutMs },
    // The Machine bounds the transfer; this bounds the wait for its answer a little beyond that.
    { signal: AbortSignal.timeout(request.timeoutMs + 30_000) },
  );
  return {
    source: { id: source.id, name: source.name },
    target: { id: target.id, name: target.name },
    answer,
  };
}
