/**
 * The container routes of Machine RPC (`ployz.container.*`): each one acts on this Machine's own Docker only, and
 * re-checks ownership and admission against fresh local evidence before any mutation (docs/bets.md, bet 10).
 *
 * @module
 */

import {
  type ContainerSpec,
  DockerError,
  type Engine,
  LABELS,
  placementRefusal,
  validateSpec,
} from "../deploy/machine/mod.ts";
import { DRAIN_BOUND_MS, drainInflight, inflightConnections, isIngressProxy } from "../serving/mod.ts";
import {
  type ContainerResponse,
  type EnsureContainerResponse,
  RpcError,
  type RpcHandlers,
} from "../rpc/mod.ts";
import { type LocalMachine, recordLabels } from "./machine_file.ts";
import { healthToWire, toWire } from "./observed.ts";
import type { ServingHooks } from "./serving_runtime.ts";
import { sleep } from "../util/mod.ts";
import { materializeFiles, projectLock, projectOf, pruneFiles } from "./shipped_files.ts";
import { findPortHolder, hostProcRoot, portConflictMessage, portConflictOf } from "./port_holder.ts";

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

const LIVE = new Set(["running", "restarting", "paused"]);

function requireParticipating(record: LocalMachine, action: string): void {
  if (record.phase === "participating") return;
  throw new RpcError(
    "conflict",
    `Cannot ${action} on Machine "${record.name}": it is not initialized (phase "${record.phase}")`,
    { details: { "machine_id": record.id, phase: record.phase } },
  );
}

function asSpec(document: object): ContainerSpec {
  const spec = document as ContainerSpec;
  try {
    validateSpec(spec);
  } catch (error) {
    if (error instanceof DockerError) throw error;
    // A field of the wrong JSON type reaches validation as a TypeError.
    throw new RpcError(
      "invalid_argument",
      `Invalid container spec "${String(spec.name)}": a field has the wrong type`,
      {
        details: { container: String(spec.name) },
      },
    );
  }
  return spec;
}

/**
 * Refuses a new container this Machine's record does not admit, naming the failed check: an Ingress Proxy needs
 * ingress acceptance, any other container workload acceptance, and the spec's placement must hold on this
 * Machine's own name, id and Labels (docs/bets.md, bet 10: Machine-local admission). Existing containers are
 * never touched by a change to these.
 */
