/**
 * What the container routes act through (the daemon passes its real parts) and the reads every container route
 * shares: a container as the wire carries it, and a signal that also ends when the daemon stops.
 *
 * @module
 */

import type { ContainerSpec, Engine } from "../deploy/machine/mod.ts";
import { type ContainerResponse, RpcError } from "../rpc/mod.ts";
import type { LocalMachine } from "./machine_file.ts";
import { toWire } from "./observed.ts";
import type { ServingHooks } from "./serving_runtime.ts";

/** What the container handlers need from the running daemon. */
export interface ContainerHost {
  /** The local record as it is now. */
  record(): LocalMachine;
  /** This Machine's Docker. */
  readonly engine: Engine;
  /** Aborts when the daemon stops, so long calls (follows, health gates) end. */
  readonly stopping: AbortSignal;
  /** The serving runtime's hooks while the Machine serves (DNS for new containers, Ingress Proxy holds). */
  serving(): ServingHooks | undefined;
  /** Where the copies of files shipped with containers live. */
  readonly filesDir?: string;
  /** What Docker calls the image a reference names here (an id for a pinned image copied from a peer). */
  imageFor?(ref: string, signal: AbortSignal): Promise<string | undefined>;
  /** Admits the Provisioned Volumes a spec mounts and gives their host paths (absent: none are admitted). */
  readonly volumes?: { prepare(spec: ContainerSpec): Promise<Record<string, string>> };
  /** Leaving every proxy before a client stops a container; absent, the leave route is refused. */
  readonly leaving?: LeavingHost;
}

/** What the leave route needs: the publisher's leaving marks and this Machine's view of the leave acks. */
export interface LeavingHost {
  /** Container id → when it was marked; the publisher writes `stopping` on a live one's row. */
  readonly marks: Map<string, string>;
  /** Publishes every own container again, so a new mark reaches the row now. */
  republish(): Promise<void>;
  /** Machines not Down that acked, and those that did not yet. */
  status(id: string): { acked: string[]; missing: string[] };
}

/** The caller's signal, ended too when the daemon stops. */
export function linked(host: ContainerHost, signal: AbortSignal): AbortSignal {
  return AbortSignal.any([signal, host.stopping]);
}

/** The container as Docker has it now; `not_found` naming this Machine when it is gone. */
export async function observeContainer(
  host: ContainerHost,
  id: string,
  signal: AbortSignal,
): Promise<ContainerResponse> {
  const o = await host.engine.inspectContainer(id, signal);
  if (o === undefined) {
    throw new RpcError("not_found", `Container "${id}" does not exist on Machine "${host.record().name}"`, {
      details: { container: id },
    });
  }
  return { container: toWire(o) };
}
