/**
 * The container routes of Machine RPC (`ployz.container.*`): each one acts on this Machine's own Docker only, and
 * re-checks ownership and admission against fresh local evidence before any mutation (docs/bets.md, bet 10).
 * Ensuring is container_ensure.ts, leaving the proxies container_leave.ts, the admission checks
 * container_admission.ts; this module is the table and the routes small enough to read in place.
 *
 * @module
 */

import { DockerError, LABELS } from "../deploy/machine/mod.ts";
import { isIngressProxy } from "../serving/mod.ts";
import { type ContainerResponse, RpcError, type RpcHandlers, type StopContainerRequest } from "../rpc/mod.ts";
import { ensureContainer, startExplained } from "./container_ensure.ts";
import { type ContainerHost, linked, observeContainer } from "./container_host.ts";
import { leaveContainer } from "./container_leave.ts";
import { healthToWire, toWire } from "./observed.ts";
import type { ServingHooks } from "./serving_runtime.ts";
import { projectLock, projectOf, pruneFiles } from "./shipped_files.ts";

export type { ContainerHost, LeavingHost } from "./container_host.ts";

/** The handlers of the container routes. */
export type ContainerHandlers = Pick<
  RpcHandlers,
  | "listContainers"
  | "ensureContainer"
  | "ensureContainerWithFiles"
  | "startContainer"
  | "stopContainer"
  | "leaveContainer"
  | "removeContainer"
  | "waitHealthy"
>;

/** The container route handlers. */
export function containerHandlers(host: ContainerHost): ContainerHandlers {
  const filesLock = projectLock();
  const { engine } = host;
  return {
    async listContainers(req, ctx) {
      const observedAt = new Date().toISOString();
      const found = await engine.listOwned(
        { project: req.project, service: req.service, deployment: req.deployment },
        ctx.signal,
      );
      return { "machine_id": host.record().id, "observed_at": observedAt, containers: found.map(toWire) };
    },
    ensureContainer: (req, ctx) => ensureContainer(host, filesLock, req, undefined, ctx.signal),
    ensureContainerWithFiles: (req, ctx) => ensureContainer(host, filesLock, req, req.files, ctx.signal),
    leaveContainer: (req, ctx) => leaveContainer(host, req, ctx.signal),
    startContainer: (req, ctx) => startContainer(host, req.id, ctx.signal),
    stopContainer: (req, ctx) => stopContainer(host, req, ctx.signal),
    async removeContainer(req, ctx) {
      const project = projectOf((await engine.inspectContainer(req.id, ctx.signal))?.labels);
      const remove = async (): Promise<{ id: string; removed: boolean }> => {
        try {
          await engine.removeContainer(req.id, { signal: ctx.signal });
        } catch (error) {
          if (error instanceof DockerError && error.code === "not_found") {
            return { id: req.id, removed: false };
          }
          throw error;
        }
        // The Project's shipped files go with its last container on this Machine.
        await pruneFiles(host.filesDir, project, engine, ctx.signal);
        return { id: req.id, removed: true };
      };
      return project === undefined ? await remove() : await filesLock(project, remove);
    },
    async waitHealthy(req, ctx) {
      const signal = linked(host, ctx.signal);
      const o = await engine.inspectContainer(req.id, signal);
      if (o !== undefined && !o.owned) {
        throw new RpcError(
          "conflict",
          `Refusing to watch container "${o.name}": Ployz on this Machine does not own it`,
          {
            details: { container: o.name },
          },
        );
      }
      const result = await engine.waitHealthy(o?.id ?? req.id, {
        deadlineMs: req.deadline_ms,
        monitorMs: req.monitor_ms,
        signal,
      });
      return healthToWire(result);
    },
  };
}

/** A requested start: serves again (its leaving mark dropped) and releases an Ingress Proxy a stop held down. */
async function startContainer(
  host: ContainerHost,
  id: string,
  signal: AbortSignal,
): Promise<ContainerResponse> {
  // A requested start serves again: a leaving mark is dropped before the start.
  host.leaving?.marks.delete((await host.engine.inspectContainer(id, signal))?.id ?? id);
  // A requested start releases an Ingress Proxy a requested stop held down (docs/bets.md, bet 10).
  const proxy = await ingressProxy(host, id, signal);
  proxy?.hooks.holds.requestStart(proxy.id);
  await startExplained(host, id, signal);
  return await observeContainer(host, id, signal);
}

/** A requested stop: holds an Ingress Proxy down, and wins over a scan that races it. */
async function stopContainer(
  host: ContainerHost,
  req: StopContainerRequest,
  signal: AbortSignal,
): Promise<ContainerResponse> {
  const proxy = await ingressProxy(host, req.id, signal);
  proxy?.hooks.holds.requestStop(proxy.id);
  const done = proxy?.hooks.holds.beginStop(proxy.id);
  try {
    await host.engine.stopContainer(req.id, { graceSeconds: req.grace_seconds, signal });
  } finally {
    done?.();
  }
  return await observeContainer(host, req.id, signal);
}

/** The Ingress Proxy a request names, when it names one and the Machine serves. */
async function ingressProxy(
  host: ContainerHost,
  ref: string,
  signal: AbortSignal,
): Promise<{ id: string; hooks: ServingHooks } | undefined> {
  const hooks = host.serving();
  if (hooks === undefined) return undefined;
  const o = await host.engine.inspectContainer(ref, signal);
  if (
    o === undefined || !isIngressProxy({
      project: o.labels[LABELS.project] ?? "",
      service: o.labels[LABELS.service] ?? "",
    })
  ) return undefined;
  return { id: o.id, hooks };
}