export function admit(record: LocalMachine, spec: ContainerSpec): void {
  const refuse = (check: string, message: string): never => {
    throw new RpcError(
      "conflict",
      `Machine "${record.name}" refuses to create "${spec.name}": ${message}`,
      { details: { check, "machine_id": record.id, container: spec.name } },
    );
  };
  if (isIngressProxy({ project: spec.project, service: spec.service })) {
    if (record.accepts_ingress === false) refuse("accepts_ingress", "it does not accept ingress");
    return;
  }
  if (record.accepts_workloads === false) {
    refuse("accepts_workloads", "it does not accept workloads (drained or set with machine accept)");
  }
  if (spec.placement !== undefined) {
    const why = placementRefusal(spec.placement, {
      id: record.id,
      name: record.name,
      labels: recordLabels(record),
    });
    if (why !== undefined) refuse("placement", why);
  }
}

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

  function linked(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, host.stopping]);
  }

  async function observe(id: string, signal: AbortSignal): Promise<ContainerResponse> {
    const o = await engine.inspectContainer(id, signal);
    if (o === undefined) {
      throw new RpcError("not_found", `Container "${id}" does not exist on Machine "${host.record().name}"`, {
        details: { container: id },
      });
    }
    return { container: toWire(o) };
  }

  /** The Ingress Proxy a request names, when it names one and the Machine serves. */
  async function ingressProxy(
    ref: string,
    signal: AbortSignal,
  ): Promise<{ id: string; hooks: ServingHooks } | undefined> {
    const hooks = host.serving();
    if (hooks === undefined) return undefined;
    const o = await engine.inspectContainer(ref, signal);
    if (
      o === undefined || !isIngressProxy({
        project: o.labels[LABELS.project] ?? "",
        service: o.labels[LABELS.service] ?? "",
      })
    ) return undefined;
    return { id: o.id, hooks };
  }

  async function volumesFor(spec: ContainerSpec, machine: string): Promise<Record<string, string>> {
    if (!(spec.mounts ?? []).some((m) => m.provisionedBytes !== undefined)) return {};
    if (host.volumes === undefined) {
      throw new RpcError("unsupported", `Machine "${machine}" keeps no Provisioned Volumes`);
    }
    return await host.volumes.prepare(spec);
  }

  /**
   * Finds by creation key, or admits and creates; starts when asked. `files` is the content of the files the spec
   * ships, by digest (`ensure_with_files.v1`); a copy this Machine already holds needs none (`ensure.v1` retries).
   */
  async function ensure(
    req: { spec: object; start: boolean },
    files: Readonly<Record<string, string>> | undefined,
    ctx: { signal: AbortSignal },
  ): Promise<EnsureContainerResponse> {
    const record = host.record();
    requireParticipating(record, "create a container");
    const spec = asSpec(req.spec);
    // Both are reads, asked together: the image answer is used only when no container holds the creation key yet.
    const [[prior], local] = await Promise.all([
      engine.listOwned({ creationKey: spec.creationKey }, ctx.signal),
      host.imageFor === undefined
        ? engine.imageExists(spec.image, ctx.signal).then((found) => found ? spec.image : undefined)
        : host.imageFor(spec.image, ctx.signal),
    ]);
    let image: string | undefined = spec.image;
    if (prior === undefined) {
      // Machine-local admission, against this Machine's own record and Docker, before anything is created.
      admit(record, spec);
      image = local;
      if (image === undefined) {
        throw new RpcError(
          "not_found",
          `Image "${spec.image}" is present nowhere on Machine "${record.name}"`,
          {
            details: { image: spec.image, "machine_id": record.id },
          },
        );
      }
    }
    // While the Machine serves, containers resolve through its Internal DNS, searching their own Project.
    const hooks = host.serving();
    // Provisioned Volumes are admitted (and made) against this Machine's Pool; an existing container's are
    // looked up again, never made.
    const volumePaths = await volumesFor(spec, record.name);
    const made = await filesLock(spec.project, async () => {
      if (prior === undefined) await materializeFiles(host.filesDir, spec, files);
      return await engine.createContainer(
        hooks?.localize(spec) ?? spec,
        ctx.signal,
        {
          dns: hooks?.dns(spec.project),
          filesDir: host.filesDir,
          volumePaths,
          ...(image !== undefined && image !== spec.image ? { image } : {}),
          // Listed and found above, a moment ago: no need to ask Docker twice.
          checked: prior === undefined,
        },
      );
    });
    let started = false;
    if (req.start) {
      // A container made just now is not running yet; one found may be.
      const now = made.created ? undefined : await engine.inspectContainer(made.id, ctx.signal);
      if (now?.state !== "running") {
        await startExplained(made.id, ctx.signal, made.created ? { name: made.name } : undefined);
        started = true;
      }
    }
    const { container } = await observe(made.id, ctx.signal);
    return { container, created: made.created, started };
  }

  // A start refused over a taken host port names the Machine, the port and, where this daemon can see it, the holder.
  async function startExplained(id: string, signal: AbortSignal, created?: { name: string }): Promise<void> {
    try {
      await engine.startContainer(id, signal, created);
    } catch (error) {
      const conflict = portConflictOf((error as Error).message ?? "");
      if (conflict === null) throw error;
      const holder = conflict.by === "process"
        ? await findPortHolder(conflict.port, hostProcRoot())
        : undefined;
      const machine = host.record().name;
      throw new RpcError("conflict", portConflictMessage(conflict, machine, holder), {
        details: {
          machine,
          port: conflict.port,
          address: conflict.address,
          ...(holder === undefined ? {} : { holder: holder.command, pid: holder.pid }),
        },
        cause: error,
      });
    }
  }

  return {
    async listContainers(req, ctx) {
      const observedAt = new Date().toISOString();
      const found = await engine.listOwned(
        { project: req.project, service: req.service, deployment: req.deployment },
        ctx.signal,
      );
      return { "machine_id": host.record().id, "observed_at": observedAt, containers: found.map(toWire) };
    },
    ensureContainer(req, ctx) {
      return ensure(req, undefined, ctx);
    },
    ensureContainerWithFiles(req, ctx) {
      return ensure(req, req.files, ctx);
    },
    async leaveContainer(req, ctx) {
      const leaving = host.leaving;
      if (leaving === undefined) {
        throw new RpcError("unsupported", "This Machine cannot take a container out of its proxies", {
          details: { capability: "ployz.container.leave.v1" },
        });
      }
      requireParticipating(host.record(), "take a container out of the proxies");
      const o = await engine.inspectContainer(req.id, ctx.signal);
      if (o === undefined || !o.owned) {
        throw new RpcError(
          "not_found",
          `Cannot take container "${req.id}" out of the proxies: no such container`,
          {
            details: { container: req.id },
          },
        );
      }
      if (!LIVE.has(o.state)) return { id: o.id, live: false, acked: [], missing: [], "waited_ms": 0 };
      const started = Date.now();
      if (!leaving.marks.has(o.id)) leaving.marks.set(o.id, new Date().toISOString());
      await leaving.republish();
      // The caller's patience, not a safety wait: it decides what to do when acks are missing.
      let status = leaving.status(o.id);
      let waited = 0;
      for (;;) {
        status = leaving.status(o.id);
        waited = Date.now() - started;
        if (status.missing.length === 0 || waited >= req.wait_ms || ctx.signal.aborted) break;
        await sleep(Math.min(100, req.wait_ms - waited), linked(ctx.signal));
      }
      // Requests a proxy sent before it dropped the container may still run: drained within what is left of the
      // caller's patience, at most DRAIN_BOUND_MS; patience too, the stop goes ahead when it ends.
      const drain = await drainInflight(() => readInflight(o.pid), {
        boundMs: Math.min(DRAIN_BOUND_MS, Math.max(0, req.wait_ms - waited)),
        signal: ctx.signal,
      });
      return {
        id: o.id,
        live: true,
        ...status,
        "waited_ms": waited,
        "drained_ms": drain.drainedMs,
        "in_flight": drain.inFlight,
      };
    },
    async startContainer(req, ctx) {
      // A requested start serves again: a leaving mark is dropped before the start.
      host.leaving?.marks.delete((await engine.inspectContainer(req.id, ctx.signal))?.id ?? req.id);
      // A requested start releases an Ingress Proxy a requested stop held down (docs/bets.md, bet 10).
      const proxy = await ingressProxy(req.id, ctx.signal);
      proxy?.hooks.holds.requestStart(proxy.id);
      await startExplained(req.id, ctx.signal);
      return await observe(req.id, ctx.signal);
    },
    async stopContainer(req, ctx) {
      // A requested stop holds an Ingress Proxy down, and wins over a scan that races it.
      const proxy = await ingressProxy(req.id, ctx.signal);
      proxy?.hooks.holds.requestStop(proxy.id);
      const done = proxy?.hooks.holds.beginStop(proxy.id);
      try {
        await engine.stopContainer(req.id, { graceSeconds: req.grace_seconds, signal: ctx.signal });
      } finally {
        done?.();
      }
      return await observe(req.id, ctx.signal);
    },
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
      const signal = linked(ctx.signal);
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

// Connections in flight to the container, from its own TCP tables; undefined when they cannot be read (it exited).
async function readInflight(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const root = `${hostProcRoot()}/${pid}/net`;
    const tables = [await Deno.readTextFile(`${root}/tcp`)];
    try {
      tables.push(await Deno.readTextFile(`${root}/tcp6`));
    } catch { /* no IPv6 */ }
    return inflightConnections(tables);
  } catch {
    return undefined;
  }
}
